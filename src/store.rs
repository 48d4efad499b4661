//! The results store: one record per finished run (core `results::Record`) in a SQLite file or
//! a PostgreSQL database, through sqlx's Any driver, so both run the same statements.
//!
//! - **Where**: `--store PATH|URL`, else `PULSAR_CHAOS_STORE`, else
//!   `$XDG_DATA_HOME/pulsar-chaos/results.db` (`~/.local/share/...`); `--no-store` skips it.
//! - **Schema**: numbered migrations embedded in the binary ([`MIGRATIONS`]), applied in one
//!   write transaction (SQLite `BEGIN IMMEDIATE`, PostgreSQL an advisory lock), the version in
//!   `schema_version`. A store whose version is newer than the binary knows is refused.
//! - **Concurrency**: SQLite in WAL mode with a busy timeout, so two soaks on one machine write
//!   to one file; a record is one `INSERT`.
//! - **When**: a command opens the store before its first run (a store it cannot use stops it
//!   before anything starts) and records each run after its directory is complete
//!   ([`record`]), so a store that fails later never costs the run's own files.

mod read;

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::{AnyConnection, Connection, Row};

use crate::cli::StoreArgs;
use crate::exit;
use crate::results::Record;

pub use read::{read_record, scenario_hash, Source};

/// The environment variable that names the store when `--store` does not.
pub const ENV: &str = "PULSAR_CHAOS_STORE";

/// The schema's migrations, in order: migration `i` (from 0) brings the schema to version
/// `i + 1`. Append only; never edit one that has shipped.
pub const MIGRATIONS: &[&str] = &[include_str!("store/migrations/0001_runs.sql")];

/// The schema version this binary writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// How long a SQLite writer waits for another's lock before it gives up.
const BUSY_TIMEOUT_MS: u64 = 30_000;

/// Where the store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Location {
    /// A path, or a PostgreSQL URL.
    pub fn parse(s: &str) -> Location {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Location::Postgres(s.to_string())
        } else {
            Location::Sqlite(PathBuf::from(s.strip_prefix("sqlite://").unwrap_or(s)))
        }
    }

    /// How messages name it: the path, or the URL without its password.
    pub fn display(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(url) => redact(url),
        }
    }
}

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some(x) => x,
        None => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

/// The default store: `$XDG_DATA_HOME/pulsar-chaos/results.db`, else
/// `$HOME/.local/share/pulsar-chaos/results.db`.
pub fn default_path(xdg_data_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let base = match (xdg_data_home, home) {
        (Some(x), _) if Path::new(x).is_absolute() => PathBuf::from(x),
        (_, Some(h)) if !h.is_empty() => Path::new(h).join(".local/share"),
        _ => return None,
    };
    Some(base.join("pulsar-chaos").join("results.db"))
}

/// The store the command line names (`--store`, its environment variable, the default), or
/// `None` with `--no-store`.
pub fn location(args: &StoreArgs) -> Result<Option<Location>, StoreError> {
    if args.no_store {
        return Ok(None);
    }
    if let Some(s) = args.store.as_deref().filter(|s| !s.is_empty()) {
        return Ok(Some(Location::parse(s)));
    }
    let xdg = std::env::var("XDG_DATA_HOME").ok();
    let home = std::env::var("HOME").ok();
    default_path(xdg.as_deref(), home.as_deref())
        .map(|p| Some(Location::Sqlite(p)))
        .ok_or(StoreError::NoDefault)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no results store: neither XDG_DATA_HOME nor HOME is set; name one with --store PATH (or {ENV}), or pass --no-store")]
    NoDefault,
    #[error("results store {place}: cannot open or write it ({detail}); make it writable, choose another with --store PATH (or {ENV}), or pass --no-store")]
    Unwritable { place: String, detail: String },
    #[error("results store {place}: schema version {found} is newer than this pulsar-chaos knows ({known}); use a newer pulsar-chaos, choose another store with --store PATH, or pass --no-store")]
    Newer {
        place: String,
        found: i64,
        known: i64,
    },
    #[error("results store {place}: damaged ({detail}); move it aside (a new one is created in its place), choose another with --store PATH, or pass --no-store")]
    Damaged { place: String, detail: String },
    #[error("results store {place}: {detail}")]
    Database { place: String, detail: String },
    #[error("cannot record the run {dir}: {detail}")]
    RunDir { dir: String, detail: String },
}

