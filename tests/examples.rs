//! The nightly recipes of `examples/ci/` stay runnable (issue 35), without Docker: the GitHub
//! Actions workflow and the systemd units are parsed, and every `pulsar-chaos` command they
//! contain runs in its `--dry-run` form, with the variables they set, through the binary built
//! for this test. A command the binary refuses fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml_ng::Value;

const BIN: &str = env!("CARGO_BIN_EXE_pulsar-chaos");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    let full = root().join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// A directory under target/tmp standing in for `${{ github.workspace }}`.
fn workspace() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("examples-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A shell script's logical lines (continuations joined) that run pulsar-chaos.
fn pulsar_chaos_lines(script: &str) -> Vec<String> {
    script
        .replace("\\\n", " ")
        .lines()
        .filter(|l| l.split_whitespace().any(is_binary))
        .map(|l| l.trim().to_string())
        .collect()
}

/// A word naming the binary: `pulsar-chaos`, `./target/release/pulsar-chaos`, ...
fn is_binary(word: &str) -> bool {
    let w = word.trim_matches(|c| c == '"' || c == '\'');
    w == "pulsar-chaos" || w.ends_with("/pulsar-chaos")
}

/// The line with the binary as `"$PULSAR_CHAOS_BIN"` and `--dry-run` added; an error for a
/// command that has no dry-run form.
fn dry_run_form(line: &str) -> Result<String, String> {
    let words: Vec<&str> = line.split(' ').collect();
    let at = words
        .iter()
        .position(|w| is_binary(w))
        .ok_or_else(|| format!("no pulsar-chaos in {line}"))?;
    let sub = words.get(at + 1).copied().unwrap_or_default();
    if !matches!(sub, "soak" | "run") {
        return Err(format!(
            "`pulsar-chaos {sub}` has no --dry-run form (only soak and run have): {line}"
        ));
    }
    let mut out: Vec<&str> = words.clone();
    out[at] = "\"$PULSAR_CHAOS_BIN\"";
    Ok(format!("{} --dry-run", out.join(" ")))
}

/// Run one recipe line in its dry-run form with `env`, from the repository's root: its output,
/// or why it failed.
fn dry_run(line: &str, env: &BTreeMap<String, String>) -> Result<String, String> {
    let form = dry_run_form(line)?;
    let o = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &form])
        .current_dir(root())
        .envs(env)
        .env("PULSAR_CHAOS_BIN", BIN)
        .output()
        .map_err(|e| format!("bash: {e}"))?;
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(0) {
        return Err(format!(
            "`{form}` exited {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            o.status.code()
        ));
    }
    if !stdout.contains("dry run of") {
        return Err(format!("`{form}` printed no plan:\n{stdout}"));
    }
    Ok(stdout)
}

// ---- GitHub Actions ----

