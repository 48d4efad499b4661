//! A driver built when first needed, cached by its inputs: the sources embedded in the binary
//! (so the binary builds its drivers wherever it runs, as it builds its image), the client and
//! the library version. A second build of the same inputs is a directory lookup.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::process::Command;

use super::{ClientKind, DriverError, Spec};

/// The Java driver's sources (`drivers/java/`), as (path, content).
const JAVA: &[(&str, &str)] = &[
    ("pom.xml", include_str!("../../drivers/java/pom.xml")),
    (
        "src/main/java/dev/pulsarchaos/driver/Driver.java",
        include_str!("../../drivers/java/src/main/java/dev/pulsarchaos/driver/Driver.java"),
    ),
    (
        "src/main/resources/simplelogger.properties",
        include_str!("../../drivers/java/src/main/resources/simplelogger.properties"),
    ),
];

/// The Go driver's sources (`drivers/go/`).
const GO: &[(&str, &str)] = &[
    ("go.mod", include_str!("../../drivers/go/go.mod")),
    ("go.sum", include_str!("../../drivers/go/go.sum")),
    ("main.go", include_str!("../../drivers/go/main.go")),
];

/// A built driver: the command that starts it.
#[derive(Debug, Clone)]
pub struct Built {
    pub spec: Spec,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The build took this long (zero when it was cached).
    pub took: Duration,
}

/// The JIT a Java driver's JVM runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jit {
    /// Both tiers (the JVM's default).
    Full,
    /// The first tier only (`-XX:TieredStopAtLevel=1`).
    Quick,
}

impl Jit {
    /// The JIT for a workload: the first tier for a transform, both for a producer, unless
    /// `PULSAR_CHAOS_DRIVER_JIT` (`full` or `quick`) says otherwise. Measured on 2 cores beside
    /// the broker (BENCHMARKS.md section 6, 2026-12-07): with both tiers the compilers ran
    /// 8.1 s in a transform driver's first 9 s, and the first tier alone made the Java
    /// transform 1.08-1.65x faster at T=10 (0.91-1.21x at T=100); the producer's sends are
    /// the client's own hot loop, and the first tier alone made it 0.78-0.95x of pulsar-perf at
    /// T=100 where both had made 1.02x.
    pub fn for_workload(transform: bool) -> Jit {
        Jit::choose(
            std::env::var("PULSAR_CHAOS_DRIVER_JIT").ok().as_deref(),
            transform,
        )
    }

    /// `for_workload` with the variable's value given (any other value: the default).
    fn choose(env: Option<&str>, transform: bool) -> Jit {
        match env {
            Some("full") => Jit::Full,
            Some("quick") => Jit::Quick,
            _ if transform => Jit::Quick,
            _ => Jit::Full,
        }
    }
}

impl Built {
    /// The command that starts the driver with `jit` (a Go driver's is the same either way).
    pub fn command_with(&self, jit: Jit) -> Vec<String> {
        let mut c = self.command.clone();
        if self.spec.kind == ClientKind::Java && jit == Jit::Quick {
            c.insert(1, "-XX:TieredStopAtLevel=1".into());
        }
        c
    }
}

fn sources(kind: ClientKind) -> &'static [(&'static str, &'static str)] {
    match kind {
        ClientKind::Java => JAVA,
        ClientKind::Go => GO,
        ClientKind::Own => &[],
    }
}

/// The build flags the toolchain takes from the environment that change the artifact: Go's
/// `GOFLAGS` (`GOFLAGS=-race` builds a driver that reports data races in its `driver.log`).
pub fn build_flags(kind: ClientKind) -> String {
    match kind {
        ClientKind::Go => std::env::var("GOFLAGS").unwrap_or_default(),
        _ => String::new(),
    }
}