impl StoreError {
    /// The documented exit code: a store that is damaged or newer than the binary is bad input
    /// (2); one that cannot be reached or written is the environment's (3).
    pub fn exit_code(&self) -> i32 {
        match self {
            StoreError::Newer { .. } | StoreError::Damaged { .. } | StoreError::RunDir { .. } => {
                exit::BAD_INPUT
            }
            StoreError::NoDefault => exit::BAD_INPUT,
            StoreError::Unwritable { .. } | StoreError::Database { .. } => exit::INFRASTRUCTURE,
        }
    }

    /// A database error, sorted by what the user can do about it.
    fn of(place: &str, e: sqlx::Error) -> StoreError {
        let place = place.to_string();
        let detail = e.to_string();
        // SQLite's primary result codes (the extended code's low byte).
        const READONLY: i64 = 8;
        const CORRUPT: i64 = 11;
        const CANTOPEN: i64 = 14;
        const NOTADB: i64 = 26;
        let sqlite_code = match &e {
            sqlx::Error::Database(d) => d
                .code()
                .and_then(|c| c.parse::<i64>().ok())
                .map(|c| c & 0xff),
            _ => None,
        };
        match sqlite_code {
            Some(CORRUPT | NOTADB) => StoreError::Damaged { place, detail },
            Some(READONLY | CANTOPEN) => StoreError::Unwritable { place, detail },
            _ if matches!(e, sqlx::Error::Io(_)) => StoreError::Unwritable { place, detail },
            _ => StoreError::Database { place, detail },
        }
    }
}

/// An open store, its schema current.
pub struct Store {
    conn: AnyConnection,
    place: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.place)
    }
}

/// The URL sqlx opens: a SQLite path with the characters its parser decodes escaped.
fn sqlite_url(path: &Path) -> String {
    let p = path
        .display()
        .to_string()
        .replace('%', "%25")
        .replace('?', "%3F")
        .replace('#', "%23");
    format!("sqlite://{p}?mode=rwc")
}

