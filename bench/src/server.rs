//! A `ward-server` this benchmark starts and stops itself.

use crate::sys::{Error, Result};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct OwnedServer {
    child: Child,
    pub addr: String,
    /// The ZooKeeper listener's address, if it was switched on.
    pub zk_addr: Option<String>,
    pub pid: u32,
    dir: PathBuf,
    /// Leave the data directory when dropped: the process was stopped to be started again.
    keep: bool,
}

impl Drop for OwnedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
            let _ = std::fs::remove_file(self.dir.with_extension("log"));
        }
    }
}

impl OwnedServer {
    /// SIGTERM, as an operator stops it, and waits until the process has exited. Its data
    /// directory stays, to be started on again; how long it took to exit is returned.
    pub fn terminate(mut self) -> Result<Duration> {
        let signalled = Instant::now();
        let status = Command::new("kill").args(["-TERM", &self.pid.to_string()]).status()?;
        if !status.success() {
            return Err(Error(format!("kill -TERM {} failed", self.pid)));
        }
        self.child.wait()?;
        self.keep = true;
        Ok(signalled.elapsed())
    }

    /// SIGKILL, as a crash stops it, and waits until the process has exited. Its data
    /// directory stays, to be started on again.
    pub fn crash(mut self) -> Result<Duration> {
        let signalled = Instant::now();
        self.child.kill()?;
        self.child.wait()?;
        self.keep = true;
        Ok(signalled.elapsed())
    }

    /// The server's log (its stderr), as written so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.with_extension("log")).unwrap_or_default()
    }
}

/// The `ward-server` binary next to this program. Under `cargo run` (which builds only this
/// package) it is brought up to date first; otherwise it is built only if it is missing.
pub fn binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().ok_or_else(|| Error("no directory for the running binary".into()))?;
    let server = dir.join("ward-server");
    let cargo = std::env::var("CARGO").ok();
    if server.exists() && cargo.is_none() {
        return Ok(server);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut build = Command::new(cargo.unwrap_or_else(|| "cargo".into()));
    build.current_dir(&workspace).args(["build", "--quiet", "-p", "ward-server", "--bin", "ward-server"]);
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let status = build.status()?;
    if !status.success() || !server.exists() {
        return Err(Error(format!("could not build {}", server.display())));
    }
    Ok(server)
}

/// Starts a durable `ward-server` on a free loopback port with its log in `data_dir`.
pub fn start(data_dir: &Path) -> Result<OwnedServer> {
    start_with(data_dir, &[])
}

/// [`start`] with more options; with `--zk-listen`, the ZooKeeper listener's address is read
/// from the server's second line.
pub fn start_with(data_dir: &Path, extra: &[&str]) -> Result<OwnedServer> {
    let bin = binary()?;
    let log = std::fs::File::create(data_dir.with_extension("log"))?;
    let mut child = Command::new(&bin)
        // As the ZooKeeper it is compared with (maxClientCnxns=0): every session comes from
        // this one host.
        .args(["--max-connections-per-ip", "0", "--max-connections", "0"])
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or_else(|| Error("no stdout".into()))?;
    let mut lines = BufReader::new(stdout);
    let mut first = String::new();
    lines.read_line(&mut first)?;
    let mut zk_addr = None;
    if extra.contains(&"--zk-listen") {
        let mut second = String::new();
        lines.read_line(&mut second)?;
        zk_addr = second.trim().strip_prefix("ward-server zookeeper listening on ").map(str::to_string);
    }
    // Keep reading whatever else it prints so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.lines() {});
    let Some(addr) = first.trim().strip_prefix("ward-server listening on ") else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Error(format!("unexpected first line from ward-server: {first:?}")));
    };
    Ok(OwnedServer { addr: addr.to_string(), zk_addr, pid, child, dir: data_dir.to_path_buf(), keep: false })
}
