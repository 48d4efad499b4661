//! `packet_loss` on a container of the harness's cluster: a share of the packets leaving its
//! eth0 dropped from inside its network namespace (run in the tools image), by `tc netem` or,
//! where the kernel has no netem (or `PULSAR_CHAOS_FORCE_NFT` is set), an nftables table; the
//! scripts that do it and undo it.

use super::journal::Change;
use super::{Applied, Healed, Injector, Nemesis, NemesisError, Resolved};
use crate::cluster::Node;
use crate::plan::PlannedFault;

/// packet_loss.
pub struct PacketLoss {
    pub percent: u8,
}

/// Which mechanism a packet-loss fault used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossMethod {
    Netem,
    Nftables,
}

/// The nftables table a packet-loss fault adds (and its heal, or `clean`, deletes).
pub(super) const NFT_TABLE: &str = "pulsar_chaos";

/// The nft script that drops `percent`% of the packets leaving eth0 (as netem does on egress).
pub fn nft_loss_script(percent: u8) -> String {
    format!(
        "nft add table inet {NFT_TABLE} && \
         nft add chain inet {NFT_TABLE} out '{{ type filter hook output priority -150; policy accept; }}' && \
         nft add rule inet {NFT_TABLE} out oifname eth0 numgen random mod 100 '<' {percent} drop"
    )
}

pub fn netem_loss_script(percent: u8) -> String {
    format!("tc qdisc add dev eth0 root netem loss {percent}%")
}

/// Whether tc's failure means "this kernel has no netem" (fall back to nftables).
pub fn netem_unavailable(output: &str) -> bool {
    let o = output.to_ascii_lowercase();
    o.contains("specified qdisc kind is unknown")
        || o.contains("unknown qdisc")
        || o.contains("not supported")
        || o.contains("no such file or directory")
        || o.contains("not found")
}

impl Injector for PacketLoss {
    fn intent(&self, f: &PlannedFault, target: &Resolved) -> String {
        let name = target
            .node
            .as_ref()
            .map(|n| n.name.clone())
            .unwrap_or_default();
        format!(
            "drop {}% of the packets leaving eth0 of {name} for {}ms (tc netem, else nftables)",
            self.percent,
            f.hold().as_millis()
        )
    }

    async fn inject(
        &self,
        nem: &Nemesis,
        _f: &PlannedFault,
        target: &Resolved,
    ) -> Result<Applied, NemesisError> {
        let node = target.node()?;
        let target = target.label.clone();
        if std::env::var("PULSAR_CHAOS_FORCE_NFT").is_err() {
            let change = nem.journal(Change::Netem {
                container: node.id.clone(),
                tools_image: nem.tools_image.clone(),
            })?;
            let script = netem_loss_script(self.percent);
            let (code, out) = nem
                .docker()?
                .exec_in_netns(&node, &nem.tools_image, &script)
                .await?;
            if code == 0 {
                return Ok(Applied {
                    target,
                    action: format!("{script}  (in the network namespace of {})", node.name),
                    detail: "method: tc netem".into(),
                    node: Some(node),
                    found: None,
                    changes: vec![change],
                });
            }
            nem.journal_healed(change.0);
            if !netem_unavailable(&out) {
                return Err(NemesisError::Action {
                    action: script,
                    reason: format!("exit {code}: {}", out.trim()),
                });
            }
            tracing::info!(
                "tc netem refused ({}); falling back to nftables",
                out.trim()
            );
            return self
                .inject_nft(
                    nem,
                    node,
                    target,
                    format!("method: nftables (tc netem refused: {})", out.trim()),
                )
                .await;
        }
        self.inject_nft(
            nem,
            node,
            target,
            "method: nftables (PULSAR_CHAOS_FORCE_NFT set)".into(),
        )
        .await
    }

    async fn heal(&self, nem: &Nemesis, a: &Applied) -> Result<Healed, NemesisError> {
        let node = a.node.as_ref().expect("packet loss has a node");
        let mut actions = Vec::new();
        for (id, change) in &a.changes {
            let script = match change {
                Change::Netem { .. } => "tc qdisc del dev eth0 root".to_string(),
                Change::Nft { .. } => format!("nft delete table inet {NFT_TABLE}"),
                _ => continue,
            };
            let (code, out) = nem
                .docker()?
                .exec_in_netns(node, &nem.tools_image, &script)
                .await?;
            if code != 0 {
                return Err(NemesisError::Action {
                    action: script,
                    reason: format!("exit {code}: {}", out.trim()),
                });
            }
            nem.journal_healed(*id);
            actions.push(script);
        }
        Ok(Healed {
            action: format!(
                "{}  (in the network namespace of {})",
                actions.join("; "),
                node.name
            ),
            detail: String::new(),
        })
    }
}

impl PacketLoss {
    async fn inject_nft(
        &self,
        nem: &Nemesis,
        node: Node,
        target: String,
        detail: String,
    ) -> Result<Applied, NemesisError> {
        let change = nem.journal(Change::Nft {
            container: node.id.clone(),
            tools_image: nem.tools_image.clone(),
        })?;
        let script = nft_loss_script(self.percent);
        let (code, out) = nem
            .docker()?
            .exec_in_netns(&node, &nem.tools_image, &script)
            .await?;
        if code != 0 {
            // Remove a half-made table; the journal entry stays for `clean` if that fails too.
            let _ = nem
                .docker()?
                .exec_in_netns(
                    &node,
                    &nem.tools_image,
                    &format!("nft delete table inet {NFT_TABLE}"),
                )
                .await;
            nem.journal_healed(change.0);
            return Err(NemesisError::Action {
                action: script,
                reason: format!("exit {code}: {}", out.trim()),
            });
        }
        Ok(Applied {
            target,
            action: format!("{script}  (in the network namespace of {})", node.name),
            detail,
            node: Some(node),
            found: None,
            changes: vec![change],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_scripts() {
        assert_eq!(
            netem_loss_script(30),
            "tc qdisc add dev eth0 root netem loss 30%"
        );
        let nft = nft_loss_script(60);
        assert!(nft.contains("numgen random mod 100 '<' 60 drop"), "{nft}");
        assert!(nft.contains("oifname eth0"), "{nft}");
    }

    #[test]
    fn netem_refusals_are_recognised() {
        assert!(netem_unavailable("Error: Specified qdisc kind is unknown."));
        assert!(!netem_unavailable("RTNETLINK answers: File exists"));
    }
}
