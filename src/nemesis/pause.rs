//! `pause` on a container of the harness's cluster: `docker pause`, held, `docker unpause`.

use super::journal::Change;
use super::{Applied, Healed, Injector, Nemesis, NemesisError, Resolved};
use crate::plan::PlannedFault;

/// pause.
pub struct Pause;

impl Injector for Pause {
    fn intent(&self, f: &PlannedFault, target: &Resolved) -> String {
        let name = target
            .node
            .as_ref()
            .map(|n| n.name.clone())
            .unwrap_or_default();
        format!(
            "docker pause {name}; after {}ms: docker unpause {name}",
            f.hold().as_millis()
        )
    }

    async fn inject(
        &self,
        nem: &Nemesis,
        f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        let node = target.node()?;
        let target = target.label.clone();
        let change = nem.journal(Change::Paused {
            container: node.id.clone(),
        })?;
        nem.docker()?.pause(&node).await?;
        Ok(Applied {
            target,
            action: format!("docker pause {}", node.name),
            detail: format!("frozen for {}ms", f.hold().as_millis()),
            node: Some(node),
            found: None,
            changes: vec![change],
        })
    }

    async fn heal(&self, nem: &Nemesis, a: &Applied) -> Result<Healed, NemesisError> {
        let node = a.node.as_ref().expect("pauses have a node");
        nem.docker()?.unpause(node).await?;
        for (id, _) in &a.changes {
            nem.journal_healed(*id);
        }
        Ok(Healed {
            action: format!("docker unpause {}", node.name),
            detail: String::new(),
        })
    }
}
