//! `run` and `verify`.

use std::collections::BTreeSet;

use crate::brokerlog::TxnLog;
use crate::checker::{self, Context, Status, Verdict};
use crate::cli::{ExternalArgs, Overrides, RunArgs, VerifyArgs};
use crate::error::{Error, Result};
use crate::exit;
use crate::history::TxnId;
use crate::runner::{self, Request};
use crate::scenario;
use crate::store::{self, Source};

/// The exit code of a verdict.
pub fn exit_code(v: &Verdict) -> i32 {
    status_code(v.status)
}

/// The exit code of a verdict's status.
pub fn status_code(status: Status) -> i32 {
    exit::of_status(status)
}

/// The broker log lines of an anomaly, for people: in full under the first anomaly of each
/// transaction (`shown` remembers which were printed), one line under the others.
pub fn broker_log_text(logs: &[TxnLog], shown: &mut BTreeSet<TxnId>) -> Vec<String> {
    let mut out = Vec::new();
    for l in logs {
        if !shown.insert(l.txn) {
            out.push(format!("broker log about {}: as above", l.txn));
            continue;
        }
        if !l.named.is_empty() {
            let more = if l.named_more > 0 {
                format!(
                    " (the first {}; {} more name it)",
                    l.named.len(),
                    l.named_more
                )
            } else {
                String::new()
            };
            out.push(format!("broker log lines naming {}{more}:", l.txn));
            out.extend(l.named.iter().map(|line| format!("  {line}")));
        }
        if !l.during.is_empty() {
            let more = if l.during_more > 0 {
                format!(" (the first {}; {} more)", l.during.len(), l.during_more)
            } else {
                String::new()
            };
            out.push(format!(
                "WARN/ERROR lines about the topic while {} was open or committing (they name no transaction){more}:",
                l.txn
            ));
            out.extend(l.during.iter().map(|line| format!("  {line}")));
        }
    }
    out
}

/// The table of what each error the client answered meant (docs/grading.md, "What each error meant"):
/// per operation and class, the transactions that got it and how many the evidence found
/// committed, aborted, or could not tell. Empty when no row.
pub fn client_answers_text(t: &checker::ClientAnswers) -> Vec<String> {
    if t.rows.is_empty() {
        return Vec::new();
    }
    let w = t
        .rows
        .iter()
        .map(|r| r.class.chars().count())
        .max()
        .unwrap_or(0)
        .max("class".len());
    let mut out = vec![
        format!("what each error meant ({} client):", t.client),
        format!(
            "  {:<6}  {:<w$}  {:>5}  {:>9}  {:>7}  {:>7}",
            "op", "class", "txns", "committed", "aborted", "unknown"
        ),
    ];
    for r in &t.rows {
        out.push(format!(
            "  {:<6}  {:<w$}  {:>5}  {:>9}  {:>7}  {:>7}",
            r.op, r.class, r.transactions, r.committed, r.aborted, r.unknown
        ));
    }
    out
}

/// A stuck read for people: each partition with Pulsar's numbers, the coordinators'
/// transactions and the brokers' lines, then each remedy and its answers.
pub fn stuck_text(s: &crate::stuck::StuckReads) -> Vec<String> {
    let mut out = vec![format!(
        "read-back held from t={:.1}s; the harness gave up waiting at t={:.1}s ({}s after every fault healed)",
        s.since_ms as f64 / 1000.0,
        s.detected_ms as f64 / 1000.0,
        s.waited_s
    )];
    for p in &s.partitions {
        out.push(format!("stuck {}", p.describe()));
        for t in &p.txns {
            let parts: Vec<String> = t
                .partitions
                .iter()
                .map(|tp| {
                    let name = tp.partition.rsplit('/').next().unwrap_or(&tp.partition);
                    match tp.aborted {
                        Some(a) => format!("{name} aborted: {a}"),
                        None => name.to_string(),
                    }
                })
                .collect();
            out.push(format!("  {} {}: {}", t.txn, t.status, parts.join(", ")));
        }
        for l in &p.broker_lines {
            out.push(format!("  {l}"));
        }
        for e in &p.errors {
            out.push(format!("  could not ask: {e}"));
        }
    }
    if let Some(c) = &s.likely_cause {
        out.push(format!("likely cause: {c}"));
    }
    for r in &s.remedies {
        out.push(format!(
            "remedy {} at t={:.1}s on {}: {} after {:.1}s",
            r.remedy,
            r.at_ms as f64 / 1000.0,
            if r.targets.is_empty() {
                "-".to_string()
            } else {
                r.targets.join(", ")
            },
            if r.healed { "healed" } else { "still held" },
            r.elapsed_ms as f64 / 1000.0
        ));
        for a in &r.answers {
            out.push(format!("  {a}"));
        }
    }
    out
}

