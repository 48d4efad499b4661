//! `recheck`: derive a run's verdict again, offline, from the read-back stored in its run
//! directory (`readback.json`) and its `history.jsonl`, and compare it with `verdict.json`.

use std::path::Path;

use serde::Serialize;

use crate::checker::{self, Verdict};
use crate::commands::run::{exit_code, print_verdict};
use crate::error::{Error, Result};
use crate::exit;
use crate::readlog::{self, StoredReadback};
use crate::rundir::RunDir;

/// What `recheck --json` prints.
#[derive(Debug, Serialize)]
struct Answer<'a> {
    /// True when the stored read-back and the history give verdict.json exactly.
    reproduced: bool,
    /// What differs, `path: stored != recomputed` (empty when reproduced).
    differences: &'a [String],
    /// The verdict derived again.
    verdict: &'a Verdict,
}

/// The verdict derived again from `dir`'s stored read-back and history, and every difference
/// from its verdict.json (and inside the stored read-back itself).
pub fn recompute(dir: &RunDir) -> Result<(Verdict, Vec<String>)> {
    let name = dir.path.display();
    for f in [readlog::FILE, "verdict.json", "history.jsonl"] {
        if !dir.file(f).is_file() {
            return Err(Error::Usage(format!(
                "{name} has no {f}: the run never reached its check, or was made by a pulsar-chaos that did not store its read-back"
            )));
        }
    }
    let stored: StoredReadback = dir.read_json(readlog::FILE)?;
    if stored.format != readlog::FORMAT {
        return Err(Error::Usage(format!(
            "{name}/{}: format {} is not the one this pulsar-chaos reads ({})",
            readlog::FILE,
            stored.format,
            readlog::FORMAT
        )));
    }
    let on_file: serde_json::Value = dir.read_json("verdict.json")?;
    // The same steps as the run: count, judge every range with the history and the context.
    let findings = stored.retally()?;
    let mut differences = stored.differences(&findings);
    let events = crate::history::read(&dir.file("history.jsonl"))?;
    // What the copies' metadata named is derived from the stored record, never stored twice.
    let mut ctx = stored.context.clone();
    ctx.metadata_txns = stored.metadata_txns(&findings);
    let verdict = checker::verdict(findings, Some(events), &ctx);
    let again = serde_json::to_value(&verdict).expect("verdicts serialize");
    differences.extend(
        readlog::diff_values("verdict", &on_file, &again)
            .into_iter()
            .map(|d| format!("{d} (verdict.json / derived again)")),
    );
    Ok((verdict, differences))
}

