//! `topic_unload` through the admin API (the workload's topic, a named topic, or a namespace):
//! the topic is loaded again on its next use, so the heal does nothing.

use super::{Applied, Healed, Injector, Nemesis, NemesisError, Resolved};
use crate::plan::PlannedFault;
use crate::scenario::UnloadScope;

/// topic_unload.
pub struct Unload {
    pub scope: UnloadScope,
}

impl Unload {
    pub(super) fn intent_with(&self, nem: &Nemesis) -> String {
        unload_call(nem.admin.base(), &self.scope, &nem.topic)
    }
}

/// The admin API call of an unload of `scope` (`topic`: the workload's), e.g.
/// "PUT http://h:8080/admin/v2/persistent/public/default/t/unload".
pub fn unload_call(admin_base: &str, scope: &UnloadScope, topic: &str) -> String {
    match scope {
        UnloadScope::WorkloadTopic => format!(
            "PUT {admin_base}/admin/v2/{}/unload",
            crate::admin::topic_path(topic)
        ),
        UnloadScope::Topic(t) => format!(
            "PUT {admin_base}/admin/v2/{}/unload",
            crate::admin::topic_path(t)
        ),
        UnloadScope::Namespace(ns) => format!("PUT {admin_base}/admin/v2/namespaces/{ns}/unload"),
    }
}

impl Injector for Unload {
    fn intent(&self, _f: &PlannedFault, _target: &Resolved) -> String {
        "an unload through the admin API".into()
    }

    async fn inject(
        &self,
        nem: &Nemesis,
        _f: &PlannedFault,
        _target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        let (action, result) = match &self.scope {
            UnloadScope::WorkloadTopic => {
                let path = crate::admin::topic_path(&nem.topic);
                (
                    format!("PUT {}/admin/v2/{path}/unload", nem.admin.base()),
                    nem.admin.unload_topic(&nem.topic).await,
                )
            }
            UnloadScope::Topic(t) => {
                let path = crate::admin::topic_path(t);
                (
                    format!("PUT {}/admin/v2/{path}/unload", nem.admin.base()),
                    nem.admin.unload_topic(t).await,
                )
            }
            UnloadScope::Namespace(ns) => (
                format!("PUT {}/admin/v2/namespaces/{ns}/unload", nem.admin.base()),
                nem.admin.unload_namespace(ns).await,
            ),
        };
        result.map_err(|e| NemesisError::Action {
            action: action.clone(),
            reason: e.to_string(),
        })?;
        Ok(Applied {
            target: "cluster (admin API)".into(),
            action,
            detail: "the topic is loaded again on its next use".into(),
            node: None,
            found: None,
            changes: Vec::new(),
        })
    }

    async fn heal(&self, _nem: &Nemesis, _a: &Applied) -> Result<Healed, NemesisError> {
        Ok(Healed {
            action: "none (an unload needs no heal)".into(),
            detail: String::new(),
        })
    }
}
