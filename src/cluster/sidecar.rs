//! The sidecar: a short-lived container of the tools image that runs a script as root with
//! NET_ADMIN in another container's network namespace (tc, nft), labelled with the run and
//! removed once it exits.

use std::time::Duration;

use super::engine::{ContainerSpec, Engine, LABEL_ROLE};
use super::{run_labels, ClusterError, Role};

/// Run `script` as root with NET_ADMIN in the network namespace of container `target_id`,
/// in a sidecar labelled with the run (removed afterwards).
pub async fn exec_in_netns(
    engine: &Engine,
    run_id: &str,
    target_id: &str,
    target_label: &str,
    tools_image: &str,
    script: &str,
) -> Result<(i64, String), ClusterError> {
    let name = format!(
        "pc-{run_id}-sidecar-{target_label}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or(0)
    );
    let mut labels = run_labels(run_id);
    labels.insert(LABEL_ROLE.into(), Role::Sidecar.as_str().into());
    let spec = ContainerSpec {
        name,
        image: tools_image.to_string(),
        cmd: vec!["sh".into(), "-c".into(), script.to_string()],
        env: vec![],
        labels,
        network: None,
        network_mode: Some(format!("container:{target_id}")),
        publish: vec![],
        cap_add: vec!["NET_ADMIN".into()],
        user: Some("0".into()),
    };
    let id = engine.create_container(&spec).await?;
    let result = async {
        engine.start(&id).await?;
        let code = engine.wait_exit(&id, Duration::from_secs(60)).await?;
        let out = engine.logs_tail(&id, 200).await;
        Ok::<_, ClusterError>((code, out))
    }
    .await;
    let _ = engine.remove(&id).await;
    result
}