/// Print a verdict for people.
pub fn print_verdict(v: &Verdict, reproduce: Option<&str>) {
    crate::outln!("{}", v.summary);
    let mut shown = BTreeSet::new();
    // Numbers held behind a stuck partition are summarised per partition, not listed.
    let held_back = v.status == Status::Stuck
        && v.stuck_reads
            .as_ref()
            .is_some_and(|s| s.healed_by().is_none());
    let listed = if held_back { 0 } else { 20 };
    for m in v.missing.iter().take(listed) {
        crate::outln!(
            "  missing {} [cause: {}]: {}",
            m.what,
            m.cause,
            m.explanation
        );
        for e in m.evidence.iter().take(4) {
            crate::outln!("    evidence: {e}");
        }
        for line in broker_log_text(&m.broker_log, &mut shown) {
            crate::outln!("    {line}");
        }
    }
    for d in v.duplicates.iter().take(20) {
        crate::outln!(
            "  duplicated {} x{} [cause: {}]: {}",
            d.what,
            d.what.copies,
            d.cause,
            d.explanation
        );
        for e in d.evidence.iter().take(4) {
            crate::outln!("    evidence: {e}");
        }
        for line in broker_log_text(&d.broker_log, &mut shown) {
            crate::outln!("    {line}");
        }
        for (value, ids) in d.what.message_ids.iter().take(3) {
            let ids: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
            crate::outln!("    {value} at {}", ids.join(", "));
        }
    }
    for u in v.unexpected.iter().take(10) {
        crate::outln!("  unexpected {:?} at {}", u.payload_prefix, u.message_id);
    }
    for f in &v.faults {
        crate::outln!(
            "  fault {} on {}: {}{}",
            f.fault,
            f.target,
            f.action,
            f.recovery_ms
                .map(|r| format!(" (first commit {r}ms after the heal)"))
                .unwrap_or_default()
        );
    }
    if let Some(st) = &v.stall {
        crate::outln!(
            "  stalled: nothing committed from t={:.1}s to t={:.1}s with no fault active; {} attempt(s) failed",
            st.since_ms as f64 / 1000.0,
            st.detected_ms as f64 / 1000.0,
            st.failed_attempts
        );
        for (n, d) in &st.failures {
            crate::outln!("    {n}x: {d}");
        }
        for e in st.broker_log.iter().take(5) {
            crate::outln!(
                "    {} {} {}x about {} ({} .. {}): {}",
                e.node,
                e.level,
                e.count,
                e.topic,
                e.first,
                e.last,
                e.message
            );
        }
        if let Some(c) = &st.likely_cause {
            crate::outln!("  likely cause: {c}");
        }
        for p in &st.partitions {
            crate::outln!("    at the stall, {}", p.describe());
        }
    }
    if let Some(s) = &v.stuck_reads {
        for line in stuck_text(s) {
            crate::outln!("  {line}");
        }
    }
    if let Some(t) = &v.client_answers {
        for line in client_answers_text(t) {
            crate::outln!("  {line}");
        }
    }
    if v.status != Status::Pass {
        if let Some(seed) = v.seed {
            crate::outln!("seed: {seed}");
        }
        if let Some(r) = reproduce {
            crate::outln!("reproduce with: {r}");
        }
    }
}

/// `--pulsar-version`, `--client` and `--client-version` (of `run`, `soak` and `replay`) over
/// the scenario's keys.
pub fn apply_overrides(o: &Overrides, s: &mut scenario::Scenario) -> Result<()> {
    if let Some(v) = &o.pulsar_version {
        s.set_pulsar_version(v).map_err(Error::Usage)?;
    }
    if o.client.is_some() || o.client_version.is_some() {
        s.set_client(o.client.as_deref(), o.client_version.as_deref())
            .map_err(Error::Usage)?;
    }
    Ok(())
}

/// `--service-url`/`--admin-url`, `--adapter` and `--allow-destructive` (of `run` and
/// `soak`) over the scenario's keys.
pub fn apply_external(args: &ExternalArgs, s: &mut scenario::Scenario) -> Result<()> {
    if let (Some(service_url), Some(admin_url)) = (&args.service_url, &args.admin_url) {
        s.cluster = s.cluster.at_urls(service_url, admin_url);
    }
    if let Some(a) = &args.adapter {
        s.set_adapter(&crate::adapter::absolute(a));
    }
    if args.allow_destructive {
        s.allow_destructive();
    }
    if args.service_url.is_some()
        && s.faults
            .iter()
            .any(|f| matches!(f.kind, scenario::FaultKind::ReplyLoss { .. }))
    {
        return Err(Error::Usage(
            "--service-url/--admin-url name a cluster the harness did not start; reply_loss faults need the harness's proxy in front of a cluster it started".into(),
        ));
    }
    Ok(())
}

