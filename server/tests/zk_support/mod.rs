//! Shared by the zk_* tests: a real `ward-server` process with both listeners on port 0, and
//! runners for the kazoo scripts (server/tests/zk/) and the Java ZooKeeper tools, which skip
//! loudly where those tools cannot be had ([`skip`]).

#![allow(dead_code)]

mod kazoo;
mod run;
mod skip;

pub use kazoo::Kazoo;
pub use run::run_ok;
pub use skip::skip;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A ward-server process, killed on drop.
pub struct Ward {
    child: Child,
    pub addr: String,
    pub zk_addr: String,
}

impl Ward {
    pub fn start() -> Ward {
        Ward::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> Ward {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ward-server"))
            .args(["--listen", "127.0.0.1:0", "--zk-listen", "127.0.0.1:0", "--in-memory"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ward-server");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut line = |prefix: &str| {
            let line = lines.next().expect("a line from ward-server").expect("read stdout");
            line.strip_prefix(prefix).unwrap_or_else(|| panic!("unexpected line {line:?}")).to_string()
        };
        let addr = line("ward-server listening on ");
        let zk_addr = line("ward-server zookeeper listening on ");
        Ward { child, addr, zk_addr }
    }
}

impl Drop for Ward {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("zk")
}

/// Runs server/tests/zk/`script` with `args` under kazoo's python; panics with its stderr
/// unless it exits 0.
pub fn python(kazoo: &Kazoo, script: &str, args: &[&str]) -> String {
    run_ok(kazoo.command(&scripts(), script, args), Duration::from_secs(90))
}

pub fn expected(name: &str) -> String {
    std::fs::read_to_string(scripts().join(name)).expect("expected output file")
}

/// The jars of Debian's `zookeeper` package that zkCli and the Java client need.
const JARS: [&str; 6] =
    ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-all.jar", "commons-cli.jar"];

/// The classpath of Debian's `zookeeper` package (installed by .ci/run), or `None` after a
/// loud [`skip`] when java or the package is missing.
pub fn zookeeper_classpath() -> Option<String> {
    let dir = PathBuf::from("/usr/share/java");
    let have_java = Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
    let missing: Vec<&str> = JARS.iter().copied().filter(|j| !dir.join(j).exists()).collect();
    if !have_java {
        skip("java is not on PATH (the ZooKeeper Java client and zkCli need it; .ci/run installs it)");
        return None;
    }
    if !missing.is_empty() {
        skip(&format!("{missing:?} missing from {}: install Debian's zookeeper package (.ci/run does)", dir.display()));
        return None;
    }
    Some(JARS.iter().map(|j| dir.join(j).display().to_string()).collect::<Vec<_>>().join(":"))
}

/// Runs a Java program (a single source file under server/tests/zk/) with the ZooKeeper jars.
pub fn java(classpath: &str, source: &str, args: &[&str]) -> String {
    let mut cmd = Command::new("java");
    cmd.current_dir(scripts()).args(["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", classpath, source]).args(args);
    run_ok(cmd, Duration::from_secs(90))
}
