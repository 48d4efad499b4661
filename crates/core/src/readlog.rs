//! The stored read-back: what the checker saw, kept in the run directory as `readback.json`
//! so that `recheck` can derive the verdict again offline. Pure: no I/O, no clock.
//!
//! The numbers are kept per partition, in read order, as runs `[first, count, stride]` (the
//! numbers `first, first + stride, ..., first + (count - 1) * stride`): the numbers of
//! partition p of P are n ≡ p (mod P), so a partition read in order is one run of stride P,
//! and every batch the producer wrote in one piece costs one run. Beside them, `txns` records
//! which of the partition's messages had metadata naming a transaction (`txnid_most_bits`,
//! `txnid_least_bits`), as runs `[first, count, most, least]` over the read order: what the
//! checker needs to tell a client that never put the transaction into the metadata (the Go
//! client, apache/pulsar-client-go#1498) from a broker that delivered an aborted message.
//! Besides the runs the file
//! holds the findings the read-back made (uncapped: every missing range, every duplicated
//! range, every unexpected message with its message id), the message ids of every copy of
//! every duplicated number, and the `checker::Context` the verdict was given.
//!
//! ```json
//! {"format":1,"expected":100000,
//!  "partitions":[{"partition":0,"messages":50000,"runs":[[0,50000,2]],
//!                 "txns":[[0,50,0,1],[50,50,0,2], ...]}, ...],
//!  "findings":{...},"duplicate_ids":{"17":[{"partition":1,...}, ...]},"context":{...}}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::checker::{CheckerError, Context, Findings, MetadataTxns, MsgId, Tally};
use crate::history::TxnId;

/// The file's name in the run directory.
pub const FILE: &str = "readback.json";

/// The version of the format below; `recheck` refuses others.
pub const FORMAT: u32 = 1;

/// `count` numbers from `first` on, `stride` apart (stride 0: one number `count` times).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run(pub u64, pub u64, pub u64);

impl Run {
    /// The number after the run's last one, if the run could take it.
    fn next(&self) -> Option<u64> {
        self.1
            .checked_mul(self.2)
            .and_then(|d| self.0.checked_add(d))
    }
}

/// `count` consecutive numbers of a partition's read, from its `first`-th on (0-based, in read
/// order, as `runs` list them), whose metadata names transaction (`most`, `least`)
/// (`txnid_most_bits`, `txnid_least_bits` of `MessageMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnRun(pub u64, pub u64, pub u64, pub u64);

/// The numbers read from one partition, in read order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionLog {
    /// The index a message id carries (-1: a non-partitioned topic).
    pub partition: i32,
    /// Numbers of [0, N) read (unexpected messages are not counted here).
    pub messages: u64,
    pub runs: Vec<Run>,
    /// The numbers whose metadata names a transaction, as runs over the read order; a number
    /// no run covers was read from a message whose metadata names none. None: not recorded
    /// (a read-back stored before this field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txns: Option<Vec<TxnRun>>,
}

/// Records the numbers of a read-back as runs, partition by partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadLog {
    partitions: Vec<PartitionLog>,
}

impl ReadLog {
    pub fn new() -> ReadLog {
        ReadLog::default()
    }

    /// The numbers that follow were read from `partition`.
    pub fn start_partition(&mut self, partition: i32) {
        self.partitions.push(PartitionLog {
            partition,
            messages: 0,
            runs: Vec::new(),
            txns: Some(Vec::new()),
        });
    }

    /// One number of [0, N), read from the current partition from a message whose metadata
    /// names no transaction.
    #[inline]
    pub fn number(&mut self, v: u64) {
        self.number_in(v, None);
    }

    /// One number of [0, N), read from the current partition, with the transaction its
    /// message's metadata names (`txnid_most_bits`, `txnid_least_bits`), if any.
    #[inline]
    pub fn number_in(&mut self, v: u64, txn: Option<TxnId>) {
        if self.partitions.is_empty() {
            self.start_partition(-1);
        }
        let p = self.partitions.last_mut().expect("one partition at least");
        let index = p.messages;
        p.messages += 1;
        if let (Some(t), Some(txns)) = (txn, p.txns.as_mut()) {
            match txns.last_mut() {
                Some(r) if r.0 + r.1 == index && (r.2, r.3) == (t.most, t.least) => r.1 += 1,
                _ => txns.push(TxnRun(index, 1, t.most, t.least)),
            }
        }
        match p.runs.last_mut() {
            Some(r) if r.1 == 1 && v >= r.0 => {
                r.2 = v - r.0;
                r.1 = 2;
            }
            Some(r) if r.1 >= 2 && r.next() == Some(v) => r.1 += 1,
            _ => p.runs.push(Run(v, 1, 0)),
        }
    }

