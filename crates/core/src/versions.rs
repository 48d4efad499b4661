//! The Pulsar versions the harness knows how to run, as data: the Java runtime each needs,
//! configuration that differs between versions, and what a check on Maven Central found. A
//! version not listed here is still accepted (the newest profile's needs are assumed). Pure.

/// The version a run uses when neither the scenario nor `--pulsar-version` names one: the
/// newest version whose broker closure Maven Central serves and that passes the bundled
/// scenarios (see docs/findings/known-bugs.md, "The default version"). 4.0.7 stays buildable
/// (`scripts/prepare` builds it too): it is the reference for the transaction bugs it has
/// (apache/pulsar#24945).
pub const DEFAULT: &str = "4.2.4";

/// What one Pulsar version needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub version: &'static str,
    /// The Debian package of the Java runtime the local image gets.
    pub jre: &'static str,
    /// Lines added to a conf file of the local image, as (file under conf/, key, value), where
    /// this version needs a setting the others do not.
    pub conf: &'static [(&'static str, &'static str, &'static str)],
    /// Maven properties the broker closure of this version needs (`-Dkey=value`): docker/pom.xml
    /// names its defaults.
    pub maven: &'static [(&'static str, &'static str)],
    /// What a check of Maven Central here found (docker/README.md has the table).
    pub note: &'static str,
}

const JRE_17: &str = "openjdk-17-jre-headless";

/// Versions checked here, oldest first.
pub const KNOWN: &[Profile] = &[
    Profile {
        version: "3.0.7",
        jre: JRE_17,
        conf: &[],
        // The 3.0 line is on SLF4J 1: its BOM manages log4j-slf4j-impl, not the slf4j2 one.
        maven: &[("log4j.slf4j.binding", "log4j-slf4j-impl")],
        note: "older LTS line: the closure resolves (279 jars) with the SLF4J 1 binding",
    },
    Profile {
        version: "4.0.7",
        jre: JRE_17,
        conf: &[],
        maven: &[],
        note: "resolves whole; has apache/pulsar#24945 (transaction buffer refuses sends after one failed write)",
    },
    Profile {
        version: "4.2.4",
        jre: JRE_17,
        conf: &[],
        maven: &[],
        note: "resolves whole; has the fixes of #24945, #23550 and #26234",
    },
];

/// The profile of `version`: the listed one, else the newest profile's needs under that name.
pub fn profile(version: &str) -> Profile {
    KNOWN
        .iter()
        .find(|p| p.version == version)
        .copied()
        .unwrap_or(Profile {
            version: KNOWN[KNOWN.len() - 1].version,
            note: "not checked here",
            ..KNOWN[KNOWN.len() - 1]
        })
}

/// A version as Maven Central and Docker Hub name them: digits and dots, three parts.
pub fn validate(version: &str) -> Result<(), String> {
    let parts: Vec<&str> = version.split('.').collect();
    if parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    {
        Ok(())
    } else {
        Err(format!(
            "`{version}` is not a Pulsar version such as {DEFAULT} (major.minor.patch)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_three_numbers() {
        assert!(validate("4.2.4").is_ok());
        assert!(validate("4.0.7").is_ok());
        for bad in ["4.2", "4.2.x", "latest", "4..1", "4.2.4-SNAPSHOT", ""] {
            assert!(validate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_default_is_listed_and_unknown_versions_get_the_newest_needs() {
        assert_eq!(profile(DEFAULT).version, DEFAULT);
        let p = profile("9.9.9");
        assert_eq!(p.jre, KNOWN.last().unwrap().jre);
        assert_eq!(p.note, "not checked here");
    }
}
