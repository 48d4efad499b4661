//! Human-readable reports of a run directory. Computes no verdict: it renders the verdict
//! the checker gave, with the run's facts.
//!
//! `report.html` is one self-contained file: inline CSS and inline SVG, no script and no
//! reference to anything outside the file, so it opens offline and can be attached to a CI
//! job as it is. The history is streamed once and folded into at most [`BUCKETS`] time
//! buckets, so a run of a day costs the report no more memory than a run of a minute.
//!
//! `index.html` of a soak lists its iterations and links to their reports; `matrix.html`
//! shows a version matrix; the JUnit XML file has one test case per run or soak iteration.
//!
//! Every piece of text that comes from outside the program (scenario names, commands,
//! broker log lines, verdict sentences) enters the HTML through `fmt::esc`.
//!
//! The files below `report/`, one concern each:
//! - `fmt`: numbers, durations, times and ranges as text, and HTML escaping;
//! - `buckets`: the fixed-memory time buckets of commit throughput and latency;
//! - `scan`: the one pass over `history.jsonl` that feeds the run page;
//! - `timeline`: the SVG timeline of the run page;
//! - `page`: the shell every page shares (head, CSS, cards, status colours);
//! - `run_page`, `anomalies`, `faults`, `stuck`: the sections of `report.html`;
//! - `index`: a soak's `index.html`; `matrix`: `matrix.html`; `junit`: JUnit XML;
//! - `trends`: `trends.html`, the results store's nights (`pulsar-chaos trends`).

/// Append formatted text to a `String` (writing to a `String` cannot fail).
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = write!($dst, $($arg)*);
    }};
}

mod anomalies;
mod answers;
mod buckets;
mod consumer;
mod exits;
mod faults;
mod fmt;
mod index;
mod junit;
pub mod matrix;
mod page;
mod run_page;
mod scan;
mod shrink;
mod stuck;
mod timeline;
pub mod trends;

pub use buckets::BUCKETS;
pub use index::{write_index, IndexRow};
pub use junit::{write_junit, write_junit_with, Case};
pub use run_page::write_html;
pub use shrink::write_shrink;

/// Rows listed one by one in a table before "n more" (the rest is in verdict.json).
const TABLE_CAP: usize = 200;

#[cfg(test)]
mod tests;
