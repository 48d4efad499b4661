//! Validation: a [`ScenarioFile`] as parsed -> a [`Scenario`], every value checked and every
//! default filled in. An error is the path of the offending key and one sentence;
//! `parse` turns the path into a line and column.

mod fault;
pub(super) mod transform;

use std::time::Duration;

use super::file::{ClusterFile, Dur, ScenarioFile, WorkloadFile};
use super::kinds::{ResendPolicy, Topology};
use super::locate::Seg;
use super::model::{ClusterSpec, DockerCluster, Sabotage, Scenario, Workload};
use super::resolve::{resolve_cluster_file, resolve_workload_file};

use fault::validate_fault;

/// An invalid value: the path of its key and what is wrong with it, in one sentence.
type Invalid = (Vec<Seg>, String);

fn key(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

fn err<T>(path: &[&str], msg: impl Into<String>) -> Result<T, Invalid> {
    Err((path.iter().map(|s| key(s)).collect(), msg.into()))
}

/// Check every value and fill every default. Pure.
pub fn validate(raw: ScenarioFile) -> Result<Scenario, Invalid> {
    if raw.name.trim().is_empty() {
        return err(&["name"], "must not be empty");
    }
    if !raw
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return err(
            &["name"],
            "may use only letters, digits, '-', '_' and '.' (it names run directories)",
        );
    }
    let cluster = validate_cluster(&raw.cluster)?;
    let workload = validate_workload(&raw.workload)?;
    transform::check_sabotage(&raw)?;
    let topology = match &cluster {
        ClusterSpec::Docker(d) => d.topology,
        ClusterSpec::External { .. } => Topology::External,
    };
    let (brokers, bookies, coordinators) = match &cluster {
        ClusterSpec::Docker(d) if d.topology != Topology::Cluster => (d.brokers, 0, d.coordinators),
        c => c.counts(),
    };
    let shape = fault::Shape {
        topology,
        brokers,
        bookies,
        coordinators,
    };
    let mut faults = Vec::new();
    for (i, f) in raw.faults.iter().enumerate() {
        faults.push(
            validate_fault(i, f, shape, &workload).map_err(|(mut p, m)| {
                let mut full = vec![key("faults"), Seg::Index(i)];
                full.append(&mut p);
                (full, m)
            })?,
        );
    }
    let mut names = std::collections::BTreeSet::new();
    for f in &faults {
        if !names.insert(f.name.clone()) {
            return Err((
                vec![key("faults"), Seg::Index(f.index), key("name")],
                format!("the fault name '{}' is used twice", f.name),
            ));
        }
    }
    let sabotage = match &raw.sabotage {
        None => Sabotage::default(),
        Some(s) => {
            for (field, list) in [("skip", &s.skip), ("duplicate", &s.duplicate)] {
                if let Some(n) = list.iter().find(|n| **n >= workload.messages) {
                    return err(
                        &["sabotage", field],
                        format!(
                            "{n} is outside the workload's numbers [0, {})",
                            workload.messages
                        ),
                    );
                }
            }
            Sabotage {
                skip: s.skip.clone(),
                duplicate: s.duplicate.clone(),
            }
        }
    };
    for (version, outcomes) in &raw.expect {
        if let Err(m) = crate::versions::validate(version) {
            return Err((vec![key("expect"), key(version)], m));
        }
        if outcomes.is_empty() {
            return Err((
                vec![key("expect"), key(version)],
                "name at least one outcome: pass, violation, inconclusive, stalled or stuck".into(),
            ));
        }
    }
    let remedies = validate_remedies(raw.remedies.as_deref())?;
    let mut resolved = raw.clone();
    resolved.remedies = Some(remedies.clone());
    resolved.cluster = resolve_cluster_file(&cluster);
    resolved.workload = resolve_workload_file(&workload);
    Ok(Scenario {
        name: raw.name.clone(),
        description: raw.description.clone(),
        seed: raw.seed,
        cluster,
        workload,
        faults,
        sabotage,
        expect: raw.expect.clone(),
        remedies,
        adapter: raw.adapter.clone(),
        allow_destructive: raw.allow_destructive.unwrap_or(false),
        resolved,
    })
}