impl Store {
    /// Open (creating a SQLite file and its directory if needed) and migrate.
    pub async fn open(loc: &Location) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let place = loc.display();
        let url = match loc {
            Location::Sqlite(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| StoreError::Unwritable {
                        place: place.clone(),
                        detail: format!("create {}: {e}", parent.display()),
                    })?;
                }
                sqlite_url(path)
            }
            Location::Postgres(url) => url.clone(),
        };
        let conn = AnyConnection::connect(&url).await.map_err(|e| match loc {
            Location::Postgres(_) => StoreError::Unwritable {
                place: place.clone(),
                detail: e.to_string(),
            },
            Location::Sqlite(_) => StoreError::of(&place, e),
        })?;
        let mut store = Store { conn, place };
        if store.is_sqlite() {
            store.sqlite_pragmas().await?;
        }
        store.migrate().await?;
        Ok(store)
    }

    /// The path or redacted URL, for messages.
    pub fn place(&self) -> &str {
        &self.place
    }

    fn is_sqlite(&self) -> bool {
        self.conn.backend_name() == "SQLite"
    }

    fn err(&self) -> impl Fn(sqlx::Error) -> StoreError + '_ {
        move |e| StoreError::of(&self.place, e)
    }

    async fn exec(&mut self, sql: &str) -> Result<(), StoreError> {
        let r = sqlx::raw_sql(sql).execute(&mut self.conn).await;
        r.map(|_| ()).map_err(self.err())
    }

    /// Wait for other writers instead of failing, and let readers and one writer work at once.
    async fn sqlite_pragmas(&mut self) -> Result<(), StoreError> {
        self.exec(&format!("PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}"))
            .await?;
        // The first switch to WAL needs the file to itself, which the busy timeout does not
        // wait for: another process opening it at the same moment answers SQLITE_BUSY.
        let mut backoff =
            crate::backoff::Backoff::new(Duration::from_millis(20), Duration::from_millis(500));
        let deadline = std::time::Instant::now() + Duration::from_millis(BUSY_TIMEOUT_MS);
        loop {
            let r = sqlx::query("PRAGMA journal_mode = WAL")
                .fetch_optional(&mut self.conn)
                .await;
            match r {
                Ok(_) => return Ok(()),
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    backoff.wait().await
                }
                Err(e) => return Err(StoreError::of(&self.place, e)),
            }
        }
    }

    /// Bring the schema to [`SCHEMA_VERSION`] in one write transaction, or refuse a newer one.
    async fn migrate(&mut self) -> Result<(), StoreError> {
        if self.is_sqlite() {
            // IMMEDIATE: the write lock first, so two first opens do not both read version 0.
            self.exec("BEGIN IMMEDIATE").await?;
        } else {
            self.exec("BEGIN").await?;
            self.exec("SELECT pg_advisory_xact_lock(3535001)").await?;
        }
        let r = self.migrate_in_transaction().await;
        match r {
            Ok(()) => self.exec("COMMIT").await,
            Err(e) => {
                let _ = self.exec("ROLLBACK").await;
                Err(e)
            }
        }
    }

    async fn migrate_in_transaction(&mut self) -> Result<(), StoreError> {
        self.exec("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
            .await?;
        // A write even when nothing is to migrate: a store that cannot be written fails here,
        // before the run, not after it.
        self.exec("DELETE FROM schema_version WHERE version < 0")
            .await?;
        let row = sqlx::query("SELECT version FROM schema_version ORDER BY version DESC LIMIT 1")
            .fetch_optional(&mut self.conn)
            .await
            .map_err(self.err())?;
        let found: i64 = match row {
            Some(r) => r.try_get(0).map_err(self.err())?,
            None => 0,
        };
        if found > SCHEMA_VERSION {
            return Err(StoreError::Newer {
                place: self.place.clone(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            self.exec(sql).await?;
            sqlx::query("INSERT INTO schema_version (version) VALUES ($1)")
                .bind(i as i64 + 1)
                .execute(&mut self.conn)
                .await
                .map_err(self.err())?;
        }
        Ok(())
    }

    /// The schema version stored.
    pub async fn schema_version(&mut self) -> Result<i64, StoreError> {
        let r = sqlx::query("SELECT version FROM schema_version ORDER BY version DESC LIMIT 1")
            .fetch_one(&mut self.conn)
            .await
            .map_err(self.err())?;
        r.try_get(0).map_err(self.err())
    }

    /// Append one record (a run recorded twice is kept once).
    pub async fn insert(&mut self, r: &Record, recorded_ms: u64) -> Result<(), StoreError> {
        let q = sqlx::query(
            "INSERT INTO runs (run_id, run_dir, started_ms, recorded_ms, source, scenario, \
             scenario_hash, seed, pulsar_version, image, client, harness_version, status, causes, \
             expected, received, missing, duplicate_values, duplicate_copies, unexpected, \
             ambiguous, throughput, recovery_ms, findings) VALUES ($1, $2, $3, $4, $5, $6, $7, \
             $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24) \
             ON CONFLICT (run_id, run_dir) DO NOTHING",
        )
        .bind(r.run_id.clone())
        .bind(r.run_dir.clone())
        .bind(r.started_ms as i64)
        .bind(recorded_ms as i64)
        .bind(r.source.clone())
        .bind(r.scenario.clone())
        .bind(r.scenario_hash.clone())
        .bind(r.seed.to_string())
        .bind(r.pulsar_version.clone())
        .bind(r.image.clone())
        .bind(r.client.clone())
        .bind(r.harness_version.clone())
        .bind(r.status.clone())
        .bind(json(&r.causes))
        .bind(r.expected as i64)
        .bind(r.received as i64)
        .bind(r.missing as i64)
        .bind(r.duplicate_values as i64)
        .bind(r.duplicate_copies as i64)
        .bind(r.unexpected as i64)
        .bind(r.ambiguous as i64)
        .bind(r.throughput)
        .bind(json(&r.recovery_ms))
        .bind(json(&r.findings));
        q.execute(&mut self.conn).await.map_err(self.err())?;
        Ok(())
    }

    /// Every record, oldest first.
    pub async fn records(&mut self) -> Result<Vec<Record>, StoreError> {
        let rows = sqlx::query(
            "SELECT run_id, run_dir, started_ms, source, scenario, scenario_hash, seed, \
             pulsar_version, image, client, harness_version, status, causes, expected, received, \
             missing, duplicate_values, duplicate_copies, unexpected, ambiguous, throughput, \
             recovery_ms, findings FROM runs ORDER BY started_ms, run_id",
        )
        .fetch_all(&mut self.conn)
        .await
        .map_err(self.err())?;
        rows.iter().map(|row| self.row(row)).collect()
    }

    fn row(&self, row: &sqlx::any::AnyRow) -> Result<Record, StoreError> {
        let damaged = |what: &str, e: &dyn std::fmt::Display| StoreError::Damaged {
            place: self.place.clone(),
            detail: format!("runs.{what}: {e}"),
        };
        let text = |c: &str| -> Result<String, StoreError> {
            row.try_get::<String, _>(c).map_err(|e| damaged(c, &e))
        };
        let n = |c: &str| -> Result<u64, StoreError> {
            row.try_get::<i64, _>(c)
                .map(|v| v as u64)
                .map_err(|e| damaged(c, &e))
        };
        fn parse<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
            serde_json::from_str(s).map_err(|e| e.to_string())
        }
        Ok(Record {
            run_id: text("run_id")?,
            run_dir: text("run_dir")?,
            started_ms: n("started_ms")?,
            source: text("source")?,
            scenario: text("scenario")?,
            scenario_hash: text("scenario_hash")?,
            seed: text("seed")?.parse().map_err(|e| damaged("seed", &e))?,
            pulsar_version: text("pulsar_version")?,
            image: row
                .try_get::<Option<String>, _>("image")
                .map_err(|e| damaged("image", &e))?,
            client: text("client")?,
            harness_version: text("harness_version")?,
            status: text("status")?,
            causes: parse(&text("causes")?).map_err(|e| damaged("causes", &e))?,
            expected: n("expected")?,
            received: n("received")?,
            missing: n("missing")?,
            duplicate_values: n("duplicate_values")?,
            duplicate_copies: n("duplicate_copies")?,
            unexpected: n("unexpected")?,
            ambiguous: n("ambiguous")?,
            throughput: row
                .try_get::<Option<f64>, _>("throughput")
                .map_err(|e| damaged("throughput", &e))?,
            recovery_ms: parse(&text("recovery_ms")?).map_err(|e| damaged("recovery_ms", &e))?,
            findings: parse(&text("findings")?).map_err(|e| damaged("findings", &e))?,
        })
    }

    /// Close the connection (SQLite checkpoints its WAL).
    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}

/// SQLITE_BUSY (5) or SQLITE_LOCKED (6).
fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => d
            .code()
            .and_then(|c| c.parse::<i64>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6)),
        _ => false,
    }
}