/// The hash of a driver's inputs: its sources, the library version and the build flags.
pub fn inputs_hash(spec: &Spec, flags: &str) -> String {
    let mut h = Sha256::new();
    for part in [spec.kind.name(), spec.version.as_str(), flags]
        .into_iter()
        .chain(sources(spec.kind).iter().flat_map(|(p, c)| [*p, *c]))
    {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where the driver of `spec` is kept once built.
pub fn dir_of(spec: &Spec) -> PathBuf {
    crate::cluster::image::cache_dir()
        .join("drivers")
        .join(format!(
            "{}-{}-{}",
            spec.kind,
            spec.version,
            inputs_hash(spec, &build_flags(spec.kind))
        ))
}

/// The driver of `spec`, built now unless a build of the same inputs is cached.
pub async fn build(spec: &Spec) -> Result<Built, DriverError> {
    let err = |message: String| DriverError::Build {
        client: spec.to_string(),
        message,
    };
    let dir = dir_of(spec);
    let (tools, artifact, command): (&[&str], &str, Vec<String>) = match spec.kind {
        ClientKind::Java => (
            &["java", "mvn"],
            "driver.jar",
            vec![
                "java".into(),
                // A driver is a small client: a JVM's default heap (a quarter of the machine)
                // and JIT threads would only compete with the broker on a small machine.
                "-Xmx512m".into(),
                "-XX:+UseSerialGC".into(),
                "-jar".into(),
                dir.join("driver.jar").display().to_string(),
            ],
        ),
        ClientKind::Go => (
            &["go"],
            "driver",
            vec![dir.join("driver").display().to_string()],
        ),
        ClientKind::Own => return Err(err("the own client has no driver".into())),
    };
    for t in tools {
        if !crate::cluster::image::on_path(t) {
            return Err(err(format!(
                "`{t}` is not installed (scripts/prepare installs it: Debian package {})",
                match *t {
                    "java" => "openjdk-17-jre-headless",
                    "mvn" => "maven",
                    _ => "golang-go (1.22 or newer)",
                }
            )));
        }
    }
    let started = Instant::now();
    if dir.join(artifact).is_file() {
        return Ok(Built {
            spec: spec.clone(),
            command,
            took: Duration::ZERO,
        });
    }
    std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    // One build at a time per driver: a second run waits for the first's lock, then finds the
    // artifact.
    let locked = crate::lock::exclusive(&dir.join(".lock"))
        .await
        .map_err(err)?;
    if !dir.join(artifact).is_file() {
        compile(spec, &dir, artifact).await.map_err(err)?;
    }
    drop(locked);
    Ok(Built {
        spec: spec.clone(),
        command,
        took: started.elapsed(),
    })
}

/// Write the sources into `dir/src` and run the client's build there; the artifact is moved
/// to `dir/artifact` last, so a present artifact is a complete one.
async fn compile(spec: &Spec, dir: &Path, artifact: &str) -> Result<(), String> {
    let src = dir.join("src");
    let _ = std::fs::remove_dir_all(&src);
    for (path, content) in sources(spec.kind) {
        let p = src.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&p, content).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let (mut cmd, built) = match spec.kind {
        ClientKind::Java => {
            let mut c = Command::new("mvn");
            c.args(["-q", "-B", "-DskipTests"])
                .arg(format!("-Dpulsar.version={}", spec.version))
                .arg("package");
            (c, src.join("target/pulsar-chaos-driver.jar"))
        }
        _ => {
            let mut c = Command::new("go");
            c.args(["build", "-o", "driver.bin", "."]);
            (c, src.join("driver.bin"))
        }
    };
    let out = cmd
        .current_dir(&src)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| format!("{e}"))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        return Err(format!(
            "the build in {} failed ({}):\n{}",
            src.display(),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    std::fs::rename(&built, dir.join(artifact)).map_err(|e| format!("{}: {e}", built.display()))
}

#[cfg(test)]
mod tests {
    use super::{Built, ClientKind, Jit, Spec};
    use std::time::Duration;

    #[test]
    fn a_transform_s_java_driver_runs_the_first_jit_tier_a_producer_s_both() {
        assert_eq!(Jit::choose(None, true), Jit::Quick);
        assert_eq!(Jit::choose(None, false), Jit::Full);
        assert_eq!(Jit::choose(Some("full"), true), Jit::Full);
        assert_eq!(Jit::choose(Some("quick"), false), Jit::Quick);
        assert_eq!(Jit::choose(Some("C2"), false), Jit::Full);
        let built = |kind, command: &[&str]| Built {
            spec: Spec {
                kind,
                version: "4.2.4".into(),
            },
            command: command.iter().map(|s| s.to_string()).collect(),
            took: Duration::ZERO,
        };
        let java = built(ClientKind::Java, &["java", "-Xmx512m", "-jar", "d.jar"]);
        assert_eq!(
            java.command_with(Jit::Quick),
            [
                "java",
                "-XX:TieredStopAtLevel=1",
                "-Xmx512m",
                "-jar",
                "d.jar"
            ]
        );
        assert_eq!(java.command_with(Jit::Full), java.command);
        let go = built(ClientKind::Go, &["driver"]);
        assert_eq!(go.command_with(Jit::Quick), ["driver"]);
    }
}
