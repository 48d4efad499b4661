//! The Pulsar image: which one a run uses, and how the local one is built without Docker Hub.
//!
//! The local image is a Debian root filesystem from `debootstrap` plus the broker's runtime jars
//! from Maven Central and the project's own launcher and `conf/` (all under `docker/`, embedded
//! in the binary). Its tag carries a hash of those inputs, so an unchanged build is skipped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::process::Command;

use super::engine::{Engine, LABEL_IMAGE_INPUTS};
use super::ClusterError;
use crate::versions;

/// The official image of a Pulsar version.
pub fn official_image(version: &str) -> String {
    format!("apachepulsar/pulsar:{version}")
}

/// Debian suite and packages of the root filesystem.
pub const DEBIAN_SUITE: &str = "bookworm";
/// Besides the version's Java runtime (`versions::Profile::jre`).
pub const DEBIAN_PACKAGES: &str = "iproute2,nftables,procps,curl,ca-certificates,python3-minimal";

/// Every Debian package of the root filesystem for a version.
/// The cache's directory of downloaded Debian packages (debootstrap's `--cache-dir`), which
/// `scripts/prepare` fills while cargo compiles.
pub const DEBS_DIR: &str = "debs";

pub fn debian_packages(version: &str) -> String {
    format!("{},{DEBIAN_PACKAGES}", versions::profile(version).jre)
}

/// The conf lines a version adds (`versions::Profile::conf`), as text for the hash.
fn conf_overrides(version: &str) -> String {
    versions::profile(version)
        .conf
        .iter()
        .map(|(f, k, v)| format!("{f}:{k}={v}\n"))
        .collect()
}
/// Bumped when the recipe below changes in a way the inputs do not show.
const RECIPE: &str = "pulsar-chaos image recipe 1";

/// The files of `docker/`, as (path inside /pulsar, contents, mode).
pub const FILES: &[(&str, &str, u32)] = &[
    (
        "conf/standalone.conf",
        include_str!("../../docker/conf/standalone.conf"),
        0o644,
    ),
    (
        "conf/broker.conf",
        include_str!("../../docker/conf/broker.conf"),
        0o644,
    ),
    (
        "conf/bookkeeper.conf",
        include_str!("../../docker/conf/bookkeeper.conf"),
        0o644,
    ),
    (
        "conf/zookeeper.conf",
        include_str!("../../docker/conf/zookeeper.conf"),
        0o644,
    ),
    (
        "conf/log4j2.xml",
        include_str!("../../docker/conf/log4j2.xml"),
        0o644,
    ),
    ("bin/pulsar", include_str!("../../docker/bin/pulsar"), 0o755),
    (
        "bin/apply-config-from-env.py",
        include_str!("../../docker/bin/apply-config-from-env.py"),
        0o755,
    ),
];
pub const POM: &str = include_str!("../../docker/pom.xml");

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hash_of(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    hex(&h.finalize())
}

/// The hash of every input of the local image of a version.
pub fn inputs_hash(version: &str) -> String {
    let packages = debian_packages(version);
    let conf = conf_overrides(version);
    let maven: String = versions::profile(version)
        .maven
        .iter()
        .map(|(k, v)| format!("-D{k}={v}\n"))
        .collect();
    let mut parts: Vec<&str> = vec![RECIPE, version, DEBIAN_SUITE, &packages, POM];
    if !conf.is_empty() {
        parts.push(&conf);
    }
    if !maven.is_empty() {
        parts.push(&maven);
    }
    for (path, text, _) in FILES {
        parts.push(path);
        parts.push(text);
    }
    hash_of(&parts)
}

/// The tag of the local image of a version for the current inputs.
pub fn local_image(version: &str) -> String {
    format!(
        "pulsar-chaos/pulsar:{version}-{}",
        &inputs_hash(version)[..12]
    )
}

/// Where an image came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// Named by the scenario or --image and present (or pulled).
    Named,
    /// The official image, present or pulled.
    Official,
    /// The locally built image, because the official one could not be had.
    Local { official_unavailable: String },
}

