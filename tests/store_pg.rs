//! The results store on a real PostgreSQL server (issue 35, item 5): the test starts a private
//! server from Debian's `postgresql` package (`initdb` into a temporary directory, `pg_ctl
//! start` on 127.0.0.1 and a free port, its socket in that directory), runs the checks the
//! SQLite store passes (`tests/support/store_checks.rs`), then `pulsar-chaos trends` end to
//! end on it. The server is stopped and its directory removed when the test ends, passed or
//! not. PostgreSQL missing is a failure, not a skip: `apt-get install -y postgresql`
//! (`scripts/prepare` does), or set PG_BIN to the directory of `initdb` and `pg_ctl`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pulsar_chaos::results::Record;
use pulsar_chaos::store::{Location, Store, StoreError, SCHEMA_VERSION};

#[path = "support/bin.rs"]
mod bin;
#[path = "support/store_checks.rs"]
mod store_checks;

/// The directory of `initdb` and `pg_ctl`: PG_BIN, else the newest
/// `/usr/lib/postgresql/<major>/bin` (Debian keeps them off the PATH), else the PATH.
fn pg_bin() -> PathBuf {
    if let Some(d) = std::env::var_os("PG_BIN") {
        return PathBuf::from(d);
    }
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((major, bin))
        })
        .collect();
    majors.sort();
    if let Some((_, bin)) = majors.pop() {
        return bin;
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    on_path.unwrap_or_else(|| {
        panic!(
            "PostgreSQL's initdb and pg_ctl were not found (in PG_BIN, /usr/lib/postgresql/*/bin or the PATH): this test needs a real server; install it with `apt-get install -y postgresql` (scripts/prepare does)"
        )
    })
}

/// The uid and gid of a user, from /etc/passwd.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

fn ok(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A private PostgreSQL server; stopped, and its directory removed, when dropped.
struct Server {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// The server refuses to run as root: then it runs as this user.
    run_as: Option<String>,
    started: bool,
}

impl Server {
    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A server tool, as the server's user.
    fn tool(&self, name: &str) -> Command {
        let exe = self.bin.join(name);
        match &self.run_as {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }

    fn start() -> Server {
        let bin = pg_bin();
        let dir = tempfile::Builder::new()
            .prefix("pc-store-pg-")
            .tempdir()
            .unwrap();
        // initdb refuses root: the server then runs as Debian's `postgres` user, which must
        // own its directory.
        let run_as = rustix::process::geteuid().is_root().then(|| {
            let (uid, gid) = user_ids("postgres").unwrap_or_else(|| {
                panic!("running as root and there is no `postgres` user to run the server as (Debian's postgresql package creates it)")
            });
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
            "postgres".to_string()
        });
        // A free port: bound by the system, then released for the server.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut s = Server {
            bin,
            dir,
            port,
            run_as,
            started: false,
        };
        let data = s.data();
        ok(
            "initdb",
            s.tool("initdb")
                .arg("-D")
                .arg(&data)
                .args([
                    "-U",
                    "chaos",
                    "--auth=trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--no-locale",
                ])
                .output(),
        );
        let log = s.dir.path().join("server.log");
        // -w: pg_ctl returns once the server accepts connections (or fails).
        let started = s
            .tool("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "120", "-o"])
            .arg(format!(
                "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c max_connections=40",
                s.dir.path().display()
            ))
            .arg("start")
            .output();
        s.started = true;
        if !matches!(&started, Ok(o) if o.status.success()) {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("pg_ctl start failed: {started:?}\nserver log:\n{log}");
        }
        // The condition the server is ready on, asked of the server itself.
        ok(
            "pg_isready",
            Command::new(s.bin.join("pg_isready"))
                .args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &port.to_string(),
                    "-U",
                    "chaos",
                    "-t",
                    "30",
                ])
                .output(),
        );
        s
    }

    /// A new, empty database and its URL, as `--store` takes it.
    fn database(&self, name: &str) -> String {
        ok(
            "createdb",
            Command::new(self.bin.join("createdb"))
                .args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "chaos",
                    name,
                ])
                .output(),
        );
        format!("postgres://chaos@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.started {
            let _ = self
                .tool("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"])
                .output();
        }
        // The TempDir removes the directory after this.
    }
}

fn write_records(url: &str, records: &[Record]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut s = Store::open(&Location::parse(url)).await.unwrap();
        for r in records {
            s.insert(r, 0).await.unwrap();
        }
        s.close().await;
    });
}

fn night(day: u32, hour: u64) -> u64 {
    pulsar_chaos::results::parse_date(&format!("2026-11-{day:02}")).unwrap() + hour * 3_600_000
}

fn pulsar_chaos(args: &[&str], cwd: &Path) -> Output {
    Command::new(&*bin::BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("PULSAR_CHAOS_STORE")
        .output()
        .unwrap()
}

#[test]
fn the_store_works_on_a_real_postgresql_server() {
    let server = Server::start();
    let mut n = 0;
    store_checks::all(&mut |name| {
        n += 1;
        server.database(&format!("{name}_{n}"))
    });

    // `trends` end to end on the server: the JSON and the page.
    let url = server.database("trends");
    let mut a = store_checks::record("r1", night(28, 1));
    a.status = "pass".into();
    a.findings.clear();
    let mut b = store_checks::record("r2", night(29, 2));
    b.findings = vec!["apache/pulsar#24945".into()];
    let mut c = store_checks::record("r3", night(30, 3));
    c.findings = vec!["apache/pulsar#24945".into()];
    write_records(&url, &[a, b, c]);
    let work = tempfile::tempdir().unwrap();
    let out = pulsar_chaos(&["trends", "--json", "--store", &url], work.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t: pulsar_chaos::results::Trends = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t.runs, 3);
    assert_eq!(t.groups.len(), 1);
    let rates: Vec<f64> = t.groups[0].nights.iter().map(|n| n.pass_rate).collect();
    assert_eq!(rates, [1.0, 0.0, 0.0]);
    let f = &t.findings[0];
    assert_eq!(
        (
            f.finding.as_str(),
            f.first_seen.as_str(),
            f.last_seen.as_str()
        ),
        ("apache/pulsar#24945", "2026-11-29", "2026-11-30")
    );
    // The filters reach the store's records too.
    let out = pulsar_chaos(
        &["trends", "--json", "--store", &url, "--since", "2026-11-30"],
        work.path(),
    );
    let t: pulsar_chaos::results::Trends = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t.runs, 1);
    // The page, in the current directory by default.
    let out = pulsar_chaos(&["trends", "--store", &url], work.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(work.path().join("trends.html")).unwrap();
    assert!(html.contains("data-finding=\"apache/pulsar#24945\""));
    // A server that is not there: exit 3, the URL named without its password.
    let gone = format!("postgres://chaos:s3cret@127.0.0.1:{}/nowhere", server.port);
    let out = pulsar_chaos(&["trends", "--json", "--store", &gone], work.path());
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("chaos:***@") && !err.contains("s3cret"),
        "{err}"
    );
}
