//! Shared by the zk_* tests: a real `ward-server` process with both listeners on port 0, and
//! runners for the kazoo scripts (server/tests/zk/) and the Java ZooKeeper tools.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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

fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("zk")
}

/// True if python3 with kazoo is here. Without python3 the caller skips, loudly; .ci/run
/// installs both, so CI never skips.
pub fn have_kazoo() -> bool {
    match Command::new("python3").args(["-c", "import kazoo"]).output() {
        Ok(out) if out.status.success() => true,
        Ok(_) => panic!("python3 is here but kazoo is not: python3 -m pip install kazoo (.ci/run does)"),
        Err(_) => {
            eprintln!("\n!!!!!!!! SKIPPED: python3 is missing, so kazoo cannot run (.ci/run installs it) !!!!!!!!\n");
            false
        }
    }
}

/// Runs a command to completion within `limit`, killing it past that.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} did not finish within {limit:?}: stderr {:?}",
                String::from_utf8_lossy(&err_reader.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: out_reader.join().unwrap_or_default(), stderr: err_reader.join().unwrap_or_default() }
}

/// Runs server/tests/zk/`script` with `args`; panics with its stderr unless it exits 0.
pub fn python(script: &str, args: &[&str]) -> String {
    let mut cmd = Command::new("python3");
    cmd.current_dir(scripts()).arg(script).args(args);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{script} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

pub fn expected(name: &str) -> String {
    std::fs::read_to_string(scripts().join(name)).expect("expected output file")
}

/// The classpath of Debian's `zookeeper` package (installed by .ci/run), or `None`, loudly,
/// when java or the package is missing.
pub fn zookeeper_classpath() -> Option<String> {
    let jars =
        ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-all.jar", "commons-cli.jar"];
    let dir = PathBuf::from("/usr/share/java");
    let have_java = Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
    if !have_java || !jars.iter().all(|j| dir.join(j).exists()) {
        eprintln!(
            "\n!!!!!!!! SKIPPED: java or Debian's zookeeper package is missing (.ci/run installs them) !!!!!!!!\n"
        );
        return None;
    }
    Some(jars.iter().map(|j| dir.join(j).display().to_string()).collect::<Vec<_>>().join(":"))
}

/// Runs a Java program (a single source file under server/tests/zk/) with the ZooKeeper jars.
pub fn java(classpath: &str, source: &str, args: &[&str]) -> String {
    let mut cmd = Command::new("java");
    cmd.current_dir(scripts()).args(["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", classpath, source]).args(args);
    let out = run_bounded(cmd, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{source} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
