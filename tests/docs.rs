//! The documentation stays true (issue 33), without Docker:
//!
//! - every figure the README quotes is a row of BENCHMARKS.md's current table;
//! - docs/scenarios.md names every key, fault kind, target and value the scenario types
//!   accept, as the code says it (serde's own list of the fields and variants it expected,
//!   and `Target::FORMS`), not as a copy kept here;
//! - every `docs/...` link of the README points to a file that exists.

use std::path::Path;

use pulsar_chaos_core::scenario::{parse_file, Target};

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The lines between `<!-- NAME -->` and `<!-- /NAME -->` (each marker alone on its line).
fn block<'a>(text: &'a str, name: &str, file: &str) -> Vec<&'a str> {
    let open = format!("<!-- {name} -->");
    let close = format!("<!-- /{name} -->");
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == open)
        .unwrap_or_else(|| panic!("{file} has no {open} line"));
    let end = lines[start..]
        .iter()
        .position(|l| l.trim() == close)
        .unwrap_or_else(|| panic!("{file} has no {close} line after {open}"));
    lines[start + 1..start + end].to_vec()
}

// ---- figures ----

/// Whether a line quotes a measured figure: a ratio (`1.23x`, `0.9×`) or a throughput
/// (`msg/s`, `numbers/s`, `M/s`).
fn quotes_a_figure(line: &str) -> bool {
    let throughput = ["msg/s", "numbers/s", " M/s"];
    if throughput.iter().any(|t| line.contains(t)) {
        return true;
    }
    let chars: Vec<char> = line.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if (*c != 'x' && *c != '×') || i == 0 || !chars[i - 1].is_ascii_digit() {
            continue;
        }
        // The number before it: digits, at most one '.', not part of a word (`0x1f`, `2xx`).
        let mut j = i;
        while j > 0 && (chars[j - 1].is_ascii_digit() || chars[j - 1] == '.') {
            j -= 1;
        }
        let word_before = j > 0 && (chars[j - 1].is_alphanumeric() || chars[j - 1] == '_');
        let word_after = chars
            .get(i + 1)
            .is_some_and(|n| n.is_alphanumeric() || *n == '_');
        if !word_before && !word_after {
            return true;
        }
    }
    false
}

#[test]
fn figure_detection() {
    for yes in [
        "ours is **1.23x** as fast",
        "0.90× at 10",
        "(2x)",
        "11,222 msg/s",
        "1,020 M numbers/s",
    ] {
        assert!(quotes_a_figure(yes), "{yes}");
    }
    for no in [
        "0x1f",
        "a 2xx answer",
        "max RSS",
        "xml",
        "--times 5",
        "box 4",
        "sync",
    ] {
        assert!(!quotes_a_figure(no), "{no}");
    }
}

/// The README quotes figures only inside its `figures` block, and each line of that block is a
/// line of BENCHMARKS.md's `current-figures` table: a figure updated there (or removed) fails
/// here until the README says the same.
#[test]
fn every_figure_the_readme_quotes_is_in_the_current_benchmarks_table() {
    let readme = read("README.md");
    let benchmarks = read("BENCHMARKS.md");
    let current = block(&benchmarks, "current-figures", "BENCHMARKS.md");
    assert!(
        current.iter().filter(|l| l.starts_with('|')).count() >= 3,
        "BENCHMARKS.md's current table is empty"
    );
    let quoted = block(&readme, "figures", "README.md");
    let rows: Vec<&&str> = quoted.iter().filter(|l| !l.trim().is_empty()).collect();
    assert!(rows.len() >= 3, "README.md's figures block is empty");
    for line in rows {
        assert!(
            current.iter().any(|c| c.trim_end() == line.trim_end()),
            "README.md quotes a figure line that is not a line of BENCHMARKS.md's current \
             table (<!-- current-figures -->); copy the row from there:\n{line}"
        );
    }
    // Outside the block, no figure at all.
    let mut inside = false;
    for (n, line) in readme.lines().enumerate() {
        match line.trim() {
            "<!-- figures -->" => inside = true,
            "<!-- /figures -->" => inside = false,
            _ if !inside && quotes_a_figure(line) => panic!(
                "README.md:{}: a figure outside the figures block (quote it from BENCHMARKS.md's \
                 current table inside <!-- figures -->):\n{line}",
                n + 1
            ),
            _ => {}
        }
    }
}

// ---- the scenario reference ----

/// A scenario that parses, with `extra` spliced in: the probes below add one unknown key or
/// value to it, and serde's refusal lists what it expected there.
fn scenario_with(top: &str, cluster: &str, workload: &str, faults: &str) -> String {
    format!(
        "name: probe\n{top}cluster:\n  topology: standalone\n{cluster}workload:\n  topic: persistent://public/default/t\n  messages: 10\n{workload}faults:\n{faults}"
    )
}