pub fn recheck(run_dir: &Path, json: bool) -> Result<i32> {
    let dir = RunDir::open(run_dir)?;
    let (verdict, differences) = recompute(&dir)?;
    let reproduced = differences.is_empty();
    if json {
        let answer = Answer {
            reproduced,
            differences: &differences,
            verdict: &verdict,
        };
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&answer).expect("answers serialize")
        );
    } else if reproduced {
        print_verdict(&verdict, None);
        crate::outln!("recheck: verdict.json reproduced from readback.json and history.jsonl");
    } else {
        crate::outln!(
            "recheck: verdict.json NOT reproduced from readback.json and history.jsonl; {} difference(s):",
            differences.len()
        );
        for d in &differences {
            crate::outln!("  {d}");
        }
    }
    Ok(if reproduced {
        exit_code(&verdict)
    } else {
        exit::RECHECK_DIFFERS
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::checker::{Context, MsgId, Tally};
    use crate::history::{Event, EventBody, Outcome, TxnId};
    use crate::readlog::ReadLog;

    /// A run directory as the runner leaves it: 12000 numbers on two partitions, 15, 25, ...
    /// lost (1199 missing ranges), [0, 10) committed twice, two strays;
    /// readback.json written before verdict.json, both from the same read.
    fn run_dir() -> RunDir {
        let path = std::env::temp_dir().join(format!(
            "pc-recheck-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&path).unwrap();
        let dir = RunDir { path };
        dir.write("run.json", "{}\n").unwrap();
        write_history(&dir);

        let n = 12000;
        let mut tally = Tally::uncapped(n);
        let mut log = ReadLog::new();
        let mut ids: BTreeMap<u64, Vec<MsgId>> = BTreeMap::new();
        for p in 0..2u64 {
            log.start_partition(p as i32);
            let again = (0..10).filter(|v| v % 2 == p);
            for (entry, v) in (p..n).step_by(2).chain(again).enumerate() {
                if v % 10 == 5 && v >= 10 {
                    continue;
                }
                tally.observe_value(v);
                log.number(v);
                if v < 10 {
                    ids.entry(v).or_default().push(MsgId {
                        partition: p as i32,
                        ledger: 7,
                        entry: entry as u64,
                        batch: -1,
                    });
                }
            }
        }
        for (i, junk) in [&b"hello"[..], b"12001"].iter().enumerate() {
            let id = MsgId {
                partition: 0,
                ledger: 7,
                entry: 9000 + i as u64,
                batch: -1,
            };
            tally.observe(junk, id);
        }
        let all = tally.finish().unwrap();
        assert!(all.missing.len() > crate::checker::LIST_CAP);
        let ctx = Context {
            seed: Some(5),
            duplicate_ids: ids.clone().into_iter().collect(),
            ..Context::default()
        };
        let stored = StoredReadback::new(n, log, all.clone(), ids, ctx.clone());
        dir.write(
            readlog::FILE,
            &(serde_json::to_string(&stored).unwrap() + "\n"),
        )
        .unwrap();
        let events = crate::history::read(&dir.file("history.jsonl")).unwrap();
        let v = checker::verdict(all.clone(), Some(events), &ctx);
        dir.write_json("verdict.json", &v).unwrap();
        dir
    }

    /// history.jsonl of that run: [0, 12000) and [0, 10) each committed in a transaction.
    fn write_history(dir: &RunDir) {
        let txn = |least| TxnId { most: 1, least };
        let events = vec![
            EventBody::TxnOpened {
                attempt: 1,
                txn: txn(1),
                numbers: vec![(0, 12000)],
                resend_of: None,
            },
            EventBody::TxnOutcome {
                attempt: 1,
                txn: txn(1),
                outcome: Outcome::Committed,
                detail: String::new(),
            },
            EventBody::TxnOpened {
                attempt: 2,
                txn: txn(2),
                numbers: vec![(0, 10)],
                resend_of: None,
            },
            EventBody::TxnOutcome {
                attempt: 2,
                txn: txn(2),
                outcome: Outcome::Committed,
                detail: String::new(),
            },
            EventBody::ProducerFinished {
                committed: 2,
                aborted: 0,
                ambiguous: 0,
                messages_committed: 12010,
                complete: true,
                detail: String::new(),
            },
        ];
        let mut text = String::new();
        for (i, body) in events.into_iter().enumerate() {
            text.push_str(
                &serde_json::to_string(&Event {
                    t_ms: i as u64 * 10,
                    body,
                })
                .unwrap(),
            );
            text.push('\n');
        }
        dir.write("history.jsonl", &text).unwrap();
    }

    #[test]
    fn an_untouched_run_directory_is_reproduced_with_its_verdicts_exit_code() {
        let dir = run_dir();
        let (v, differences) = recompute(&dir).unwrap();
        assert!(differences.is_empty(), "{differences:#?}");
        assert_eq!(v.status, checker::Status::Violation);
        assert_eq!(v.missing.len(), crate::checker::LIST_CAP);
        assert_eq!(v.missing_total, 1199);
        assert_eq!(recheck(&dir.path, false).unwrap(), exit::VIOLATION);
        assert_eq!(recheck(&dir.path, true).unwrap(), exit::VIOLATION);
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn a_tampered_readback_is_reported_with_what_differs() {
        let dir = run_dir();
        let mut stored: StoredReadback = dir.read_json(readlog::FILE).unwrap();
        // One more number read on partition 1 than the run saw.
        stored.partitions[1].runs.push(readlog::Run(15, 1, 0));
        dir.write(readlog::FILE, &serde_json::to_string(&stored).unwrap())
            .unwrap();
        let (_, differences) = recompute(&dir).unwrap();
        let has = |p: &str| differences.iter().any(|d| d.starts_with(p));
        assert!(has("partition 1: "), "{differences:#?}");
        assert!(has("findings.received: 10813 != 10814"), "{differences:#?}");
        assert!(has("verdict.received: 10813 != 10814"), "{differences:#?}");
        assert!(
            has("verdict.missing_total: 1199 != 1198"),
            "{differences:#?}"
        );
        assert_eq!(recheck(&dir.path, false).unwrap(), exit::RECHECK_DIFFERS);
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn a_tampered_verdict_is_reported() {
        let dir = run_dir();
        let text = std::fs::read_to_string(dir.file("verdict.json")).unwrap();
        dir.write(
            "verdict.json",
            &text.replacen(r#""status": "violation""#, r#""status": "pass""#, 1),
        )
        .unwrap();
        let (_, differences) = recompute(&dir).unwrap();
        assert_eq!(
            differences,
            vec![r#"verdict.status: "pass" != "violation" (verdict.json / derived again)"#]
        );
        assert_eq!(recheck(&dir.path, true).unwrap(), exit::RECHECK_DIFFERS);
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn a_run_without_a_stored_readback_or_of_another_format_is_refused() {
        let dir = run_dir();
        let mut stored: serde_json::Value = dir.read_json(readlog::FILE).unwrap();
        stored["format"] = 99.into();
        dir.write(readlog::FILE, &stored.to_string()).unwrap();
        let err = recheck(&dir.path, false).unwrap_err();
        assert_eq!(err.exit_code(), exit::BAD_INPUT);
        assert!(err.to_string().contains("format 99"), "{err}");
        std::fs::remove_file(dir.file(readlog::FILE)).unwrap();
        let err = recheck(&dir.path, false).unwrap_err();
        assert_eq!(err.exit_code(), exit::BAD_INPUT);
        assert!(err.to_string().contains("no readback.json"), "{err}");
        let _ = std::fs::remove_dir_all(&dir.path);
    }

    #[test]
    fn a_readback_whose_counts_do_not_add_up_ends_with_the_checker_fault_code() {
        let dir = run_dir();
        let mut stored: serde_json::Value = dir.read_json(readlog::FILE).unwrap();
        // Findings a stored file claims are held to the same check as a tally's.
        stored["findings"]["distinct"] = 1.into();
        let f: crate::checker::Findings =
            serde_json::from_value(stored["findings"].clone()).unwrap();
        let err = Error::from(f.conserved().unwrap_err());
        assert_eq!(err.exit_code(), exit::CHECKER_FAULT);
        assert!(err.to_string().contains("do not add up"), "{err}");
        let _ = std::fs::remove_dir_all(&dir.path);
    }
}
