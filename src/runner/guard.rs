//! The retention guard of a run's topics: before anything is produced, the durable
//! subscription `pulsar-chaos-retain` at the earliest position on the workload's topic (and a
//! transform's input), on every partition. Without it, a cluster with Pulsar's default
//! retention (0) deletes a ledger no subscription needs after a reload or a rollover, and the
//! read-back would show that data as lost by Pulsar. On a cluster the harness did not start,
//! a guard Pulsar refuses refuses the run (exit 2, with Pulsar's answer); on the harness's own
//! clusters a failure is the infrastructure's (exit 3).

use crate::admin::{Admin, AdminError, RETAIN_SUBSCRIPTION};
use crate::error::Error;

/// Guard `topic` (partitions as the workload's). Returns the history's note.
pub(super) async fn guard(
    admin: &Admin,
    topic: &str,
    partitions: u32,
    external: bool,
) -> Result<String, Error> {
    match admin.guard_topic(topic, partitions).await {
        Ok(()) => Ok(note(topic, partitions)),
        Err(e) => Err(refusal(topic, &e, external)),
    }
}

/// The history's note of a guarded topic.
pub fn note(topic: &str, partitions: u32) -> String {
    format!(
        "retention guard: the durable subscription {RETAIN_SUBSCRIPTION} at the earliest position on {topic}{}, before the first message: the broker keeps every ledger of the topic for the read-back, whatever the namespace's retention",
        if partitions > 1 {
            format!(" (each of its {partitions} partitions)")
        } else {
            String::new()
        }
    )
}

/// The error of a guard Pulsar did not create. On a cluster the harness did not start, an
/// answer of Pulsar's that refuses the request (HTTP 4xx: no such tenant or namespace, not
/// authorized, a policy that forbids it) is the user's to fix: the run is refused (exit 2)
/// before anything is produced. Anything else (no answer, a server error, our own cluster)
/// is the infrastructure's (exit 3). Pure.
pub fn refusal(topic: &str, e: &AdminError, external: bool) -> Error {
    let why = format!(
        "cannot make {topic} durable for the read-back (the topic, and the subscription {RETAIN_SUBSCRIPTION} at its earliest position): {e}"
    );
    let refused = matches!(e.status(), Some(s) if (400..500).contains(&s));
    if external && refused {
        Error::Usage(format!(
            "refusing to run: {why}. Without it a namespace with Pulsar's default retention (0) may delete the topic's ledgers before they are read back, and the verdict would blame Pulsar for the loss. Give the harness a namespace where it may create topics and subscriptions (`workload.topic`), or create the subscription yourself first"
        ))
    } else {
        Error::Pulsar(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;

    fn status(code: u16) -> AdminError {
        AdminError::Status {
            method: "PUT",
            url: "http://a/admin/v2/persistent/nope/ns/t/subscription/pulsar-chaos-retain".into(),
            status: code,
            body: "Namespace does not exist".into(),
        }
    }

    #[test]
    fn a_refusal_on_a_cluster_the_harness_did_not_start_is_the_users() {
        let e = refusal("persistent://nope/ns/t", &status(404), true);
        assert_eq!(e.exit_code(), exit::BAD_INPUT);
        let text = e.to_string();
        assert!(text.starts_with("refusing to run: cannot make persistent://nope/ns/t durable"));
        assert!(
            text.contains("HTTP 404: Namespace does not exist"),
            "{text}"
        );
        assert!(text.contains(RETAIN_SUBSCRIPTION), "{text}");
        assert_eq!(
            refusal("t", &status(403), true).exit_code(),
            exit::BAD_INPUT
        );
    }

    #[test]
    fn no_answer_a_server_error_or_our_own_cluster_is_infrastructure() {
        assert_eq!(
            refusal("t", &status(500), true).exit_code(),
            exit::INFRASTRUCTURE
        );
        assert_eq!(
            refusal("t", &status(404), false).exit_code(),
            exit::INFRASTRUCTURE
        );
        let http = AdminError::Http {
            method: "PUT",
            url: "http://a".into(),
            message: "connection refused".into(),
        };
        let e = refusal("t", &http, true);
        assert_eq!(e.exit_code(), exit::INFRASTRUCTURE);
        assert!(e.to_string().contains("connection refused"));
    }

    #[test]
    fn the_note_names_the_subscription_and_the_partitions() {
        assert!(note("persistent://p/d/t", 3).contains("pulsar-chaos-retain at the earliest position on persistent://p/d/t (each of its 3 partitions)"));
        assert!(!note("t", 1).contains("partitions"));
    }
}