    pub fn partitions(&self) -> &[PartitionLog] {
        &self.partitions
    }
}

/// `readback.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReadback {
    pub format: u32,
    pub expected: u64,
    pub partitions: Vec<PartitionLog>,
    /// The read-back's findings with every anomaly listed (no `LIST_CAP`).
    pub findings: Findings,
    /// Message ids of every copy of every duplicated number, in read order per number.
    #[serde(default)]
    pub duplicate_ids: BTreeMap<u64, Vec<MsgId>>,
    /// What the verdict was given besides the findings and the history.
    pub context: Context,
}

impl StoredReadback {
    pub fn new(
        expected: u64,
        log: ReadLog,
        findings: Findings,
        duplicate_ids: BTreeMap<u64, Vec<MsgId>>,
        context: Context,
    ) -> StoredReadback {
        StoredReadback {
            format: FORMAT,
            expected,
            partitions: log.partitions,
            findings,
            duplicate_ids,
            context,
        }
    }

    /// Count the stored numbers and unexpected messages again, in their order, into a fresh
    /// tally: the uncapped findings they make.
    pub fn retally(&self) -> Result<Findings, CheckerError> {
        let mut t = Tally::uncapped(self.expected);
        for p in &self.partitions {
            for r in &p.runs {
                let mut v = r.0;
                for i in 0..r.1 {
                    if i > 0 {
                        v = v.wrapping_add(r.2);
                    }
                    t.observe_value(v);
                }
            }
        }
        for u in &self.findings.unexpected {
            t.observe_unexpected_record(u.clone());
        }
        t.finish()
    }

    /// What the metadata of every copy of every duplicated number named (see
    /// [`metadata_txns`]); None when this file did not record it.
    pub fn metadata_txns(&self, findings: &Findings) -> Option<MetadataTxns> {
        metadata_txns(&self.partitions, findings)
    }

    /// Where this file contradicts itself: each partition's count against its runs, the
    /// stored findings against `retallied` (what `retally` gave). Empty when consistent.
    pub fn differences(&self, retallied: &Findings) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.partitions {
            let n: u64 = p.runs.iter().map(|r| r.1).sum();
            if n != p.messages {
                out.push(format!(
                    "partition {}: {} messages recorded, its runs hold {n}",
                    p.partition, p.messages
                ));
            }
            let mut from = 0;
            for r in p.txns.iter().flatten() {
                if r.0 < from || r.1 == 0 || r.0 + r.1 > p.messages {
                    out.push(format!(
                        "partition {}: transaction run [{}, {}, {}, {}] is out of order or outside its {} messages",
                        p.partition, r.0, r.1, r.2, r.3, p.messages
                    ));
                    break;
                }
                from = r.0 + r.1;
            }
        }
        let (a, b) = (
            serde_json::to_value(&self.findings).expect("findings serialize"),
            serde_json::to_value(retallied).expect("findings serialize"),
        );
        for d in crate::readlog::diff_values("findings", &a, &b) {
            out.push(format!(
                "{d} (stored findings / counted again from the runs)"
            ));
        }
        out
    }
}

impl ReadLog {
    /// What the metadata of every copy of every duplicated number named (see
    /// [`metadata_txns`]).
    pub fn metadata_txns(&self, findings: &Findings) -> Option<MetadataTxns> {
        metadata_txns(&self.partitions, findings)
    }
}