/// The remedies to try, in order: all of them when the key is absent; each named once.
fn validate_remedies(
    named: Option<&[crate::stuck::Remedy]>,
) -> Result<Vec<crate::stuck::Remedy>, Invalid> {
    let remedies = named.map_or_else(|| crate::stuck::Remedy::ALL.to_vec(), <[_]>::to_vec);
    for (i, r) in remedies.iter().enumerate() {
        if remedies[..i].contains(r) {
            return Err((
                vec![key("remedies")],
                format!("`{r}` is named twice; name each remedy once, in the order to try them"),
            ));
        }
    }
    Ok(remedies)
}

fn validate_cluster(c: &ClusterFile) -> Result<ClusterSpec, Invalid> {
    let topology = cluster_topology(c)?;
    if topology == Topology::External {
        return validate_external(c);
    }
    let (brokers, bookies, coordinators) = cluster_sizes(c, topology)?;
    let binary_port = c.binary_port.unwrap_or(6650);
    let http_port = c.http_port.unwrap_or(8080);
    if binary_port == 0 || http_port == 0 || binary_port == http_port {
        return err(
            &["cluster", "binary_port"],
            "binary_port and http_port must be two different non-zero ports",
        );
    }
    if topology == Topology::Cluster && (c.binary_port.is_some() || c.http_port.is_some()) {
        return err(&["cluster", "binary_port"], "ports are published by the standalone topology only; cluster brokers are reached on their own addresses");
    }
    let ready_timeout = c
        .ready_timeout
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(300));
    if ready_timeout < Duration::from_secs(1) {
        return err(&["cluster", "ready_timeout"], "must be at least 1s");
    }
    if let Some(img) = &c.image {
        if img.trim().is_empty() || img.contains(char::is_whitespace) {
            return err(
                &["cluster", "image"],
                "must be an image reference such as apachepulsar/pulsar:4.0.7",
            );
        }
    }
    let pulsar_version = c
        .pulsar_version
        .clone()
        .unwrap_or_else(|| crate::versions::DEFAULT.to_string());
    if let Err(m) = crate::versions::validate(&pulsar_version) {
        return err(&["cluster", "pulsar_version"], &m);
    }
    Ok(ClusterSpec::Docker(DockerCluster {
        topology,
        image: c.image.clone(),
        pulsar_version,
        brokers,
        bookies,
        coordinators,
        binary_port,
        http_port,
        ready_timeout,
        jvm: c.jvm.unwrap_or_default(),
        broker_config: validate_broker_config(&c.broker_config)?,
    }))
}

/// Settings the harness sets itself on every node it starts (addresses, ports, the metadata
/// store, transactions, retention): a scenario may not change them.
pub const HARNESS_BROKER_SETTINGS: [&str; 12] = [
    "advertisedAddress",
    "brokerServicePort",
    "webServicePort",
    "clusterName",
    "metadataStoreUrl",
    "configurationMetadataStoreUrl",
    "transactionCoordinatorEnabled",
    "systemTopicEnabled",
    "brokerDeleteInactiveTopicsEnabled",
    "defaultRetentionTimeInMinutes",
    "defaultRetentionSizeInMB",
    "bindAddress",
];

