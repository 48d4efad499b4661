use super::*;

fn tempdir(tag: &str) -> crate::scratch::Scratch {
    crate::scratch::Scratch::new(&format!("pc-index-{tag}"))
}

#[test]
fn index_lists_iterations_with_relative_links() {
    let dir = tempdir("index");
    let rows = vec![
        IndexRow {
            iteration: 1,
            seed: 11,
            status: "pass".into(),
            summary: "PASS: all 100 numbers".into(),
            seconds: 12.5,
            run_dir: None,
            reproduce: "pulsar-chaos run s.yaml --seed 11".into(),
        },
        IndexRow {
            iteration: 2,
            seed: 12,
            status: "violation".into(),
            summary: "VIOLATION: 3 <missing>".into(),
            seconds: 14.0,
            run_dir: Some("s-20260101-000000-ab12/report.html".into()),
            reproduce: "pulsar-chaos run s.yaml --seed 12".into(),
        },
        IndexRow {
            iteration: 3,
            seed: 13,
            status: "inconclusive".into(),
            summary: "INCONCLUSIVE".into(),
            seconds: 1.0,
            run_dir: Some("https://example.com/x".into()),
            reproduce: "pulsar-chaos run s.yaml --seed 13".into(),
        },
    ];
    write_index(&dir, "soak of s", &rows).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>soak of s</title>"));
    assert!(
        html.contains("3 iteration(s): 1 passed, 1 violation(s), 1 inconclusive; 27.5 s in all."),
        "{html}"
    );
    assert!(html.contains("<h1 class=\"title\">soak of s</h1>"));
    assert!(
        html.contains("<section class=\"verdict violation\"><div class=\"status\">VIOLATION</div>")
    );
    assert!(html.contains("Not passed: <a href=\"#iteration-2\">#2</a> (seed 12), <a href=\"#iteration-3\">#3</a> (seed 13)</p>"));
    assert!(html.contains("<a href=\"s-20260101-000000-ab12/report.html\">report</a>"));
    assert!(html.contains("<span class=\"note\">pruned</span>"));
    assert!(html.contains("VIOLATION: 3 &lt;missing&gt;"));
    assert!(
        !html.contains("href=\"https:"),
        "absolute links are shown, not linked"
    );
    assert_eq!(html.matches("<tr id=\"iteration-").count(), 3);
    assert_eq!(html.matches("href=\"#iteration-").count(), 3 + 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Only relative links: an address a browser would read as another host, once it has dropped
/// whitespace and read backslashes as slashes, is shown as text and not linked.
#[test]
fn index_links_no_address_a_browser_reads_as_another_host() {
    for d in [
        "s-1/report.html",
        "./s-1/report.html",
        "/tmp/soak/s-1/report.html",
        "a\\b",
    ] {
        assert!(is_relative_link(d), "{d:?}");
    }
    for d in [
        "https://example.com/x",
        "//example.com/x",
        "\\\\example.com/x",
        "/\\example.com/x",
        "\t//example.com/x",
        " //example.com/x",
        "/\n/example.com/x",
        "java\nscript:alert(1)",
    ] {
        assert!(!is_relative_link(d), "{d:?}");
    }
    let dir = tempdir("links");
    let row = |iteration: u64, run_dir: &str| IndexRow {
        iteration,
        seed: iteration,
        status: "pass".into(),
        summary: "PASS".into(),
        seconds: 1.0,
        run_dir: Some(run_dir.into()),
        reproduce: format!("pulsar-chaos run s.yaml --seed {iteration}"),
    };
    let rows = [row(1, "\\\\example.com\\x"), row(2, "\t//example.com/x")];
    write_index(&dir, "soak of s", &rows).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(!html.contains(">report</a>"), "{html}");
    assert_eq!(html.matches("<td><code>").count(), 2, "{html}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 17: a stuck iteration has its own colour and count, and makes the soak stuck unless
/// another had a violation.
#[test]
fn a_stuck_iteration_makes_the_soak_stuck() {
    let dir = tempdir("stuck");
    let row = |iteration: u64, status: &str| IndexRow {
        iteration,
        seed: iteration,
        status: status.into(),
        summary: status.to_uppercase(),
        seconds: 1.0,
        run_dir: None,
        reproduce: format!("pulsar-chaos run s.yaml --seed {iteration}"),
    };
    let rows = [row(1, "pass"), row(2, "stuck"), row(3, "inconclusive")];
    write_index(&dir, "soak of s", &rows).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        html.contains("<section class=\"verdict stuck\"><div class=\"status\">STUCK</div><p class=\"summary\">3 iteration(s): 1 passed, 0 violation(s), 1 inconclusive, 1 stuck; 3.0 s in all.</p>"),
        "{html}"
    );
    assert!(
        html.contains("<a class=\"stuck\" href=\"#iteration-2\""),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"pill stuck\">stuck</span>"),
        "{html}"
    );
    assert!(html.contains(
        "<div class=\"card stuck\"><div class=\"n\">1</div><div class=\"l\">stuck</div></div>"
    ));
    assert!(html.contains(".strip .stuck{"));
    let rows = [row(1, "stuck"), row(2, "violation")];
    write_index(&dir, "soak of s", &rows).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        html.contains("<section class=\"verdict violation\">"),
        "{html}"
    );
}