/// For every number `findings` found duplicated, the transaction the metadata of each of its
/// copies named (None: it named none), in read order. None when a partition did not record
/// it (a read-back stored before the record existed): nothing is known then.
pub fn metadata_txns(partitions: &[PartitionLog], findings: &Findings) -> Option<MetadataTxns> {
    let mut out = MetadataTxns::new();
    if findings.duplicates.is_empty() {
        return partitions.iter().all(|p| p.txns.is_some()).then_some(out);
    }
    let mut spans: Vec<(u64, u64)> = findings
        .duplicates
        .iter()
        .map(|d| (d.start, d.end))
        .collect();
    spans.sort_unstable();
    let duplicated = |v: u64| {
        let i = spans.partition_point(|(s, _)| *s <= v);
        i > 0 && v < spans[i - 1].1
    };
    for p in partitions {
        let txns = p.txns.as_ref()?;
        let mut t = txns.iter().peekable();
        let mut index = 0u64;
        for r in &p.runs {
            let mut v = r.0;
            for i in 0..r.1 {
                if i > 0 {
                    v = v.wrapping_add(r.2);
                }
                while t.peek().is_some_and(|x| x.0 + x.1 <= index) {
                    t.next();
                }
                if duplicated(v) {
                    let named = t.peek().filter(|x| x.0 <= index).map(|x| TxnId {
                        most: x.2,
                        least: x.3,
                    });
                    out.entry(v).or_default().push(named);
                }
                index += 1;
            }
        }
    }
    Some(out)
}

/// The differences between two JSON values as `path: left != right` lines, at most 50.
pub fn diff_values(path: &str, a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into(path, a, b, &mut out);
    if out.len() > 50 {
        let more = out.len() - 50;
        out.truncate(50);
        out.push(format!("... and {more} more difference(s)"));
    }
    out
}

fn short(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        let head: String = s.chars().take(117).collect();
        format!("{head}...")
    } else {
        s
    }
}