/// A list or map stored as JSON text.
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("lists and maps of strings and numbers serialize")
}

/// Read a finished run directory and append its record: the one call `run`, `soak`, `replay`
/// and `matrix` make after a run's directory is complete.
pub async fn record(
    store: &mut Store,
    run_dir: &Path,
    source: Source,
) -> Result<Record, StoreError> {
    let r = read_record(run_dir, source)?;
    store.insert(&r, crate::rundir::now_ms()).await?;
    Ok(r)
}

/// The store a command records into, opened before its first run: `None` with `--no-store`.
pub async fn open_for(args: &StoreArgs) -> Result<Option<Store>, StoreError> {
    match location(args)? {
        Some(loc) => Store::open(&loc).await.map(Some),
        None => Ok(None),
    }
}

/// Record a run if there is a store; on failure say so (the run's directory is untouched) and
/// give the exit code the failure maps to.
pub async fn record_or_report(
    store: &mut Option<Store>,
    run_dir: &Path,
    source: Source,
) -> Option<i32> {
    try_record(store, run_dir, source).await.err()
}

/// [`record_or_report`], keeping the record: `Ok(None)` without a store, `Err(code)` when
/// recording failed (said on stderr).
pub async fn try_record(
    store: &mut Option<Store>,
    run_dir: &Path,
    source: Source,
) -> Result<Option<Record>, i32> {
    let Some(s) = store.as_mut() else {
        return Ok(None);
    };
    match record(s, run_dir, source).await {
        Ok(r) => Ok(Some(r)),
        Err(e) => {
            crate::errln!(
                "error: {e} (the run directory {} is complete)",
                run_dir.display()
            );
            Err(e.exit_code())
        }
    }
}

/// A command's exit code once the store had its say: a verdict that did not pass keeps its own
/// code (a violation must not read as a store problem); a pass becomes the store's failure.
pub fn exit_with(code: i32, store_failure: Option<i32>) -> i32 {
    match store_failure {
        Some(s) if code == exit::PASS => s,
        _ => code,
    }
}

#[cfg(test)]
mod tests;