/// Pick the image a cluster runs. A named image must exist or be pullable. With none named,
/// the official image is tried first, then the locally built one.
pub async fn resolve(
    engine: &Engine,
    named: Option<&str>,
    version: &str,
) -> Result<(String, ImageSource), ClusterError> {
    if let Some(img) = named {
        if engine.image_exists(img).await? {
            return Ok((img.to_string(), ImageSource::Named));
        }
        return match engine.pull(img, Duration::from_secs(600)).await {
            Ok(()) => Ok((img.to_string(), ImageSource::Named)),
            Err(reason) => Err(ClusterError::ImageMissing {
                image: img.to_string(),
                reason: format!("not present locally and the pull failed: {reason}"),
            }),
        };
    }
    let official = official_image(version);
    if engine.image_exists(&official).await? {
        return Ok((official, ImageSource::Official));
    }
    let pull_err = match engine.pull(&official, Duration::from_secs(600)).await {
        Ok(()) => return Ok((official, ImageSource::Official)),
        Err(e) => e,
    };
    let local = local_image(version);
    if engine.image_exists(&local).await? {
        return Ok((
            local,
            ImageSource::Local {
                official_unavailable: pull_err,
            },
        ));
    }
    Err(ClusterError::ImageMissing {
        image: format!("{official} (or the local {local})"),
        reason: format!(
            "the official image could not be pulled ({pull_err}) and the local one is not built (pulsar-chaos image build --pulsar-version {version})"
        ),
    })
}

/// The image used for sidecars that change a container's network (needs tc and nft): a local
/// image when one exists (of the cluster's version, else of the default one), else the
/// cluster's own image.
pub async fn tools_image(
    engine: &Engine,
    cluster_image: &str,
    version: &str,
) -> Result<String, ClusterError> {
    for v in [version, versions::DEFAULT] {
        let local = local_image(v);
        if engine.image_exists(&local).await? {
            return Ok(local);
        }
    }
    Ok(cluster_image.to_string())
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub tag: String,
    pub skipped: bool,
    pub steps: Vec<(String, Duration)>,
    pub total: Duration,
}

/// Where downloaded and built inputs are kept between builds.
pub fn cache_dir() -> PathBuf {
    if let Ok(d) = std::env::var("PULSAR_CHAOS_CACHE") {
        return PathBuf::from(d);
    }
    let home = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|_| PathBuf::from("/var/cache"));
    home.join("pulsar-chaos")
}

fn build_err(step: &str) -> impl Fn(String) -> ClusterError + '_ {
    move |message| ClusterError::ImageBuild {
        step: step.to_string(),
        message,
    }
}

async fn run(step: &str, cmd: &mut Command) -> Result<(), ClusterError> {
    let out = cmd.stdin(Stdio::null()).output().await.map_err(|e| {
        build_err(step)(format!("cannot run {:?}: {e}", cmd.as_std().get_program()))
    })?;
    if !out.status.success() {
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        let tail: Vec<&str> = text.lines().rev().take(25).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(build_err(step)(format!(
            "{:?} exited with {}:\n{}",
            cmd.as_std().get_program(),
            out.status,
            tail.join("\n")
        )));
    }
    Ok(())
}

/// Whether `tool` is a file in one of `PATH`'s directories.
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

fn need(tool: &str, package: &str) -> Result<(), ClusterError> {
    if on_path(tool) {
        Ok(())
    } else {
        Err(build_err("prerequisites")(format!(
            "`{tool}` is not installed (Debian package {package})"
        )))
    }
}

