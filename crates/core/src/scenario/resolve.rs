//! The way back: the validated scenario written in the file's own shape, defaults filled in
//! (`Scenario::resolved`, the `scenario.yaml` a run directory keeps and a rerun parses), and
//! `Scenario::set_pulsar_version`, which changes the scenario and its resolved copy together.

use std::time::Duration;

use super::file::{ClusterFile, Dur, WorkloadFile};
use super::kinds::{Jvm, Topology};
use super::model::{ClusterSpec, Scenario, Workload};

pub(super) fn resolve_cluster_file(c: &ClusterSpec) -> ClusterFile {
    match c {
        ClusterSpec::External {
            service_url,
            admin_url,
            brokers,
            bookies,
            coordinators,
        } => ClusterFile {
            topology: Some(Topology::External),
            service_url: Some(service_url.clone()),
            admin_url: Some(admin_url.clone()),
            brokers: Some(*brokers),
            bookies: Some(*bookies),
            coordinators: Some(*coordinators),
            ..ClusterFile::default()
        },
        ClusterSpec::Docker(d) => ClusterFile {
            topology: Some(d.topology),
            image: d.image.clone(),
            pulsar_version: Some(d.pulsar_version.clone()),
            brokers: (d.topology == Topology::Cluster).then_some(d.brokers),
            bookies: (d.topology == Topology::Cluster).then_some(d.bookies),
            coordinators: (d.topology == Topology::Cluster).then_some(d.coordinators),
            binary_port: (d.topology == Topology::Standalone).then_some(d.binary_port),
            http_port: (d.topology == Topology::Standalone).then_some(d.http_port),
            ready_timeout: Some(Dur(d.ready_timeout)),
            jvm: (d.jvm != Jvm::Standard).then_some(d.jvm),
            broker_config: d
                .broker_config
                .iter()
                .map(|(k, v)| (k.clone(), super::file::ConfValue::Text(v.clone())))
                .collect(),
            service_url: None,
            admin_url: None,
        },
    }
}

pub(super) fn resolve_workload_file(w: &Workload) -> WorkloadFile {
    WorkloadFile {
        topic: w.topic.clone(),
        unique_topic: Some(w.unique_topic),
        partitions: Some(w.partitions),
        messages: w.messages,
        txn_size: Some(w.txn_size),
        batch_size: Some(w.batch_size),
        concurrency: Some(w.concurrency),
        commits_in_flight: (w.transactions && w.transform.is_none()).then_some(w.commits_in_flight),
        txn_timeout: Some(Dur(w.txn_timeout)),
        resend: Some(w.resend),
        message_size: Some(w.message_size),
        rate: w.rate,
        abort_every: w.abort_every,
        transactions: Some(w.transactions),
        op_timeout: Some(Dur(w.op_timeout)),
        deadline: Some(Dur(w.deadline)),
        stall_timeout: Some(Dur(w.stall_timeout.unwrap_or(Duration::ZERO))),
        settle_timeout: Some(Dur(w.settle_timeout)),
        deduplication: Some(w.deduplication),
        client: w.client.is_foreign().then_some(w.client),
        client_version: w.client_version.clone(),
        kind: w.transform.map(|_| super::WorkloadKind::Transform),
        consumers: w.transform.map(|t| t.consumers),
        subscription_type: w.transform.map(|t| t.subscription_type),
        function: w.transform.map(|t| t.function),
        input_transactional: w.transform.map(|t| t.input_transactional),
        input_abort_every: w.transform.and_then(|t| t.input_abort_every),
        input_batch_size: w.transform.and_then(|t| t.input_batch_size),
        // Written only when not the default, so the resolved text (and its hash in the
        // results store) of every scenario without the key stays as it was.
        conflict_probe: w
            .transform
            .map(|t| t.conflict_probe)
            .filter(|p| *p != super::ConflictProbe::Abort),
    }
}

impl Scenario {
    /// The resolved scenario as YAML (for the run directory).
    pub fn resolved_yaml(&self) -> String {
        serde_yaml_ng::to_string(&self.resolved).unwrap_or_default()
    }
}

impl Scenario {
    /// Run another Pulsar version than the file names (`--pulsar-version`): recorded in the
    /// resolved scenario too, so the run directory's copy reproduces it without flags.
    pub fn set_pulsar_version(&mut self, version: &str) -> Result<(), String> {
        crate::versions::validate(version)?;
        match &mut self.cluster {
            ClusterSpec::Docker(d) => d.pulsar_version = version.to_string(),
            ClusterSpec::External { .. } => return Err(
                "--pulsar-version applies to a cluster the harness starts, not to an external one"
                    .into(),
            ),
        }
        self.resolved.cluster = resolve_cluster_file(&self.cluster);
        Ok(())
    }
}

impl Scenario {
    /// Run the cluster's JVMs another way than the file says (`PULSAR_CHAOS_JVM`): recorded
    /// in the resolved scenario, so the run directory's copy reproduces it. Nothing to do for
    /// a cluster the harness did not start.
    pub fn set_jvm(&mut self, jvm: Jvm) {
        if let ClusterSpec::Docker(d) = &mut self.cluster {
            d.jvm = jvm;
            self.resolved.cluster = resolve_cluster_file(&self.cluster);
        }
    }
}

impl Scenario {
    /// Run the workload through another client than the file names (`--client`,
    /// `--client-version`), checked as the scenario's own keys are; recorded in the resolved
    /// scenario too.
    pub fn set_client(
        &mut self,
        client: Option<&str>,
        version: Option<&str>,
    ) -> Result<(), String> {
        use crate::clients::ClientKind;
        let kind = match client {
            Some(c) => ClientKind::parse(c)
                .ok_or_else(|| format!("--client {c}: not a client; one of own, java, go"))?,
            None => self.workload.client,
        };
        let version = match version {
            Some(v) => Some(v.to_string()),
            None if kind == ClientKind::Java => self.workload.client_version.clone(),
            None => None,
        };
        if let Some((key, why)) = crate::clients::misfit(kind, version.as_deref()) {
            let flag = if key == "client" {
                "--client"
            } else {
                "--client-version"
            };
            return Err(format!("{flag}: {why}"));
        }
        if !kind.is_foreign() && self.workload.transform.is_some() && self.workload.deduplication {
            return Err(format!(
                "--client {kind}: deduplication with `kind: transform` {}",
                super::validate::transform::DEDUP_OWN_TRANSFORM
            ));
        }
        // The file's own key is refused the same way (`validate_transform`): a run whose
        // scenario asks for a probe that would not run must not pass as if it had.
        if kind.is_foreign()
            && self
                .workload
                .transform
                .as_ref()
                .is_some_and(|t| t.conflict_probe != super::ConflictProbe::Abort)
        {
            return Err(format!(
                "--client {kind}: `conflict_probe: commit` {}",
                super::validate::transform::PROBE_OWN_ONLY
            ));
        }
        self.workload.client = kind;
        self.workload.client_version = version.clone();
        self.resolved.workload.client = kind.is_foreign().then_some(kind);
        self.resolved.workload.client_version = version;
        Ok(())
    }

    /// Use this adapter file (an absolute path); the resolved copy names it too, so a rerun
    /// from the run directory uses the same.
    pub fn set_adapter(&mut self, path: &str) {
        self.adapter = Some(path.to_string());
        self.resolved.adapter = Some(path.to_string());
    }

    /// Let destructive faults touch a cluster the harness did not start (`--allow-destructive`).
    pub fn allow_destructive(&mut self) {
        self.allow_destructive = true;
        self.resolved.allow_destructive = Some(true);
    }
}
