//! The shell every page shares (`report.html`, a soak's `index.html`, `matrix.html`): the
//! document head with the inline style sheet, the number cards, and the class that colours
//! a verdict status. The style sheet refers to nothing outside the file.

use std::fmt::Write as _;

use super::fmt::esc;

/// The style sheet of every page.
const CSS: &str = r#"
:root{--pass:#137333;--violation:#c5221f;--inconclusive:#b06000;--stuck:#6a1b9a;--ink:#1f2328;--muted:#59636e;--line:#d8dee4;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif;color:var(--ink);background:#fff}
main{max-width:1280px;margin:0 auto;padding:20px 28px 56px}
h1.title{font-size:20px;margin:4px 0 12px}
h2{font-size:18px;margin:34px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:20px 0 8px}
a{color:#0b57d0}
.verdict{border-left:12px solid;border-radius:8px;padding:14px 22px 16px;margin-bottom:14px}
.verdict.pass{border-color:var(--pass);background:#e6f4ea}
.verdict.violation{border-color:var(--violation);background:#fce8e6}
.verdict.inconclusive{border-color:#f9ab00;background:#fef7e0}
.verdict.stuck{border-color:var(--stuck);background:#f3e5f5}
.verdict.other{border-color:var(--muted);background:var(--soft)}
.status{font-size:44px;font-weight:800;letter-spacing:.05em;line-height:1.1}
.pass .status{color:var(--pass)}.violation .status{color:var(--violation)}.inconclusive .status{color:var(--inconclusive)}.stuck .status{color:var(--stuck)}
.summary{font-size:16px;margin:6px 0 0;max-width:110ch}
.verdict ul{margin:8px 0 0;padding-left:20px}
.meta{display:grid;grid-template-columns:max-content 1fr max-content 1fr;gap:3px 18px;margin:10px 0;font-size:13px}
.meta dt{color:var(--muted)}.meta dd{margin:0;overflow-wrap:anywhere}
.reproduce{margin:12px 0 0}
.reproduce .label{font-size:13px;color:var(--muted);margin-bottom:3px}
pre.cmd{margin:0;background:#0d1117;color:#e6edf3;padding:10px 14px;border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere;user-select:all;-webkit-user-select:all}
pre.cmd code{font-size:13px;color:inherit}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace}
td code{white-space:nowrap}
td.wrap code{white-space:normal;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}
.card{border:1px solid var(--line);border-radius:8px;padding:8px 12px;background:#fff}
.card .n{font-size:22px;font-weight:700;font-variant-numeric:tabular-nums}
.card .l{color:var(--muted);font-size:12px}
.card.bad{border-color:var(--violation);background:#fce8e6}.card.bad .n{color:var(--violation)}
.card.warn{border-color:#f9ab00;background:#fef7e0}
.card.good .n{color:var(--pass)}
.card.stuck{border-color:var(--stuck);background:#f3e5f5}.card.stuck .n{color:var(--stuck)}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:target{background:#fff8c5}
.pill{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.pill.ok,.pill.pass,.pill.committed{background:#e6f4ea;color:var(--pass)}
.pill.bad,.pill.violation,.pill.missing{background:#fce8e6;color:var(--violation)}
.pill.warn,.pill.inconclusive,.pill.ambiguous{background:#fef7e0;color:var(--inconclusive)}
.pill.stuck,.pill.held{background:#f3e5f5;color:var(--stuck)}
.pill.aborted,.pill.other{background:#eef0f2;color:var(--muted)}
.pill.duplicated{background:#f6e6f0;color:#8e1b5f}
.note,.empty-note{color:var(--muted);font-size:13px;margin:6px 0}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin:0 4px 0 14px}
.legend{font-size:12px;color:var(--muted);margin:4px 0 0}
.swatch.line{height:2px;vertical-align:3px;background:#1f2d3d}
.swatch.ring{width:9px;height:9px;border:1.5px solid #e8710a;border-radius:50%}
.chart{border:1px solid var(--line);border-radius:8px;padding:8px 8px 4px}
.side-by-side{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
svg.timeline{display:block}
svg.trend{display:block}
svg .trend-line{fill:none;stroke-width:1.8;stroke-linejoin:round}
.group{margin-top:8px}
table.nights{width:auto;margin-top:8px}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Liberation Sans",Arial,sans-serif}
svg .plot{fill:#fbfcfd;stroke:#d0d7de}
svg .grid{stroke:#e3e7eb;stroke-width:1}
svg .hgrid{stroke:#eceff2;stroke-width:1}
svg .tick{font-size:11px;fill:#59636e}
svg .axis-title{font-size:11px;fill:#8c959f}
svg .chart-title{font-size:13px;font-weight:600;fill:#1f2328}
svg .chart-title .sub{font-weight:400;fill:#59636e;font-size:11px}
svg .empty{font-size:12px;fill:#8c959f}
svg .fault-band{fill-opacity:.17}
svg .fault-label text{font-size:11px;fill:#1f2328}
svg .bar-commit{fill:#3a6fb0}
svg .bar-resolved{fill:#a7c1e6}
svg .tick-aborted{fill:#6e7781}
svg .tick-ambiguous{fill:#f9ab00}
svg .lat-p99{fill:none;stroke:#1f2d3d;stroke-width:1.6;stroke-linejoin:round}
svg .lat-p99-dot{fill:#1f2d3d}
svg .lat-max{fill:none;stroke:#e8710a;stroke-width:1.2}
svg .hover{fill:transparent}
svg .anomaly.missing{fill:#d93025}
svg .anomaly.duplicated{fill:#a142f4}
svg .finished line{stroke:#59636e;stroke-width:1;stroke-dasharray:4 3}
svg .finished text{font-size:10px;fill:#59636e}
svg .stuck-band{fill:#6a1b9a;fill-opacity:.05;stroke:#6a1b9a;stroke-opacity:.55;stroke-dasharray:5 3}
svg .stuck-hatch{fill:none;stroke:#6a1b9a;stroke-opacity:.22;stroke-width:1.2;pointer-events:none}
svg .stuck-label{font-size:10px;font-weight:600;fill:#6a1b9a}
svg .remedy line{stroke-width:1.2;stroke-dasharray:2 2}
svg .remedy.healed rect{fill:#137333}svg .remedy.healed line{stroke:#137333}
svg .remedy.held rect{fill:#6a1b9a}svg .remedy.held line{stroke:#6a1b9a}
.swatch.stuck{background:repeating-linear-gradient(45deg,#6a1b9a 0 2px,#f3e5f5 2px 5px)}
.swatch.remedy{width:3px;background:#137333}
.stuck-partition{border:1px solid var(--line);border-left:6px solid var(--stuck);border-radius:6px;padding:4px 14px 10px;margin:10px 0}
.stuck-partition h3{margin:8px 0 6px}
table.facts{width:auto}table.facts th{text-align:left}
.likely-cause{border-left:4px solid var(--stuck);background:#f3e5f5;padding:6px 12px;margin:10px 0}
.brokerlog{margin:6px 0 0}
.brokerlog .label{font-size:12px;color:var(--muted);margin:4px 0 2px}
pre.log{margin:0;background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:4px 8px;font:11.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace;white-space:pre-wrap;overflow-wrap:anywhere}
pre.log span{display:block;padding-left:2em;text-indent:-2em}
footer{margin-top:40px;color:var(--muted);font-size:12px}
.strip{display:flex;flex-wrap:wrap;gap:3px;margin:10px 0}
.strip a{display:block;width:14px;height:14px;border-radius:3px}
.strip .pass{background:#34a853}.strip .violation{background:#d93025}.strip .inconclusive{background:#f9ab00}.strip .stuck{background:#8e24aa}.strip .other{background:#9aa0a6}
"#;

/// The colour class of a verdict status: "pass", "violation", "inconclusive", "stuck" or
/// "other".
pub(super) fn status_class(status: &str) -> &'static str {
    match status {
        "pass" => "pass",
        "violation" => "violation",
        "inconclusive" => "inconclusive",
        "stuck" => "stuck",
        _ => "other",
    }
}

/// The document up to the opening `<main>`, titled `title`.
pub(super) fn page_start(h: &mut String, title: &str) {
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    w!(h, "<title>{}</title>\n<style>{CSS}</style>\n", esc(title));
    h.push_str("</head>\n<body>\n<main>\n");
}

/// A number card: `n` large over `label`, coloured by `class` ("good", "warn", "bad", "stuck"
/// or "").
pub(super) fn card(h: &mut String, n: &str, label: &str, class: &str) {
    w!(
        h,
        "<div class=\"card {class}\"><div class=\"n\">{}</div><div class=\"l\">{}</div></div>",
        esc(n),
        esc(label)
    );
}