/// One broker setting as `cluster.broker_config` or `cluster up --broker-config` give it: a
/// key as Pulsar spells it (letters, digits, `_`, `.`), a value on one line, none of the
/// harness's own settings.
pub fn check_broker_setting(k: &str, v: &str) -> Result<(), String> {
    let well_formed = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !well_formed {
        return Err("a broker setting is named as in broker.conf (letters, digits, `_`, `.`), such as acknowledgmentAtBatchIndexLevelEnabled".into());
    }
    if HARNESS_BROKER_SETTINGS.contains(&k) {
        return Err(format!(
            "`{k}` is set by the harness on every node it starts; it cannot be changed here"
        ));
    }
    if v.contains(['\n', '\r']) {
        return Err("a broker setting's value is one line".into());
    }
    Ok(())
}

fn validate_broker_config(
    raw: &std::collections::BTreeMap<String, super::file::ConfValue>,
) -> Result<std::collections::BTreeMap<String, String>, Invalid> {
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in raw {
        let v = v.to_string();
        check_broker_setting(k, &v)
            .map_err(|m| (vec![key("cluster"), key("broker_config"), key(k)], m))?;
        out.insert(k.clone(), v);
    }
    Ok(out)
}

/// The topology as written, or the one the other keys imply: external when a URL is given,
/// else standalone.
fn cluster_topology(c: &ClusterFile) -> Result<Topology, Invalid> {
    let external = c.service_url.is_some() || c.admin_url.is_some();
    Ok(match (c.topology, external) {
        (Some(Topology::External), _) | (None, true) => Topology::External,
        (Some(t), true) => {
            return err(
                &["cluster", "service_url"],
                format!("service_url/admin_url name an existing cluster; they do not go with topology '{t}'"),
            )
        }
        (Some(t), false) => t,
        (None, false) => Topology::Standalone,
    })
}

/// A cluster that is already running: its two URLs, and none of the keys of a cluster the
/// harness starts.
fn validate_external(c: &ClusterFile) -> Result<ClusterSpec, Invalid> {
    let service_url = match &c.service_url {
        Some(u) if u.starts_with("pulsar://") => u.clone(),
        Some(_) => return err(&["cluster", "service_url"], "must start with pulsar://"),
        None => {
            return err(
                &["cluster"],
                "an external cluster needs service_url (pulsar://...)",
            )
        }
    };
    let admin_url = match &c.admin_url {
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => {
            u.trim_end_matches('/').to_string()
        }
        Some(_) => {
            return err(
                &["cluster", "admin_url"],
                "must start with http:// or https://",
            )
        }
        None => {
            return err(
                &["cluster"],
                "an external cluster needs admin_url (http://...)",
            )
        }
    };
    for (field, set) in [
        ("image", c.image.is_some()),
        ("pulsar_version", c.pulsar_version.is_some()),
        ("binary_port", c.binary_port.is_some()),
        ("http_port", c.http_port.is_some()),
        ("jvm", c.jvm.is_some()),
        ("broker_config", !c.broker_config.is_empty()),
    ] {
        if set {
            return err(&["cluster", field], "does not apply to an external cluster");
        }
    }
    // The counts the plan draws targets from; discovery checks them when a run starts.
    let count = |field: &str, v: Option<u32>, max: u32| match v.unwrap_or(1) {
        n if (1..=max).contains(&n) => Ok(n),
        _ => err(&["cluster", field], format!("must be between 1 and {max}")),
    };
    Ok(ClusterSpec::External {
        service_url,
        admin_url,
        brokers: count("brokers", c.brokers, 64)?,
        bookies: count("bookies", c.bookies, 64)?,
        coordinators: count("coordinators", c.coordinators, 64)?,
    })
}