pub async fn run(args: RunArgs) -> Result<i32> {
    if let Some(dir) = &args.resume {
        let mut store = store::open_for(&args.store).await?;
        let outcome = runner::resume(dir, args.progress.into(), args.json).await?;
        print_verdict(&outcome.verdict, Some(&outcome.info.reproduce));
        let failed = store::record_or_report(&mut store, &outcome.run_dir, Source::Run).await;
        crate::outln!("run directory: {}", outcome.run_dir.display());
        return Ok(store::exit_with(exit_code(&outcome.verdict), failed));
    }
    let path = args
        .scenario
        .clone()
        .ok_or_else(|| Error::Usage("a scenario file is required".into()))?;
    let mut s = scenario::load(&path)?;
    apply_overrides(&args.overrides, &mut s)?;
    apply_external(&args.external, &mut s)?;
    let seed = crate::seed::given_or_drawn(args.seed.or(s.seed));
    if args.dry_run {
        let dry = runner::dry_run(&s, seed).await?;
        crate::out!("{}", dry.text);
        return Ok(dry.exit);
    }
    // Opened before the run: a store that cannot be used stops the command before anything
    // starts.
    let mut store = store::open_for(&args.store).await?;
    let req = Request {
        scenario: s,
        scenario_path: Some(path),
        seed,
        out: args.out.clone(),
        keep_cluster: args.keep_cluster,
        image: args.image.clone(),
        progress: args.progress.into(),
        json: args.json,
        reuse: None,
        announce_reproduce: true,
    };
    let outcome = runner::run(req).await?;
    if !args.json {
        print_verdict(&outcome.verdict, Some(&outcome.info.reproduce));
    } else {
        crate::errln!("{}", outcome.verdict.summary);
    }
    if let Some(junit) = &args.junit {
        crate::report::write_junit(junit, &outcome.info.scenario, &[outcome.junit_case()])?;
    }
    let failed = store::record_or_report(&mut store, &outcome.run_dir, Source::Run).await;
    crate::errln!("run directory: {}", outcome.run_dir.display());
    Ok(store::exit_with(exit_code(&outcome.verdict), failed))
}

pub async fn verify(args: VerifyArgs) -> Result<i32> {
    if !args.topic.starts_with("persistent://") {
        return Err(Error::Usage(
            "--topic must be persistent://<tenant>/<namespace>/<name>".into(),
        ));
    }
    let admin = crate::admin::Admin::new(&args.admin_url);
    let client = crate::txn::Client::new(&args.service_url, std::time::Duration::from_secs(10));
    let parts = crate::readback::partitions_of(&client, &args.topic)
        .await
        .map_err(|e| Error::Pulsar(format!("cannot reach {}: {e}", args.service_url)))?;
    client.close_all().await;
    if args.consume_only {
        let t = std::time::Instant::now();
        let n = crate::readback::consume_only(&args.service_url, &args.topic, args.idle_timeout)
            .await
            .map_err(|e| Error::Pulsar(format!("the read failed: {e}")))?;
        let s = t.elapsed().as_secs_f64();
        crate::outln!(
            "read {n} messages from {} partition(s) in {s:.2}s ({:.0} msg/s), nothing checked",
            parts.len(),
            n as f64 / s.max(1e-9)
        );
        return Ok(exit::PASS);
    }
    let mut incomplete = None;
    if let Err(e) = crate::readback::wait_settled(&admin, &parts, args.settle).await {
        crate::errln!("{e}");
        incomplete = Some(e);
    }
    // With a history, the read is checked against the partitions its run wrote.
    let history_partitions = match &args.history {
        Some(h) => crate::history::read(h)?.into_iter().find_map(|e| match e {
            Ok(crate::history::Event {
                body: crate::history::EventBody::RunStarted { partitions, .. },
                ..
            }) => Some(partitions),
            _ => None,
        }),
        None => None,
    };
    let rb = crate::readback::read_back(
        &args.service_url,
        &args.topic,
        args.count,
        args.idle_timeout,
        crate::readback::Shape {
            partitions: history_partitions,
            admin: Some(&admin),
        },
    )
    .await?;
    let ctx = Context {
        seed: None,
        readback_incomplete: incomplete.or(rb.incomplete.clone()),
        duplicate_ids: rb.duplicate_ids.clone(),
        ..Context::default()
    };
    let verdict = match &args.history {
        Some(h) => {
            let events = crate::history::read(h)?;
            checker::verdict(rb.all_findings, Some(events), &ctx)
        }
        None => checker::verdict(
            rb.all_findings,
            None::<Vec<std::result::Result<crate::history::Event, String>>>,
            &ctx,
        ),
    };
    if args.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&verdict).expect("verdicts serialize")
        );
    } else {
        print_verdict(&verdict, None);
        crate::errln!(
            "read {} messages from {} partition(s) in {:.1}s",
            verdict.received,
            rb.partitions,
            rb.elapsed.as_secs_f64()
        );
    }
    Ok(exit_code(&verdict))
}

#[cfg(test)]
mod tests;