/// `${{ ... }}` filled from the expressions a nightly run would see; any other is an error.
fn expand(s: &str, env: &BTreeMap<String, String>, ws: &Path) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${{") {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find("}}")
            .ok_or_else(|| format!("unclosed expression in {s}"))?;
        let expr = rest[i + 3..i + end].trim();
        let value = match expr {
            "github.workspace" => ws.display().to_string(),
            "github.run_id" => "1".into(),
            e if e.starts_with("env.") => env
                .get(&e[4..])
                .cloned()
                .ok_or_else(|| format!("{e} is not set"))?,
            e => return Err(format!("the test does not know the expression {e}")),
        };
        out.push_str(&value);
        rest = &rest[i + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The `env:` of a workflow, job or step added to `env`.
fn add_env(v: &Value, env: &mut BTreeMap<String, String>, ws: &Path) -> Result<(), String> {
    if let Some(m) = v.get("env").and_then(Value::as_mapping) {
        for (k, val) in m {
            let k = k.as_str().ok_or("an env key that is not a string")?;
            let val = match val {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => return Err(format!("env {k}: {other:?}")),
            };
            let expanded = expand(&val, env, ws)?;
            env.insert(k.to_string(), expanded);
        }
    }
    Ok(())
}

/// Every pulsar-chaos command of a workflow, each run in its dry-run form: the outputs, or
/// the first failure.
fn check_workflow(text: &str) -> Result<Vec<String>, String> {
    let wf: Value = serde_yaml_ng::from_str(text).map_err(|e| format!("YAML: {e}"))?;
    let ws = workspace();
    let mut top = BTreeMap::new();
    add_env(&wf, &mut top, &ws)?;
    let jobs = wf
        .get("jobs")
        .and_then(Value::as_mapping)
        .ok_or("no jobs")?;
    let mut outputs = Vec::new();
    for (name, job) in jobs {
        let mut job_env = top.clone();
        add_env(job, &mut job_env, &ws)?;
        let steps = job
            .get("steps")
            .and_then(Value::as_sequence)
            .ok_or_else(|| format!("job {name:?} has no steps"))?;
        for step in steps {
            let Some(script) = step.get("run").and_then(Value::as_str) else {
                continue;
            };
            let mut env = job_env.clone();
            add_env(step, &mut env, &ws)?;
            let script = expand(script, &env, &ws)?;
            for line in pulsar_chaos_lines(&script) {
                outputs.push(dry_run(&line, &env)?);
            }
        }
    }
    Ok(outputs)
}

fn steps(wf: &Value) -> Vec<&Value> {
    wf["jobs"]
        .as_mapping()
        .unwrap()
        .values()
        .flat_map(|j| j["steps"].as_sequence().unwrap())
        .collect()
}

fn uses(step: &Value) -> &str {
    step.get("uses").and_then(Value::as_str).unwrap_or_default()
}

#[test]
fn the_workflow_is_nightly_prepares_keeps_the_store_uploads_and_fails_on_a_regression() {
    let text = read("examples/ci/nightly.yml");
    let wf: Value = serde_yaml_ng::from_str(&text).unwrap();
    let cron = wf["on"]["schedule"][0]["cron"]
        .as_str()
        .expect("a schedule");
    assert_eq!(cron.split_whitespace().count(), 5, "{cron}");
    let steps = steps(&wf);
    let runs: Vec<&str> = steps
        .iter()
        .filter_map(|s| s.get("run").and_then(Value::as_str))
        .collect();
    assert!(
        runs.iter().any(|r| r.contains("scripts/prepare")),
        "{runs:?}"
    );
    let soak: Vec<String> = runs
        .iter()
        .flat_map(|r| pulsar_chaos_lines(r))
        .filter(|l| l.contains(" soak "))
        .collect();
    assert_eq!(soak.len(), 1, "{runs:?}");
    assert!(soak[0].contains("--fail-on-regression"), "{}", soak[0]);
    assert!(soak[0].contains("--junit"), "{}", soak[0]);
    // The store: named by PULSAR_CHAOS_STORE, under the cached path, restored before the soak
    // and saved after it whatever its outcome.
    let store = wf["env"]["PULSAR_CHAOS_STORE"].as_str().expect("the store");
    let position = |f: &dyn Fn(&Value) -> bool| steps.iter().position(|s| f(s)).unwrap();
    let restore = position(&|s| uses(s).starts_with("actions/cache/restore@"));
    let save = position(&|s| uses(s).starts_with("actions/cache/save@"));
    let soak_step = position(&|s| {
        s.get("run")
            .and_then(Value::as_str)
            .is_some_and(|r| r.contains(" soak "))
    });
    assert!(restore < soak_step && soak_step < save);
    let cached = steps[save]["with"]["path"].as_str().unwrap();
    assert_eq!(cached, steps[restore]["with"]["path"].as_str().unwrap());
    assert!(
        store.contains(&format!("/{cached}/")),
        "{store} is not under {cached}"
    );
    assert_eq!(steps[save]["if"].as_str(), Some("always()"));
    // The reports: the soak's --out, uploaded whatever the outcome.
    let upload = position(&|s| uses(s).starts_with("actions/upload-artifact@"));
    assert!(upload > soak_step);
    assert_eq!(steps[upload]["if"].as_str(), Some("always()"));
    assert_eq!(
        steps[upload]["with"]["path"].as_str(),
        Some("${{ env.OUT }}")
    );
    assert!(soak[0].contains("--out \"$OUT\""), "{}", soak[0]);
}

#[test]
fn every_pulsar_chaos_command_of_the_workflow_passes_its_dry_run() {
    let outputs =
        check_workflow(&read("examples/ci/nightly.yml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outputs.len(), 1);
    let o = &outputs[0];
    assert!(
        o.starts_with("dry run of soak mixed for 4h or 120 iteration(s)"),
        "{o}"
    );
    assert!(o.contains("/store/results.db"), "{o}");
    assert!(o.contains("--fail-on-regression: exit 9"), "{o}");
}

/// The check is not a rubber stamp: an option the binary does not know, a scenario that is not
/// there, a command without a dry-run form, an expression the test cannot fill: each fails.
#[test]
fn a_broken_command_in_the_workflow_fails_the_check() {
    let good = read("examples/ci/nightly.yml");
    let broken = [
        (
            "--fail-on-regression",
            "--fail-on-regresion",
            "exited Some(2)",
        ),
        (
            "scenarios/mixed.yaml",
            "scenarios/no-such.yaml",
            "exited Some(2)",
        ),
        (
            "--regression-nights 3",
            "--regression-nights 0",
            "exited Some(2)",
        ),
        (
            "pulsar-chaos soak",
            "pulsar-chaos trends",
            "no --dry-run form",
        ),
        (
            "${{ github.workspace }}",
            "${{ secrets.STORE }}",
            "secrets.STORE",
        ),
    ];
    for (from, to, why) in broken {
        assert!(good.contains(from), "{from}");
        let text = good.replace(from, to);
        let e = check_workflow(&text).expect_err(to);
        assert!(e.contains(why), "{to}: {e}");
    }
}

// ---- systemd ----

/// A unit file: section -> key -> values (a key may repeat, as Environment= does).
type Unit = BTreeMap<String, BTreeMap<String, Vec<String>>>;

fn parse_unit(text: &str) -> Unit {
    let mut unit = Unit::new();
    let mut section = String::new();
    for (n, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if let Some(s) = l.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = s.to_string();
            unit.entry(section.clone()).or_default();
            continue;
        }
        assert!(
            !section.is_empty(),
            "line {}: a key before any section",
            n + 1
        );
        let (k, v) = l
            .split_once('=')
            .unwrap_or_else(|| panic!("line {}: not key=value: {l}", n + 1));
        unit.get_mut(&section)
            .unwrap()
            .entry(k.trim().to_string())
            .or_default()
            .push(v.trim().to_string());
    }
    unit
}

fn one<'a>(unit: &'a Unit, section: &str, key: &str) -> &'a str {
    let v = unit
        .get(section)
        .and_then(|s| s.get(key))
        .unwrap_or_else(|| panic!("no {key}= in [{section}]"));
    assert_eq!(v.len(), 1, "{key}= given {} times", v.len());
    &v[0]
}

