//! ZooKeeper's own Java client and zkCli, from Debian's `zookeeper` package (its jars in
//! /usr/share/java; .ci/run installs it), and Apache Curator's recipes over it, from
//! Debian's `libcurator-recipes-java`.

use super::SCRIPT_LIMIT;
use crate::run::run_ok;
use crate::skip::skip;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The jars that zkCli and the Java client need.
const JARS: [&str; 6] =
    ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-all.jar", "commons-cli.jar"];
const JAR_DIR: &str = "/usr/share/java";
/// What Curator's recipes add to [`JARS`].
const CURATOR_JARS: [&str; 4] = ["curator-framework.jar", "curator-client.jar", "curator-recipes.jar", "guava.jar"];

/// java, and the classpath of ZooKeeper's jars.
#[derive(Clone, Debug)]
pub struct ZkJava {
    classpath: String,
}

impl ZkJava {
    /// The jars and java, or `None` after a loud [`skip`] saying which is missing.
    pub fn find() -> Option<ZkJava> {
        let have_java = Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
        if !have_java {
            skip("java is not on PATH (the ZooKeeper Java client and zkCli need it; .ci/run installs it)");
            return None;
        }
        let dir = PathBuf::from(JAR_DIR);
        let missing: Vec<&str> = JARS.iter().copied().filter(|j| !dir.join(j).exists()).collect();
        if !missing.is_empty() {
            skip(&format!("{missing:?} missing from {JAR_DIR}: install Debian's zookeeper package (.ci/run does)"));
            return None;
        }
        let classpath = JARS.iter().map(|j| dir.join(j).display().to_string()).collect::<Vec<_>>().join(":");
        Some(ZkJava { classpath })
    }

    /// The same with Curator's recipes on the classpath, or `None` after a loud [`skip`].
    pub fn with_curator(&self) -> Option<ZkJava> {
        let dir = PathBuf::from(JAR_DIR);
        let missing: Vec<&str> = CURATOR_JARS.iter().copied().filter(|j| !dir.join(j).exists()).collect();
        if !missing.is_empty() {
            skip(&format!(
                "{missing:?} missing from {JAR_DIR}: install Debian's libcurator-recipes-java (.ci/run does)"
            ));
            return None;
        }
        let jars = CURATOR_JARS.iter().map(|j| dir.join(j).display().to_string());
        let classpath = std::iter::once(self.classpath.clone()).chain(jars).collect::<Vec<_>>().join(":");
        Some(ZkJava { classpath })
    }

    pub fn classpath(&self) -> &str {
        &self.classpath
    }

    /// Runs the single-file Java program `source` (in `dir`) with `args`; panics with its
    /// output unless it exits 0, else returns its stdout.
    pub fn run(&self, dir: impl AsRef<Path>, source: &str, args: &[&str]) -> String {
        let mut cmd = Command::new("java");
        // Start-up speed over peak speed: these programs run for seconds.
        cmd.current_dir(dir)
            .args(["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", &self.classpath, source])
            .args(args);
        run_ok(cmd, SCRIPT_LIMIT)
    }
}