/// How many brokers, bookies and transaction coordinators a cluster the harness starts has.
fn cluster_sizes(c: &ClusterFile, topology: Topology) -> Result<(u32, u32, u32), Invalid> {
    let brokers = c
        .brokers
        .unwrap_or(if topology == Topology::Cluster { 2 } else { 1 });
    let bookies = c.bookies.unwrap_or(1);
    if topology == Topology::Standalone {
        if brokers != 1 {
            return err(
                &["cluster", "brokers"],
                "standalone has exactly one broker; use topology: cluster for more",
            );
        }
        if c.bookies.is_some() {
            return err(
                &["cluster", "bookies"],
                "standalone has its own bookie; use topology: cluster to set bookies",
            );
        }
    } else {
        if !(1..=5).contains(&brokers) {
            return err(&["cluster", "brokers"], "must be between 1 and 5");
        }
        if !(1..=3).contains(&bookies) {
            return err(&["cluster", "bookies"], "must be between 1 and 3");
        }
    }
    let coordinators = c.coordinators.unwrap_or(1);
    if !(1..=16).contains(&coordinators) {
        return err(&["cluster", "coordinators"], "must be between 1 and 16");
    }
    if topology == Topology::Standalone && c.coordinators.is_some() && coordinators != 1 {
        return err(
            &["cluster", "coordinators"],
            "standalone creates its own coordinators; set this with topology: cluster",
        );
    }
    Ok((brokers, bookies, coordinators))
}

fn validate_workload(w: &WorkloadFile) -> Result<Workload, Invalid> {
    let topic = validate_topic(&w.topic)?;
    let partitions = w.partitions.unwrap_or(1);
    if !(1..=64).contains(&partitions) {
        return err(&["workload", "partitions"], "must be between 1 and 64");
    }
    let messages = w.messages;
    if messages == 0 {
        return err(&["workload", "messages"], "must be at least 1");
    }
    let txn_size = w.txn_size.unwrap_or(100);
    if txn_size == 0 {
        return err(&["workload", "txn_size"], "must be at least 1");
    }
    if txn_size > 100_000 {
        return err(&["workload", "txn_size"], "must be at most 100000");
    }
    let batch_size = w.batch_size.unwrap_or(100);
    if !(1..=1000).contains(&batch_size) {
        return err(&["workload", "batch_size"], "must be between 1 and 1000");
    }
    let concurrency = w.concurrency.unwrap_or(4);
    if !(1..=1024).contains(&concurrency) {
        return err(&["workload", "concurrency"], "must be between 1 and 1024");
    }
    let commits_in_flight = validate_commits_in_flight(w)?;
    let txn_timeout = w
        .txn_timeout
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(30));
    if txn_timeout < Duration::from_secs(1) {
        return err(&["workload", "txn_timeout"], "must be at least 1s");
    }
    let message_size = w.message_size.unwrap_or(0);
    if message_size > 1024 * 1024 {
        return err(&["workload", "message_size"], "must be at most 1 MiB");
    }
    if let Some(0) = w.rate {
        return err(
            &["workload", "rate"],
            "must be at least 1 (leave it out for no limit)",
        );
    }
    if let Some(k) = w.abort_every {
        if k < 1 {
            return err(&["workload", "abort_every"], "must be at least 1");
        }
    }
    if w.transactions == Some(false) && w.abort_every.is_some() {
        return err(
            &["workload", "abort_every"],
            "needs transactions (transactions: false sends plainly)",
        );
    }
    let op_timeout = w.op_timeout.map(|d| d.0).unwrap_or(Duration::from_secs(10));
    if op_timeout < Duration::from_millis(100) {
        return err(&["workload", "op_timeout"], "must be at least 100ms");
    }
    let deadline = w.deadline.map(|d| d.0).unwrap_or(Duration::from_secs(1800));
    if deadline < Duration::from_secs(1) {
        return err(&["workload", "deadline"], "must be at least 1s");
    }
    let stall_timeout = validate_stall_timeout(w.stall_timeout)?;
    // The coordinator aborts what is left open once it times out, but after broker and
    // ZooKeeper restarts that took minutes to reach every partition (two soak iterations of
    // `mixed` were inconclusive with `txn_timeout + 30s`; the transactions ended minutes
    // later). The wait is by condition: a healthy run stops waiting as soon as nothing is open.
    let settle_timeout = w
        .settle_timeout
        .map(|d| d.0)
        .unwrap_or(txn_timeout + Duration::from_secs(240));
    if settle_timeout < Duration::from_secs(1) {
        return err(&["workload", "settle_timeout"], "must be at least 1s");
    }
    let transform = transform::validate_transform(w, concurrency)?;
    let client = w.client.unwrap_or_default();
    if let Some((k, why)) = crate::clients::misfit(client, w.client_version.as_deref()) {
        return err(&["workload", k], why);
    }
    // A transform retries an unknown commit and never resends (see `validate_transform`).
    let default_resend = match transform {
        Some(_) => ResendPolicy::RetryCommit,
        None => ResendPolicy::Verify,
    };
    Ok(Workload {
        topic,
        unique_topic: w.unique_topic.unwrap_or(true),
        partitions,
        messages,
        txn_size,
        batch_size,
        concurrency,
        commits_in_flight,
        txn_timeout,
        resend: w.resend.unwrap_or(default_resend),
        message_size,
        rate: w.rate,
        abort_every: w.abort_every,
        transactions: w.transactions.unwrap_or(true),
        op_timeout,
        deadline,
        stall_timeout,
        deduplication: w.deduplication.unwrap_or(false),
        client,
        client_version: w.client_version.clone(),
        settle_timeout,
        transform,
    })
}

