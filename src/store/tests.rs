//! The store on real SQLite files in scratch directories.

use std::path::{Path, PathBuf};

use super::*;
use crate::rundir::RunInfo;

fn scratch(name: &str) -> crate::scratch::Scratch {
    crate::scratch::Scratch::new(&format!("pc-store-{name}"))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const SCENARIO: &str = "name: go-produce\ncluster:\n  topology: standalone\n  pulsar_version: 4.0.7\nworkload:\n  topic: persistent://public/default/go-produce\n  messages: 3000\n  client: go\n";
const VERDICT: &str = include_str!("../../crates/core/src/results/pass_verdict.json");

/// A finished run directory as `run` leaves it (the files the store reads).
fn fake_run(parent: &Path, run_id: &str, started_ms: u64) -> PathBuf {
    let dir = parent.join(format!("go-produce-{run_id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let info = RunInfo {
        run_id: run_id.into(),
        scenario: "go-produce".into(),
        seed: u64::MAX - 1,
        topic: "persistent://public/default/go-produce-x".into(),
        partitions: 3,
        messages: 3000,
        topology: "standalone".into(),
        service_url: "pulsar://127.0.0.1:6650".into(),
        admin_url: "http://127.0.0.1:8080".into(),
        image: Some("apachepulsar/pulsar:4.0.7".into()),
        started_ms,
        reproduce: "pulsar-chaos run x --seed 1".into(),
        kept_cluster: false,
        client: Some("go v0.19.0".into()),
    };
    std::fs::write(dir.join("run.json"), serde_json::to_string(&info).unwrap()).unwrap();
    std::fs::write(dir.join("scenario.yaml"), SCENARIO).unwrap();
    std::fs::write(dir.join("verdict.json"), VERDICT).unwrap();
    std::fs::write(
        dir.join("producer.json"),
        r#"{"messages_per_s": 356.5, "complete": true}"#,
    )
    .unwrap();
    dir
}

fn open(path: &Path) -> Result<Store, StoreError> {
    rt().block_on(Store::open(&Location::Sqlite(path.to_path_buf())))
}

/// Every file of a directory and its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_new_store_is_migrated_and_keeps_a_run_as_its_files_say() {
    let d = scratch("record");
    let db = d.join("deep/er/results.db");
    let run = fake_run(&d, "aaaa0001", 1_796_279_085_765);
    let rt = rt();
    let records = rt.block_on(async {
        let mut s = Store::open(&Location::Sqlite(db.clone())).await.unwrap();
        assert_eq!(s.schema_version().await.unwrap(), SCHEMA_VERSION);
        let r = record(&mut s, &run, Source::Soak).await.unwrap();
        // Recorded twice (a retried command): kept once.
        record(&mut s, &run, Source::Soak).await.unwrap();
        let back = s.records().await.unwrap();
        assert_eq!(back, [r]);
        back
    });
    let r = &records[0];
    assert_eq!(r.run_id, "aaaa0001");
    assert_eq!(r.started_ms, 1_796_279_085_765);
    assert_eq!(r.source, "soak");
    assert_eq!(r.scenario, "go-produce");
    assert_eq!(r.seed, u64::MAX - 1, "a u64 seed survives the round trip");
    assert_eq!(r.pulsar_version, "4.0.7");
    assert_eq!(r.image.as_deref(), Some("apachepulsar/pulsar:4.0.7"));
    assert_eq!(r.client, "go v0.19.0");
    assert_eq!(r.harness_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(r.status, "pass");
    assert_eq!((r.expected, r.received, r.missing), (3000, 3000, 0));
    assert_eq!(r.throughput, Some(356.5));
    assert_eq!(Path::new(&r.run_dir), run);
    // sha256 of SCENARIO, its first 8 bytes: `printf '...' | sha256sum`.
    use sha2::Digest;
    let want: String = sha2::Sha256::digest(SCENARIO.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(r.scenario_hash, want);
    // Opened again: the same schema, nothing applied twice, the record kept.
    let mut s = open(&db).unwrap();
    rt.block_on(async {
        assert_eq!(s.schema_version().await.unwrap(), SCHEMA_VERSION);
        let n: i64 = sqlx::query("SELECT COUNT(*) FROM schema_version")
            .fetch_one(&mut s.conn)
            .await
            .unwrap()
            .try_get(0)
            .unwrap();
        assert_eq!(n, SCHEMA_VERSION);
        let mode: String = sqlx::query("PRAGMA journal_mode")
            .fetch_one(&mut s.conn)
            .await
            .unwrap()
            .try_get(0)
            .unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(s.records().await.unwrap().len(), 1);
    });
}

#[test]
fn a_store_of_a_newer_schema_is_refused_and_left_as_it_was() {
    let d = scratch("newer");
    let db = d.join("results.db");
    let mut s = open(&db).unwrap();
    rt().block_on(async {
        sqlx::query("INSERT INTO schema_version (version) VALUES ($1)")
            .bind(SCHEMA_VERSION + 1)
            .execute(&mut s.conn)
            .await
            .unwrap();
        s.close().await;
    });
    let e = open(&db).unwrap_err();
    assert!(
        matches!(e, StoreError::Newer { found, known, .. } if found == SCHEMA_VERSION + 1 && known == SCHEMA_VERSION),
        "{e:?}"
    );
    assert_eq!(e.exit_code(), exit::BAD_INPUT);
    let msg = e.to_string();
    assert!(msg.contains(&db.display().to_string()), "{msg}");
    assert!(msg.contains("--no-store") && msg.contains("newer"), "{msg}");
    // Still refused (the refusal rolled back, changed nothing).
    assert!(matches!(open(&db).unwrap_err(), StoreError::Newer { .. }));
}

#[test]
fn a_corrupt_store_is_named_damaged() {
    let d = scratch("corrupt");
    let db = d.join("results.db");
    std::fs::write(
        &db,
        "this is not a SQLite database, it is a text file ".repeat(100),
    )
    .unwrap();
    let e = open(&db).unwrap_err();
    assert!(matches!(e, StoreError::Damaged { .. }), "{e:?}");
    assert_eq!(e.exit_code(), exit::BAD_INPUT);
    let msg = e.to_string();
    assert!(
        msg.contains(&db.display().to_string()) && msg.contains("move it aside"),
        "{msg}"
    );
}

#[test]
fn a_store_that_cannot_be_created_is_named_unwritable() {
    let d = scratch("unwritable");
    // A regular file where the store's directory should be (refused even to root).
    std::fs::write(d.join("file"), "x").unwrap();
    let db = d.join("file/results.db");
    let e = open(&db).unwrap_err();
    assert!(matches!(e, StoreError::Unwritable { .. }), "{e:?}");
    assert_eq!(e.exit_code(), exit::INFRASTRUCTURE);
    assert!(e.to_string().contains(&db.display().to_string()), "{e}");
}

#[test]
fn a_read_only_store_is_refused_when_opened_not_after_the_run() {
    // A path on a file system no one may write, root included (file modes would not stop
    // root, who runs CI): refused at open, before any run starts.
    let db = std::path::Path::new("/proc/self/pulsar-chaos-results.db");
    let e = open(db).unwrap_err();
    assert!(matches!(e, StoreError::Unwritable { .. }), "{e:?}");
    assert_eq!(e.exit_code(), exit::INFRASTRUCTURE);
    assert!(e.to_string().contains(&db.display().to_string()), "{e}");
}

#[test]
fn a_failed_record_leaves_the_run_directory_as_it_was() {
    let d = scratch("failed-record");
    let run = fake_run(&d, "aaaa0002", 1_000);
    let before = snapshot(&run);
    let rt = rt();
    let mut store = Some(open(&d.join("results.db")).unwrap());
    rt.block_on(async {
        // Damaged after it was opened: its table gone.
        let s = store.as_mut().unwrap();
        sqlx::raw_sql("DROP TABLE runs")
            .execute(&mut s.conn)
            .await
            .unwrap();
        let code = record_or_report(&mut store, &run, Source::Run).await;
        assert_eq!(code, Some(exit::INFRASTRUCTURE));
        assert_eq!(exit_with(exit::PASS, code), exit::INFRASTRUCTURE);
        assert_eq!(exit_with(exit::VIOLATION, code), exit::VIOLATION);
        assert_eq!(exit_with(exit::PASS, None), exit::PASS);
        // No store (--no-store): nothing to say.
        assert_eq!(record_or_report(&mut None, &run, Source::Run).await, None);
    });
    assert_eq!(snapshot(&run), before);
}

#[test]
fn a_run_without_a_verdict_is_recorded_and_a_damaged_one_is_refused() {
    let d = scratch("no-verdict");
    let run = fake_run(&d, "aaaa0003", 1_000);
    std::fs::remove_file(run.join("verdict.json")).unwrap();
    let r = read_record(&run, Source::Run).unwrap();
    assert_eq!(
        (r.status.as_str(), r.expected, r.received),
        ("none", 3000, 0)
    );
    std::fs::write(run.join("verdict.json"), "{\"status\": ").unwrap();
    let e = read_record(&run, Source::Run).unwrap_err();
    assert!(matches!(e, StoreError::RunDir { .. }), "{e:?}");
    assert!(e.to_string().contains("verdict.json"), "{e}");
    std::fs::remove_file(run.join("run.json")).unwrap();
    assert!(read_record(&run, Source::Run).is_err());
}

/// Two writers on one file, each with its own connection on its own thread, both opening a
/// store that does not exist yet: every record of both arrives, neither gets "database is
/// locked".
#[test]
fn two_writers_at_once_both_get_every_record_in() {
    let d = scratch("concurrent");
    let db = d.join("results.db");
    let runs: Vec<PathBuf> = (0..2)
        .map(|w| fake_run(&d.join(format!("w{w}")), "aaaa0000", 1_000))
        .collect();
    let threads: Vec<_> = runs
        .into_iter()
        .map(|run| {
            let db = db.clone();
            std::thread::spawn(move || {
                rt().block_on(async {
                    let mut s = Store::open(&Location::Sqlite(db)).await.unwrap();
                    let mut r = read_record(&run, Source::Soak).unwrap();
                    for i in 0..40 {
                        r.run_id = format!("run-{i}");
                        s.insert(&r, 0).await.unwrap();
                    }
                })
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut s = open(&db).unwrap();
    let records = rt().block_on(s.records()).unwrap();
    assert_eq!(records.len(), 80);
}

#[test]
fn the_store_is_the_flag_else_the_environment_else_the_data_directory() {
    assert_eq!(
        default_path(Some("/data"), Some("/home/u")),
        Some(PathBuf::from("/data/pulsar-chaos/results.db"))
    );
    // XDG_DATA_HOME must be absolute to count (the XDG spec).
    assert_eq!(
        default_path(Some("rel"), Some("/home/u")),
        Some(PathBuf::from(
            "/home/u/.local/share/pulsar-chaos/results.db"
        ))
    );
    assert_eq!(default_path(None, None), None);
    let args = |store: Option<&str>, no_store| StoreArgs {
        store: store.map(str::to_string),
        no_store,
    };
    assert_eq!(location(&args(Some("/x/r.db"), true)).unwrap(), None);
    assert_eq!(
        location(&args(Some("/x/r.db"), false)).unwrap(),
        Some(Location::Sqlite("/x/r.db".into()))
    );
    let pg = Location::parse("postgres://chaos:s3cret@db:5432/results");
    assert_eq!(
        pg,
        Location::Postgres("postgres://chaos:s3cret@db:5432/results".into())
    );
    assert_eq!(pg.display(), "postgres://chaos:***@db:5432/results");
    assert_eq!(
        Location::parse("sqlite:///tmp/r.db"),
        Location::Sqlite("/tmp/r.db".into())
    );
}

#[test]
fn a_path_with_url_characters_is_opened_as_that_path() {
    let d = scratch("odd-name");
    let db = d.join("a?b#c%20d.db");
    drop(open(&db).unwrap());
    assert!(db.is_file(), "{}", db.display());
}

#[path = "../../tests/support/store_checks.rs"]
mod shared_checks;

/// The checks `tests/store_pg.rs` runs on PostgreSQL, here on SQLite files.
#[test]
fn the_backend_checks_pass_on_sqlite() {
    let d = scratch("checks");
    let dir = d.to_path_buf();
    shared_checks::all(&mut |name| dir.join(format!("{name}/results.db")).display().to_string());
}