/// The cached root filesystem for `packages`, made with debootstrap if not there yet.
async fn ensure_rootfs(
    cache: &Path,
    packages: &str,
    steps: &mut Vec<(String, Duration)>,
) -> Result<PathBuf, ClusterError> {
    let t = Instant::now();
    let rootfs = cache.join(format!(
        "rootfs-{}",
        &hash_of(&[DEBIAN_SUITE, packages])[..12]
    ));
    if !rootfs.join("usr/bin/java").exists() {
        let tmp = cache.join("rootfs.tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        let mirror = std::env::var("PULSAR_CHAOS_DEBIAN_MIRROR")
            .unwrap_or_else(|_| "http://deb.debian.org/debian".to_string());
        tracing::info!(
            "debootstrap {DEBIAN_SUITE} into {} (about a minute)",
            tmp.display()
        );
        // Packages downloaded once (by this build or by scripts/prepare) are kept for the next.
        let debs = cache.join(DEBS_DIR);
        std::fs::create_dir_all(&debs).map_err(|e| build_err("debootstrap")(e.to_string()))?;
        run(
            "debootstrap",
            Command::new("debootstrap")
                .arg("--variant=minbase")
                .arg(format!("--cache-dir={}", debs.display()))
                .arg(format!("--include={packages}"))
                .arg(DEBIAN_SUITE)
                .arg(&tmp)
                .arg(&mirror),
        )
        .await?;
        trim_rootfs(&tmp).map_err(build_err("trim rootfs"))?;
        let _ = std::fs::remove_dir_all(&rootfs);
        std::fs::rename(&tmp, &rootfs).map_err(|e| build_err("rootfs")(e.to_string()))?;
        steps.push(("debootstrap".to_string(), t.elapsed()));
    }
    Ok(rootfs)
}

/// The cached runtime jars of the broker of `version`, resolved with Maven if not there yet.
async fn ensure_lib(
    cache: &Path,
    version: &str,
    steps: &mut Vec<(String, Duration)>,
) -> Result<PathBuf, ClusterError> {
    let t = Instant::now();
    let maven_props: String = versions::profile(version)
        .maven
        .iter()
        .map(|(k, v)| format!("{k}={v};"))
        .collect();
    let pom_hash = &hash_of(&[POM, version, &maven_props])[..12];
    let lib = cache.join(format!("lib-{version}-{pom_hash}"));
    if !lib.join(format!("pulsar-broker-{version}.jar")).exists() {
        let work = cache.join(format!("maven-{pom_hash}"));
        std::fs::create_dir_all(&work).map_err(|e| build_err("maven")(e.to_string()))?;
        std::fs::write(work.join("pom.xml"), POM).map_err(|e| build_err("maven")(e.to_string()))?;
        let tmp = cache.join("lib.tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        tracing::info!("resolving org.apache.pulsar:pulsar-broker:{version} and its runtime closure from Maven Central");
        run(
            "maven",
            Command::new("mvn")
                .current_dir(&work)
                .arg("-q")
                .arg("-B")
                .arg(format!("-Dpulsar.version={version}"))
                .args(
                    versions::profile(version)
                        .maven
                        .iter()
                        .map(|(k, v)| format!("-D{k}={v}")),
                )
                .arg("dependency:copy-dependencies")
                .arg("-DincludeScope=runtime")
                .arg(format!("-DoutputDirectory={}", tmp.display())),
        )
        .await?;
        let _ = std::fs::remove_dir_all(&lib);
        std::fs::rename(&tmp, &lib).map_err(|e| build_err("maven")(e.to_string()))?;
        steps.push(("maven".to_string(), t.elapsed()));
    }
    Ok(lib)
}

/// The Dockerfile-like changes applied to the imported image of `version`.
fn image_changes(version: &str) -> Vec<String> {
    vec![
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/pulsar/bin"
            .to_string(),
        "ENV LANG=C.UTF-8".to_string(),
        "WORKDIR /pulsar".to_string(),
        "USER 10000".to_string(),
        format!("LABEL {LABEL_IMAGE_INPUTS}={}", inputs_hash(version)),
        format!("LABEL org.apache.pulsar.version={version}"),
        "CMD [\"bin/pulsar\", \"standalone\", \"-nfw\", \"-nss\"]".to_string(),
    ]
}

/// The image `tag` exists and was built from this binary's inputs for `version` (an image
/// without the inputs label counts as up to date: one the user made).
async fn up_to_date(engine: &Engine, tag: &str, version: &str) -> Result<bool, ClusterError> {
    Ok(engine.image_labels(tag).await?.is_some_and(|labels| {
        labels
            .get(LABEL_IMAGE_INPUTS)
            .map(|h| h == &inputs_hash(version))
            .unwrap_or(true)
    }))
}

/// Build the local image of a Pulsar version unless an image with the same inputs exists (or
/// `force`).
pub async fn build(
    engine: &Engine,
    version: &str,
    force: bool,
) -> Result<BuildReport, ClusterError> {
    versions::validate(version).map_err(build_err("version"))?;
    let started = Instant::now();
    let tag = local_image(version);
    let packages = debian_packages(version);
    let mut steps = Vec::new();
    let skipped = |steps| BuildReport {
        tag: tag.clone(),
        skipped: true,
        steps,
        total: started.elapsed(),
    };
    if !force && up_to_date(engine, &tag, version).await? {
        return Ok(skipped(steps));
    }
    need("debootstrap", "debootstrap")?;
    need("mvn", "maven")?;
    need("tar", "tar")?;
    let cache = cache_dir();
    std::fs::create_dir_all(&cache)
        .map_err(|e| build_err("cache")(format!("{}: {e}", cache.display())))?;
    // One build at a time per cache (they share the root filesystem and the staging
    // directory); one that waited finds the image another just built.
    let _lock = crate::lock::exclusive(&cache.join("build.lock"))
        .await
        .map_err(build_err("lock"))?;
    if !force && up_to_date(engine, &tag, version).await? {
        return Ok(skipped(steps));
    }

    // 1. Root filesystem.
    let rootfs = ensure_rootfs(&cache, &packages, &mut steps).await?;

    // 2. The broker's runtime jars.
    let lib = ensure_lib(&cache, version, &mut steps).await?;

    // 3. Stage /pulsar.
    let t = Instant::now();
    let stage = cache.join("stage");
    let _ = std::fs::remove_dir_all(&stage);
    stage_pulsar(&stage, &lib, version).map_err(build_err("stage /pulsar"))?;
    steps.push(("stage".to_string(), t.elapsed()));

    // 4. Import: the root filesystem and /pulsar as one tar stream.
    let t = Instant::now();
    let mut child = Command::new("tar")
        .arg("--numeric-owner")
        .arg("-C")
        .arg(&rootfs)
        .arg("-cf")
        .arg("-")
        .arg(".")
        .arg("-C")
        .arg(&stage)
        .arg("pulsar")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| build_err("tar")(e.to_string()))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let stream = tokio_util::io::ReaderStream::with_capacity(stdout, 1 << 20);
    let (repo, t_tag) = super::engine::split_image(&tag);
    let changes = image_changes(version);
    let imported = engine.import_rootfs(stream, &repo, &t_tag, changes).await;
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| build_err("tar")(e.to_string()))?;
    imported?;
    if !out.status.success() {
        return Err(build_err("tar")(
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    let _ = std::fs::remove_dir_all(&stage);
    steps.push(("import".to_string(), t.elapsed()));
    Ok(BuildReport {
        tag: tag.clone(),
        skipped: false,
        steps,
        total: started.elapsed(),
    })
}

/// Drop what a container never needs, and add the user the official image runs as.
fn trim_rootfs(root: &Path) -> Result<(), String> {
    for dir in [
        "var/cache/apt/archives",
        "var/lib/apt/lists",
        "usr/share/doc",
        "usr/share/man",
        "usr/share/locale",
        "usr/share/info",
    ] {
        let d = root.join(dir);
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    let _ = std::fs::remove_dir_all(&p);
                } else if p.file_name().map(|n| n != "lock").unwrap_or(true) {
                    let _ = std::fs::remove_file(&p);
                }
            }
        }
    }
    let passwd = root.join("etc/passwd");
    let mut text = std::fs::read_to_string(&passwd).map_err(|e| e.to_string())?;
    if !text.contains(":10000:") {
        text.push_str("pulsar:x:10000:0:pulsar:/pulsar/data:/bin/sh\n");
        std::fs::write(&passwd, text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// /pulsar: lib (hard links into the jar cache), conf, bin, writable data and logs.
fn stage_pulsar(stage: &Path, lib: &Path, version: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let p = stage.join("pulsar");
    for d in ["lib", "conf", "bin", "data", "logs"] {
        std::fs::create_dir_all(p.join(d)).map_err(|e| e.to_string())?;
    }
    for e in std::fs::read_dir(lib).map_err(|e| e.to_string())? {
        let e = e.map_err(|e| e.to_string())?;
        let dst = p.join("lib").join(e.file_name());
        if std::fs::hard_link(e.path(), &dst).is_err() {
            std::fs::copy(e.path(), &dst).map_err(|e| e.to_string())?;
        }
    }
    for (path, text, mode) in FILES {
        let dst = p.join(path);
        let mut text = text.to_string();
        for (file, key, value) in versions::profile(version).conf {
            if path.strip_prefix("conf/") == Some(file) {
                text.push_str(&format!("\n# for Pulsar {version}\n{key}={value}\n"));
            }
        }
        std::fs::write(&dst, text).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(*mode))
            .map_err(|e| e.to_string())?;
    }
    // The official image gives uid 10000 (group root) the writable directories.
    for d in ["data", "logs", "conf"] {
        chown_tree(&p.join(d), 10000, 0)?;
    }
    for d in ["data", "logs"] {
        std::fs::set_permissions(p.join(d), std::fs::Permissions::from_mode(0o775))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> Result<(), String> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .map_err(|e| format!("chown {}: {e}", path.display()))?;
    if path.is_dir() {
        for e in std::fs::read_dir(path).map_err(|e| e.to_string())? {
            chown_tree(&e.map_err(|e| e.to_string())?.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Connect to Docker and pick the image of a Pulsar version (printing which one and why).
pub async fn engine_and_image(
    named: Option<&str>,
    version: &str,
) -> Result<(Engine, String), ClusterError> {
    let engine = Engine::connect().await?;
    let (img, source) = match resolve(&engine, named, version).await {
        // Neither the official image nor the local one: the local one is built on its first
        // use (scripts/prepare builds only the default version's ahead).
        Err(ClusterError::ImageMissing { .. }) if named.is_none() => {
            crate::errln!(
                "image: {} is not built yet: building it now (Debian packages and Maven Central jars, a few minutes the first time; `pulsar-chaos image build --pulsar-version {version}` does it ahead)",
                local_image(version)
            );
            let built = build(&engine, version, false).await?;
            crate::errln!(
                "image: {} built in {:.0} s",
                built.tag,
                built.total.as_secs_f64()
            );
            resolve(&engine, named, version).await?
        }
        other => other?,
    };
    match source {
        ImageSource::Local {
            official_unavailable,
        } => crate::errln!(
            "image: {img} (built locally; {} unavailable: {official_unavailable})",
            official_image(version)
        ),
        _ => crate::errln!("image: {img}"),
    }
    Ok((engine, img))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_follows_the_version_and_the_inputs() {
        let t = local_image(versions::DEFAULT);
        assert!(
            t.starts_with(&format!("pulsar-chaos/pulsar:{}-", versions::DEFAULT)),
            "{t}"
        );
        assert_eq!(t, local_image(versions::DEFAULT));
        let other = local_image("4.0.7");
        assert!(other.starts_with("pulsar-chaos/pulsar:4.0.7-"), "{other}");
        assert_ne!(inputs_hash("4.0.7"), inputs_hash(versions::DEFAULT));
        assert_eq!(official_image("4.2.4"), "apachepulsar/pulsar:4.2.4");
        assert_ne!(hash_of(&["a", "bc"]), hash_of(&["ab", "c"]));
    }

    #[test]
    fn the_pom_takes_the_version_from_the_command_line() {
        // The build passes -Dpulsar.version=V; the pom's own value (4.0.7, the first version
        // built) is only a fallback, and the dependencies take the property.
        assert!(POM.contains("<pulsar.version>4.0.7</pulsar.version>"));
        assert!(
            POM.contains("<version>${pulsar.version}</version>"),
            "{POM}"
        );
        assert!(debian_packages("4.2.4").starts_with("openjdk-17-jre-headless,"));
    }

    #[test]
    fn prepare_warms_what_the_default_image_build_downloads() {
        let prepare = include_str!("../../scripts/prepare");
        let line = |key: &str| {
            prepare
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("scripts/prepare has no `{key}=` line"))
                .to_string()
        };
        assert_eq!(line("warm_version"), versions::DEFAULT);
        assert_eq!(line("warm_packages"), debian_packages(versions::DEFAULT));
        assert_eq!(line("warm_suite"), DEBIAN_SUITE);
        assert!(prepare.contains(&format!("--cache-dir=\"$cache/{DEBS_DIR}\"")));
    }
}