fn diff_into(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    if out.len() > 50 {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            // Plain values first (totals, status), then lists and objects.
            let nested = |k: &String| {
                x.get(k)
                    .or(y.get(k))
                    .is_some_and(|v| v.is_array() || v.is_object())
            };
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort_by_key(|k| (nested(k), *k));
            keys.dedup();
            for k in keys {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => diff_into(&p, l, r, out),
                    (Some(l), None) => out.push(format!("{p}: {} != (absent)", short(l))),
                    (None, Some(r)) => out.push(format!("{p}: (absent) != {}", short(r))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!("{path}: {} entries != {}", x.len(), y.len()));
            }
            for (i, (l, r)) in x.iter().zip(y.iter()).enumerate() {
                diff_into(&format!("{path}[{i}]"), l, r, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {} != {}", short(a), short(b))),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Unexpected;
    use crate::stall::LogEvidence;

    fn id(e: u64) -> MsgId {
        MsgId {
            partition: 0,
            ledger: 3,
            entry: e,
            batch: -1,
        }
    }

    #[test]
    fn an_in_order_partition_is_one_run() {
        let mut log = ReadLog::new();
        for p in 0..4 {
            log.start_partition(p);
            for v in (p as u64..100_000).step_by(4) {
                log.number(v);
            }
        }
        for (p, part) in log.partitions().iter().enumerate() {
            assert_eq!(part.runs, vec![Run(p as u64, 25_000, 4)]);
            assert_eq!(part.messages, 25_000);
        }
    }

    #[test]
    fn interleaved_and_repeated_numbers_make_runs_in_read_order() {
        let mut log = ReadLog::new();
        log.start_partition(-1);
        for v in [0, 2, 4, 1, 3, 5, 5, 5, 9, 7, 6, u64::MAX] {
            log.number(v);
        }
        assert_eq!(
            log.partitions()[0].runs,
            vec![
                Run(0, 3, 2),
                Run(1, 3, 2),
                Run(5, 2, 0),
                Run(9, 1, 0),
                Run(7, 1, 0),
                Run(6, 2, u64::MAX - 6)
            ]
        );
    }

    /// A read-back with gaps, copies, strays and two partitions, recorded, stored as JSON,
    /// loaded and counted again.
    fn sample() -> StoredReadback {
        let n = 10_000;
        let mut log = ReadLog::new();
        let mut tally = Tally::uncapped(n);
        let mut r = crate::seed::Rng::new(9);
        for p in 0..2u64 {
            log.start_partition(p as i32);
            for v in (p..n).step_by(2) {
                if v % 7 == 3 {
                    continue; // missing
                }
                let copies = if r.below(10) == 0 { 2 } else { 1 };
                for _ in 0..copies {
                    log.number(v);
                    tally.observe(v.to_string().as_bytes(), id(v));
                }
            }
        }
        for (i, payload) in [&b"hello"[..], b"16000", b"\xff\xfe junk", b"007"]
            .iter()
            .enumerate()
        {
            tally.observe(payload, id(10_000 + i as u64));
        }
        let findings = tally.finish().unwrap();
        assert!(findings.missing.len() > crate::checker::LIST_CAP);
        let dup_ids: BTreeMap<u64, Vec<MsgId>> = findings
            .duplicates
            .iter()
            .take(3)
            .map(|d| (d.start, vec![id(d.start), id(d.start + 1)]))
            .collect();
        let context = Context {
            seed: Some(42),
            readback_incomplete: Some("partition 1 stopped early".into()),
            duplicate_ids: dup_ids.clone().into_iter().collect(),
            stall_log: vec![LogEvidence {
                node: "broker-1".into(),
                topic: "t-partition-0".into(),
                level: "WARN".into(),
                message: "Failed to persist msg".into(),
                count: 12,
                first: "2026-11-30T07:23:43,454".into(),
                last: "2026-11-30T07:24:43,454".into(),
            }],
            stall_cause: Some("a known bug".into()),
            stall_partitions: vec![crate::stuck::StuckPartition {
                partition: "persistent://public/default/t-partition-1".into(),
                index: 1,
                held: "nothing open".into(),
                buffer_state: Some("Ready".into()),
                open: Some(0),
                max_read: Some((21, 300)),
                last_confirmed: Some((21, 300)),
                entries_behind: Some(0),
                txns: Vec::new(),
                broker_lines: Vec::new(),
                errors: vec!["slowTransactions: HTTP 500".into()],
            }],
            broker_log: vec![crate::brokerlog::TxnLog {
                txn: crate::history::TxnId { most: 0, least: 957 },
                named: vec![crate::brokerlog::BrokerLine {
                    node: "standalone".into(),
                    file: "logs/standalone.log".into(),
                    line: 1234,
                    level: "WARN".into(),
                    time: "2026-11-30T16:37:09,076".into(),
                    message: "TopicTransactionBuffer: Successes to abort low water mark for txn [(0,957)]".into(),
                }],
                named_more: 3,
                during: Vec::new(),
                during_more: 0,
            }],
            sabotage_skip: [7].into_iter().collect(),
            sabotage_duplicate: [9].into_iter().collect(),
            stuck_reads: Some(crate::stuck::StuckReads {
                since_ms: 1,
                detected_ms: 2,
                waited_s: 260,
                partitions: vec![crate::stuck::StuckPartition {
                    partition: "persistent://public/default/t-partition-0".into(),
                    index: 0,
                    held: "1 transaction(s) open".into(),
                    buffer_state: Some("Ready".into()),
                    open: Some(1),
                    max_read: Some((21, 265)),
                    last_confirmed: Some((34, 3961)),
                    entries_behind: Some(9),
                    txns: Vec::new(),
                    broker_lines: Vec::new(),
                    errors: Vec::new(),
                }],
                remedies: vec![crate::stuck::RemedyRecord {
                    remedy: crate::stuck::Remedy::UnloadTopic,
                    targets: vec!["t-partition-0".into()],
                    at_ms: 3,
                    elapsed_ms: 4,
                    answers: vec!["ok".into()],
                    healed: true,
                    still_held: String::new(),
                }],
                likely_cause: None,
            }),
            consumer: None,
            planned_faults: Some(vec!["pause#1".into(), "loss#2".into()]),
            client: Some(crate::checker::ClientContext {
                client: "java".into(),
                deduplication: Some(false),
                evidence: "deduplicationStatus Disabled".into(),
            }),
            metadata_txns: None,
            txnlog_steps: vec![crate::txnlog::CursorStepBack::between(
                0,
                "pulsar/system/persistent/__transaction_log_0",
                "transaction.subscription",
                (21_623, "3:1099", "[]"),
                (34_100, "3:961", "[(3:963..3:1099]]"),
            )
            .unwrap()],
        };
        StoredReadback::new(n, log, findings, dup_ids, context)
    }

    #[test]
    fn the_stored_readback_round_trips_and_counts_to_its_own_findings() {
        let stored = sample();
        let text = serde_json::to_string(&stored).unwrap();
        let back: StoredReadback = serde_json::from_str(&text).unwrap();
        assert_eq!(back, stored);
        // Deterministic: the same value writes the same bytes (duplicate ids in value order).
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let again = back.retally().unwrap();
        assert_eq!(again, stored.findings);
        assert!(back.differences(&again).is_empty());
        assert_eq!(again.unexpected.len(), 4);
        assert_eq!(
            again.unexpected[2],
            Unexpected {
                value: None,
                payload_prefix: "\u{fffd}\u{fffd} junk".into(),
                message_id: id(10_002),
            }
        );
    }

    #[test]
    fn a_context_from_an_older_file_loads_with_defaults() {
        let c: Context = serde_json::from_str(r#"{"seed": 7}"#).unwrap();
        assert_eq!(
            c,
            Context {
                seed: Some(7),
                ..Context::default()
            }
        );
        let text = serde_json::to_string(&sample().context).unwrap();
        assert!(text.contains(r#""duplicate_ids":{""#), "{text}");
    }

    #[test]
    fn a_tampered_run_is_named() {
        let mut stored = sample();
        stored.partitions[1].runs[0].1 += 1;
        let again = stored.retally().unwrap();
        let d = stored.differences(&again);
        assert!(d.iter().any(|l| l.starts_with("partition 1: ")), "{d:#?}");
        assert!(
            d.iter().any(|l| l.starts_with("findings.received: ")),
            "{d:#?}"
        );
    }

    #[test]
    fn json_differences_name_their_paths() {
        let a = serde_json::json!({"status": "pass", "missing": [{"start": 1}], "x": 1});
        let b = serde_json::json!({"status": "violation", "missing": [{"start": 2}, {}], "y": 1});
        assert_eq!(
            diff_values("verdict", &a, &b),
            vec![
                r#"verdict.status: "pass" != "violation""#.to_string(),
                r#"verdict.x: 1 != (absent)"#.to_string(),
                r#"verdict.y: (absent) != 1"#.to_string(),
                r#"verdict.missing: 1 entries != 2"#.to_string(),
                r#"verdict.missing[0].start: 1 != 2"#.to_string(),
            ]
        );
    }

    /// What each copy's metadata named is recorded as runs over the read order, only where it
    /// names a transaction, and given back for the duplicated numbers; a file stored before
    /// the record existed loads with none, and then nothing is known.
    #[test]
    fn the_metadata_txns_are_recorded_compactly_and_old_files_know_none() {
        let t = |least| Some(TxnId { most: 1, least });
        let mut log = ReadLog::new();
        let mut tally = Tally::uncapped(20);
        log.start_partition(0);
        // [0, 10) in (1,7) (aborted, yet readable: named), [0, 10) again naming nothing,
        // [10, 20) in (1,8).
        let reads = (0..10u64)
            .map(|v| (v, t(7)))
            .chain((0..10).map(|v| (v, None)))
            .chain((10..20).map(|v| (v, t(8))));
        for (v, txn) in reads {
            tally.observe_value(v);
            log.number_in(v, txn);
        }
        let findings = tally.finish().unwrap();
        assert_eq!(
            log.partitions()[0].txns,
            Some(vec![TxnRun(0, 10, 1, 7), TxnRun(20, 10, 1, 8)])
        );
        let md = log.metadata_txns(&findings).unwrap();
        assert_eq!(md.len(), 10);
        assert_eq!(md[&3], vec![t(7), None]);
        assert!(!md.contains_key(&12));
        let stored = StoredReadback::new(
            20,
            log,
            findings.clone(),
            BTreeMap::new(),
            Context::default(),
        );
        let text = serde_json::to_string(&stored).unwrap();
        assert!(
            text.contains(r#""txns":[[0,10,1,7],[20,10,1,8]]"#),
            "{text}"
        );
        let back: StoredReadback = serde_json::from_str(&text).unwrap();
        assert_eq!(back.metadata_txns(&findings), Some(md));
        // A file of before: no `txns`.
        let old = text.replace(r#","txns":[[0,10,1,7],[20,10,1,8]]"#, "");
        assert_ne!(old, text);
        let back: StoredReadback = serde_json::from_str(&old).unwrap();
        assert_eq!(back.partitions[0].txns, None);
        assert_eq!(back.metadata_txns(&findings), None);
        assert!(back.differences(&back.retally().unwrap()).is_empty());
        // A record naming more messages than the partition read contradicts the file.
        let mut bad = stored.clone();
        bad.partitions[0].txns = Some(vec![TxnRun(25, 10, 1, 8)]);
        let d = bad.differences(&findings);
        assert!(
            d.len() == 1 && d[0].contains("outside its 30 messages"),
            "{d:?}"
        );
    }
}
