use super::*;

fn err(class: &str, message: &str) -> ClientError {
    ClientError {
        class: class.into(),
        message: message.into(),
        causes: vec![],
    }
}

#[test]
fn success_is_committed_and_an_unknown_class_is_ambiguous() {
    for kind in [ClientKind::Java, ClientKind::Go] {
        assert!(matches!(
            classify_commit(kind, &Ok(())),
            CommitAnswer::Committed(_)
        ));
        let a = classify_commit(kind, &Err(err("com.example.Surprise", "boom")));
        assert!(
            matches!(a, CommitAnswer::Ambiguous(ref m) if m.contains("Surprise: boom")),
            "{a:?}"
        );
    }
}

#[test]
fn short_class_drops_package_and_outer_class() {
    let e = err(
        "org.apache.pulsar.client.api.transaction.TransactionCoordinatorClientException$InvalidTxnStatusException",
        "x",
    );
    assert_eq!(e.short_class(), "InvalidTxnStatusException");
    assert_eq!(err("TimeoutError", "x").short_class(), "TimeoutError");
}

#[test]
fn client_kind_names_round_trip() {
    for k in ClientKind::ALL {
        assert_eq!(ClientKind::parse(k.name()), Some(k));
    }
    assert_eq!(ClientKind::parse("python"), None);
}

#[test]
fn misfit_refuses_only_client_versions_that_do_not_fit() {
    // Both workload kinds run through every client (a transform through the driver's
    // consumers); only the version key can misfit.
    for kind in ClientKind::ALL {
        assert_eq!(misfit(kind, None), None, "{kind}");
    }
    assert_eq!(misfit(ClientKind::Java, Some("4.0.7")), None);
    let (key, why) = misfit(ClientKind::Java, Some("9.9.9")).unwrap();
    assert_eq!(key, "client_version");
    assert!(why.contains("served: 4.0.0"), "{why}");
    for kind in [ClientKind::Own, ClientKind::Go] {
        let (key, why) = misfit(kind, Some("4.2.4")).unwrap();
        assert_eq!(key, "client_version");
        assert!(why.contains("goes with `client: java` only"), "{why}");
    }
}