/// Every name serde says it expected: the backquoted words of its refusal after the first (the
/// unknown one the probe wrote).
fn expected_names(yaml: &str) -> Vec<String> {
    let err = match parse_file("probe.yaml", yaml) {
        Ok(_) => panic!("the probe parsed; it must be refused:\n{yaml}"),
        Err(e) => e.to_string(),
    };
    let quoted: Vec<String> = err
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    assert!(
        quoted.first().is_some_and(|q| q.starts_with("zz_probe")),
        "serde's refusal does not name the probe first: {err}"
    );
    assert!(
        quoted.len() >= 2,
        "serde's refusal lists nothing it expected: {err}"
    );
    quoted[1..].to_vec()
}

const PROBE: &str = "zz_probe";

fn fault(kind: &str, extra: &str) -> String {
    format!("  - kind: {kind}\n{extra}")
}

/// Every key, kind and value the scenario file types accept, with where it was refused, as
/// serde lists them.
fn accepted_names() -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = Vec::new();
    let mut add = |place: &str, yaml: String| {
        for n in expected_names(&yaml) {
            names.push((place.to_string(), n));
        }
    };
    let kinds = expected_names(&scenario_with("", "", "", &fault(PROBE, "")));
    let none = "  []\n";
    add(
        "top-level key",
        scenario_with(&format!("{PROBE}: 1\n"), "", "", none),
    );
    add(
        "cluster key",
        scenario_with("", &format!("  {PROBE}: 1\n"), "", none),
    );
    add(
        "workload key",
        scenario_with("", "", &format!("  {PROBE}: 1\n"), none),
    );
    for (key, place) in [
        ("resend", "resend value"),
        ("kind", "workload kind"),
        ("subscription_type", "subscription_type value"),
        ("function", "function value"),
        ("client", "client value"),
    ] {
        add(
            place,
            scenario_with("", "", &format!("  {key}: {PROBE}\n"), none),
        );
    }
    add(
        "topology value",
        scenario_with("", "", "", none).replace("topology: standalone", "topology: zz_probe"),
    );
    add(
        "sabotage key",
        scenario_with(&format!("sabotage: {{ {PROBE}: 1 }}\n"), "", "", none),
    );
    add(
        "remedies value",
        scenario_with(&format!("remedies: [{PROBE}]\n"), "", "", none),
    );
    add(
        "expect value",
        scenario_with(
            &format!("expect: {{ \"4.2.4\": [{PROBE}] }}\n"),
            "",
            "",
            none,
        ),
    );
    for k in &kinds {
        add(
            &format!("key of {k}"),
            scenario_with("", "", "", &fault(k, &format!("    {PROBE}: 1\n"))),
        );
    }
    let schedule = |s: &str| {
        scenario_with(
            "",
            "",
            "",
            &fault("topic_unload", &format!("    schedule: {s}\n")),
        )
    };
    add("schedule key", schedule(&format!("{{ {PROBE}: 1 }}")));
    add(
        "random key",
        schedule(&format!("{{ random: {{ {PROBE}: 1 }} }}")),
    );
    add(
        "while value",
        schedule(&format!("{{ at: [1s], while: {PROBE} }}")),
    );
    add(
        "mode value",
        scenario_with(
            "",
            "",
            "",
            &fault("broker_restart", &format!("    mode: {PROBE}\n")),
        ),
    );
    add(
        "reply value",
        scenario_with(
            "",
            "",
            "",
            &fault("reply_loss", &format!("    reply: {PROBE}\n")),
        ),
    );
    names.extend(kinds.iter().map(|k| ("fault kind".to_string(), k.clone())));
    names.extend(
        Target::FORMS
            .iter()
            .map(|t| ("target value".to_string(), t.to_string())),
    );
    names
}

/// Whether the page names `word` as a key or value: in a code span (`` `word` ``), or as the
/// key of one (`` `word: ...` ``).
fn names(page: &str, word: &str) -> bool {
    page.contains(&format!("`{word}`")) || page.contains(&format!("`{word}:"))
}

#[test]
fn the_scenario_reference_names_every_key_kind_target_and_value() {
    let page = read("docs/scenarios.md");
    let accepted = accepted_names();
    // The probes reached every level: the lists are the code's, so only a few anchors here.
    for (place, word) in [
        ("top-level key", "workload"),
        ("workload key", "txn_size"),
        ("fault kind", "reply_loss"),
        ("key of packet_loss", "percent"),
        ("target value", "owner-of-topic"),
    ] {
        assert!(
            accepted.iter().any(|(p, w)| p == place && w == word),
            "the probes did not find {place} {word}: {accepted:?}"
        );
    }
    let missing: Vec<String> = accepted
        .iter()
        .filter(|(_, w)| !names(&page, w))
        .map(|(p, w)| format!("{p} `{w}`"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/scenarios.md does not name (as `word` or `word: ...`): {}",
        missing.join(", ")
    );
}

// ---- links ----

#[test]
fn every_docs_link_of_the_readme_points_to_a_file() {
    let readme = read("README.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut links = 0;
    for part in readme.split("](").skip(1) {
        let target = part.split(')').next().unwrap_or_default();
        let path = target.split('#').next().unwrap_or_default();
        if !path.starts_with("docs/") {
            continue;
        }
        links += 1;
        assert!(
            root.join(path).is_file(),
            "README.md links to {target}, which does not exist"
        );
    }
    assert!(links >= 5, "README.md links to only {links} docs/ files");
}
