//! The checks every results-store backend passes, SQLite and PostgreSQL alike: a record
//! written and read back field for field, the schema migrated once and its version kept, a
//! store of a newer schema refused, two writers at once. Each check takes `fresh`, which
//! names a store (a path or a `postgres://` URL, as `--store` takes it) that does not exist
//! yet or is empty.
//!
//! Included by the store's unit tests (`src/store/tests.rs`, on SQLite files) and by
//! `tests/store_pg.rs` (on a PostgreSQL server it starts); the including module brings
//! `Location`, `Record`, `Store`, `StoreError` and `SCHEMA_VERSION` into scope.

use std::collections::BTreeMap;

use sqlx::{AnyConnection, Connection, Row};

use super::{Location, Record, Store, StoreError, SCHEMA_VERSION};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A record with every field set to something a round trip could get wrong.
pub fn record(run_id: &str, started_ms: u64) -> Record {
    Record {
        run_id: run_id.into(),
        started_ms,
        source: "soak".into(),
        scenario: "go-produce".into(),
        scenario_hash: "0123456789abcdef".into(),
        // Above i64::MAX: stored as text.
        seed: u64::MAX - 1,
        pulsar_version: "4.0.7".into(),
        image: Some("apachepulsar/pulsar:4.0.7".into()),
        client: "go v0.19.0".into(),
        harness_version: "0.1.0".into(),
        status: "violation".into(),
        causes: vec!["pulsar".into(), "ambiguity".into()],
        expected: 3000,
        received: 2950,
        missing: 50,
        duplicate_values: 2,
        duplicate_copies: 3,
        unexpected: 0,
        ambiguous: 1,
        throughput: Some(356.25),
        recovery_ms: BTreeMap::from([
            ("broker_restart".to_string(), vec![1200, 800]),
            ("topic_unload".to_string(), vec![40]),
        ]),
        findings: vec!["apache/pulsar#24945".into(), "it's \"quoted\"".into()],
        run_dir: "/runs/go-produce-ü 1".into(),
    }
}

/// The URL sqlx connects to for a store named as `--store` names it.
fn sqlx_url(store: &str) -> String {
    match Location::parse(store) {
        Location::Sqlite(p) => format!("sqlite://{}", p.display()),
        Location::Postgres(u) => u,
    }
}

async fn open(store: &str) -> Result<Store, StoreError> {
    Store::open(&Location::parse(store)).await
}

/// A record written, written again (kept once), and read back as it was; a second with the
/// optional fields empty; the schema at [`SCHEMA_VERSION`], each migration applied once, also
/// when the store is opened again.
pub fn record_and_read_back(fresh: &mut dyn FnMut(&str) -> String) {
    let store = fresh("record");
    rt().block_on(async {
        let mut s = open(&store).await.unwrap();
        assert_eq!(s.schema_version().await.unwrap(), SCHEMA_VERSION);
        let a = record("aaaa0001", 1_796_279_085_765);
        s.insert(&a, 1).await.unwrap();
        s.insert(&a, 2).await.unwrap();
        let mut b = record("aaaa0002", 1_796_279_000_000);
        b.image = None;
        b.throughput = None;
        b.recovery_ms.clear();
        b.findings.clear();
        b.causes.clear();
        b.seed = 0;
        s.insert(&b, 3).await.unwrap();
        // Oldest first.
        assert_eq!(s.records().await.unwrap(), [b.clone(), a.clone()]);
        s.close().await;
        let mut s = open(&store).await.unwrap();
        assert_eq!(s.schema_version().await.unwrap(), SCHEMA_VERSION);
        assert_eq!(s.records().await.unwrap(), [b, a]);
        s.close().await;
        sqlx::any::install_default_drivers();
        let mut c = AnyConnection::connect(&sqlx_url(&store)).await.unwrap();
        let n: i64 = sqlx::query("SELECT COUNT(*) FROM schema_version")
            .fetch_one(&mut c)
            .await
            .unwrap()
            .try_get(0)
            .unwrap();
        assert_eq!(n, SCHEMA_VERSION, "a migration was applied twice");
        let _ = c.close().await;
    });
}

/// A store whose schema is newer than this binary knows is refused, and stays as it was.
pub fn newer_schema_refused(fresh: &mut dyn FnMut(&str) -> String) {
    let store = fresh("newer");
    rt().block_on(async {
        open(&store).await.unwrap().close().await;
        sqlx::any::install_default_drivers();
        let mut c = AnyConnection::connect(&sqlx_url(&store)).await.unwrap();
        sqlx::query("INSERT INTO schema_version (version) VALUES ($1)")
            .bind(SCHEMA_VERSION + 1)
            .execute(&mut c)
            .await
            .unwrap();
        let _ = c.close().await;
        for _ in 0..2 {
            let e = open(&store).await.unwrap_err();
            assert!(
                matches!(e, StoreError::Newer { found, known, .. } if found == SCHEMA_VERSION + 1 && known == SCHEMA_VERSION),
                "{e:?}"
            );
            assert_eq!(e.exit_code(), 2);
            let msg = e.to_string();
            assert!(msg.contains("--no-store") && msg.contains("newer"), "{msg}");
        }
    });
}

/// Two writers, each with its own connection on its own thread, both opening a store that
/// does not exist yet (so both migrate at once): every record of both arrives.
pub fn two_writers_at_once(fresh: &mut dyn FnMut(&str) -> String) {
    let store = fresh("concurrent");
    let threads: Vec<_> = (0..2)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                rt().block_on(async {
                    let mut s = open(&store).await.unwrap();
                    for i in 0..40 {
                        s.insert(&record(&format!("w{w}-run-{i}"), 1_000 + i), 0)
                            .await
                            .unwrap();
                    }
                    s.close().await;
                })
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    rt().block_on(async {
        let mut s = open(&store).await.unwrap();
        assert_eq!(s.records().await.unwrap().len(), 80);
        assert_eq!(s.schema_version().await.unwrap(), SCHEMA_VERSION);
    });
}

/// Every check, each on a fresh store.
pub fn all(fresh: &mut dyn FnMut(&str) -> String) {
    record_and_read_back(fresh);
    newer_schema_refused(fresh);
    two_writers_at_once(fresh);
}
