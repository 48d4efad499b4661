//! `reply_loss` on the producer's connections (no node of the cluster is touched): the fault
//! arms the run's proxy ([`proxy`]) to drop the broker's replies to one kind of command, and
//! its heal disarms it. A count-limited fault is spent once its count is used up.

pub mod proxy;

pub use proxy::{Addressing, Pick, ReplyLossProxy};

use std::sync::Arc;
use std::time::Duration;

use super::{Applied, Healed, Nemesis, NemesisError, Resolved};
use crate::plan::PlannedFault;
use crate::scenario::{FaultKind, ReplyKind};

impl Nemesis {
    /// Arm and disarm `reply_loss` faults on this proxy.
    pub fn with_reply_loss(mut self, proxy: Arc<ReplyLossProxy>) -> Nemesis {
        self.reply_loss = Some(proxy);
        self
    }

    /// Resolves when the fault has nothing more to do before its heal (a `reply_loss` count
    /// used up); never for other faults.
    pub async fn spent(&self, f: &PlannedFault) {
        let rx = match (&f.kind, &self.reply_loss) {
            (FaultKind::ReplyLoss { .. }, Some(p)) => p.spent(&f.name),
            _ => None,
        };
        match rx {
            Some(mut rx) => {
                if rx.wait_for(|s| *s).await.is_err() {
                    std::future::pending::<()>().await
                }
            }
            None => std::future::pending::<()>().await,
        }
    }

    fn proxy(&self) -> Result<&Arc<ReplyLossProxy>, NemesisError> {
        self.reply_loss
            .as_ref()
            .ok_or_else(|| NemesisError::Action {
                action: "arm the reply_loss proxy".into(),
                reason: "the producer does not go through a proxy in this run".into(),
            })
    }
}

/// reply_loss: what to drop, and for how long.
pub struct ReplyLoss {
    pub reply: ReplyKind,
    pub count: Option<u32>,
    pub probability: Option<f64>,
    pub duration: Option<Duration>,
}

impl ReplyLoss {
    pub(super) fn intent(&self, f: &PlannedFault) -> String {
        let pick = match (self.count, self.probability) {
            (Some(n), _) => format!("the next {n}"),
            (None, Some(p)) => format!(
                "each with probability {p} (draws seeded {})",
                f.draw_seed.unwrap_or(0)
            ),
            (None, None) => "none".into(),
        };
        let until = match self.duration {
            Some(d) => format!("for {}ms", d.as_millis()),
            None => "until spent or the producer finishes".into(),
        };
        format!(
            "arm the proxy: drop {pick} {} replies to the producer and close each such connection, {until}",
            self.reply.command()
        )
    }

    pub(super) fn inject(
        &self,
        nem: &Nemesis,
        f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        let pick = match (self.count, self.probability, f.draw_seed) {
            (Some(n), _, _) => Pick::Count(n),
            (None, Some(p), Some(seed)) => Pick::Probability {
                p,
                rng: crate::seed::Rng::new(seed),
            },
            _ => {
                return Err(NemesisError::Action {
                    action: "arm the reply_loss proxy".into(),
                    reason: "the plan gives neither a count nor a probability with its draws"
                        .into(),
                })
            }
        };
        nem.proxy()?.arm(&f.name, self.reply, pick);
        Ok(Applied {
            target: target.label.clone(),
            action: format!("armed the proxy for {} replies", self.reply.command()),
            detail: self.intent(f),
            node: None,
            found: None,
            changes: Vec::new(),
        })
    }

    pub(super) fn heal(&self, nem: &Nemesis, f: &PlannedFault) -> Result<Healed, NemesisError> {
        let d = nem.proxy()?.disarm(&f.name);
        Ok(Healed {
            action: "disarmed the proxy: every reply is forwarded again".into(),
            detail: match d {
                Some(d) => format!(
                    "dropped {} of {} {} replies seen while armed",
                    d.dropped,
                    d.matched,
                    self.reply.command()
                ),
                None => "was not armed".into(),
            },
        })
    }
}