/// `Environment=` assignments, one or more per line, possibly quoted.
fn environment(unit: &Unit) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for line in unit["Service"].get("Environment").into_iter().flatten() {
        for a in line.split_whitespace() {
            let a = a.trim_matches('"');
            let (k, v) = a.split_once('=').unwrap_or_else(|| panic!("{line}"));
            env.insert(k.to_string(), v.to_string());
        }
    }
    env
}

/// The shell line of `ExecStart=`: the script of `/bin/sh -c '...'` or the command itself,
/// with `%%` as `%` (a lone `%` specifier is not filled here: it fails).
fn exec_line(exec: &str) -> String {
    let exec = exec.trim_start_matches(['-', '+', '@', '!']);
    let line = match exec
        .strip_prefix("/bin/sh -c '")
        .or_else(|| exec.strip_prefix("/bin/bash -c '"))
    {
        Some(s) => s
            .strip_suffix('\'')
            .expect("the script's closing quote")
            .to_string(),
        None => exec.to_string(),
    };
    let without = line.replace("%%", "");
    assert!(
        !without.contains('%'),
        "a systemd specifier the test does not fill: {line}"
    );
    line.replace("%%", "%")
        .trim_start_matches("exec ")
        .to_string()
}

#[test]
fn the_systemd_units_are_well_formed_and_their_command_passes_its_dry_run() {
    let timer = parse_unit(&read("examples/ci/pulsar-chaos-nightly.timer"));
    assert_eq!(one(&timer, "Timer", "Unit"), "pulsar-chaos-nightly.service");
    assert!(one(&timer, "Timer", "OnCalendar").contains("01:00"));
    assert_eq!(one(&timer, "Timer", "Persistent"), "true");
    assert_eq!(one(&timer, "Install", "WantedBy"), "timers.target");
    let service = parse_unit(&read("examples/ci/pulsar-chaos-nightly.service"));
    assert_eq!(one(&service, "Service", "Type"), "oneshot");
    let env = environment(&service);
    let state = one(&service, "Service", "StateDirectory");
    assert!(
        env["PULSAR_CHAOS_STORE"].starts_with(&format!("/var/lib/{state}/")),
        "{env:?}"
    );
    let line = exec_line(one(&service, "Service", "ExecStart"));
    assert!(line.contains("--fail-on-regression"), "{line}");
    let lines = pulsar_chaos_lines(&line);
    assert_eq!(lines.len(), 1, "{line}");
    let o = dry_run(&lines[0], &env).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        o.starts_with("dry run of soak mixed for 6h or 200 iteration(s)"),
        "{o}"
    );
    assert!(
        o.contains("results store: /var/lib/pulsar-chaos/results.db"),
        "{o}"
    );
    // And a broken one fails.
    let broken = line.replace("--keep-passing 3", "--keep-passing three");
    assert!(dry_run(&pulsar_chaos_lines(&broken)[0], &env).is_err());
}

#[test]
fn the_nightly_page_describes_both_recipes() {
    let page = read("docs/nightly.md");
    for f in [
        "examples/ci/nightly.yml",
        "examples/ci/pulsar-chaos-nightly.service",
        "--fail-on-regression",
        "--regression-nights",
        "--dry-run",
        "tests/examples.rs",
    ] {
        assert!(page.contains(f), "docs/nightly.md does not name {f}");
    }
    assert!(read("README.md").contains("docs/nightly.md"));
}