/// The workload's topic: a persistent topic, named whole (not one of its partitions).
fn validate_topic(topic: &str) -> Result<String, Invalid> {
    let topic = topic.to_string();
    let parts: Vec<&str> = topic
        .strip_prefix("persistent://")
        .map(|r| r.split('/').collect())
        .unwrap_or_default();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return err(
            &["workload", "topic"],
            "must be persistent://<tenant>/<namespace>/<name> (transactions need a persistent topic)",
        );
    }
    if parts[2].contains("-partition-") {
        return err(
            &["workload", "topic"],
            "names a partition; name the topic and set partitions instead",
        );
    }
    Ok(topic)
}

/// How long no commit with no fault active stops the producer: 5 minutes unless set, never
/// with `0s`.
fn validate_stall_timeout(stall_timeout: Option<Dur>) -> Result<Option<Duration>, Invalid> {
    Ok(match stall_timeout.map(|d| d.0) {
        None => Some(Duration::from_secs(300)),
        Some(d) if d.is_zero() => None,
        Some(d) if d < Duration::from_secs(5) => {
            return err(
                &["workload", "stall_timeout"],
                "must be at least 5s (or 0s: never stop on a stall)",
            )
        }
        Some(d) => Some(d),
    })
}

/// Commits one producer worker may have under way at once when the scenario does not say.
/// Commit latency (8 ms on a quiet standalone) is what bounds small transactions: with one,
/// a worker commits at most about 125 transactions a second.
pub const DEFAULT_COMMITS_IN_FLIGHT: u32 = 4;

/// `commits_in_flight`: 1 to 64, default [`DEFAULT_COMMITS_IN_FLIGHT`]; refused where nothing
/// commits this way (`transactions: false`, `kind: transform`), 1 there.
fn validate_commits_in_flight(w: &WorkloadFile) -> Result<u32, Invalid> {
    let path = ["workload", "commits_in_flight"];
    let producer_commits =
        w.transactions != Some(false) && w.kind.unwrap_or_default() == super::WorkloadKind::Produce;
    match w.commits_in_flight {
        Some(_) if w.transactions == Some(false) => err(
            &path,
            "needs transactions (transactions: false commits nothing)",
        ),
        Some(_) if !producer_commits => err(
            &path,
            "does not go with `kind: transform` (each consumer commits one transaction at a time)",
        ),
        Some(k) if !(1..=64).contains(&k) => err(&path, "must be between 1 and 64"),
        Some(k) => Ok(k),
        None if producer_commits => Ok(DEFAULT_COMMITS_IN_FLIGHT),
        None => Ok(1),
    }
}
