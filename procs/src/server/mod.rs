//! A real `ward-server` process on 127.0.0.1: durable in a data directory of its own (or in
//! memory), optionally serving ZooKeeper clients too, and the faults a test inflicts on it.
//! Killed in `Drop`, its directory removed; when the test panics, its stderr's tail is
//! printed.

mod builder;
mod spawn;

pub use builder::ServerBuilder;
pub use spawn::{LOG_TAIL, STARTUP};

use crate::error::HarnessError;
use crate::locate::server_binary;
use crate::tempdir::TempDir;
use crate::wait::DEADLINE;
use spawn::{spawn, stop, Banners, LogTail};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Tries at binding the previous ports again after a restart.
const BIND_TRIES: u32 = 40;

/// Tries at a first start, each on newly chosen ports.
const FIRST_BIND_TRIES: u32 = 3;

/// `addr` itself unless its port is 0 (the harness's to choose): then a stable one.
fn stable_if_any(addr: SocketAddr) -> Result<SocketAddr, String> {
    match addr.port() {
        0 => crate::port::stable().map_err(|e| e.to_string()),
        _ => Ok(addr),
    }
}

/// One `ward-server`. [`restart`](Self::restart) starts it again on the same ports and data
/// directory, so clients given its address reconnect by themselves.
pub struct ServerProcess {
    /// `None` while killed.
    child: Option<Child>,
    addr: SocketAddr,
    zk_addr: Option<SocketAddr>,
    /// ZooKeeper's secure client port; `None`: not served.
    zk_tls_addr: Option<SocketAddr>,
    /// The admin HTTP listener's; `None`: `--admin-listen off` (the default, so that test
    /// servers never meet on the default port 7180).
    admin_addr: Option<SocketAddr>,
    options: ServerBuilder,
    log: LogTail,
    /// Incarnations started so far.
    starts: u32,
    // The working directory (whatever the server writes next to itself stays out of the
    // work tree) and the data directory's parent. Dropped after the child is killed: fields
    // drop after `Drop::drop`.
    dir: TempDir,
}

impl ServerProcess {
    /// Options for a server; [`ServerBuilder::start`] starts it.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// A durable server on a free port with default flags.
    pub fn start() -> ServerProcess {
        ServerProcess::builder().start()
    }

    /// A durable server with extra flags, e.g. `["--min-session-timeout-ms", "500"]`.
    pub fn start_with(flags: &[&str]) -> ServerProcess {
        ServerProcess::builder().flags(flags).start()
    }

    fn launch(options: ServerBuilder) -> Result<ServerProcess, String> {
        let mut attempt = 1;
        loop {
            match ServerProcess::launch_once(options.clone()) {
                // Another process bound a chosen port between its probe and the server's bind.
                Err(why) if why.contains("Address already in use") && attempt < FIRST_BIND_TRIES => attempt += 1,
                outcome => return outcome,
            }
        }
    }

    /// Starts the first incarnation, on ports it will keep ([`crate::port::stable`]) where
    /// the test left the choice to the harness.
    fn launch_once(mut options: ServerBuilder) -> Result<ServerProcess, String> {
        if !options.bare {
            options.listen = stable_if_any(options.listen)?;
            options.zk_listen = options.zk_listen.map(stable_if_any).transpose()?;
            options.zk_tls_listen = options.zk_tls_listen.map(stable_if_any).transpose()?;
            options.admin_listen = options.admin_listen.map(stable_if_any).transpose()?;
        }
        let (addr, zk_addr, admin_addr) = (options.listen, options.zk_listen, options.admin_listen);
        let log = match &options.log_file {
            Some(path) => LogTail::to_file(path).map_err(|e| format!("{}: {e}", path.display()))?,
            None => LogTail::default(),
        };
        let mut server = ServerProcess {
            child: None,
            addr,
            zk_addr,
            zk_tls_addr: options.zk_tls_listen,
            admin_addr,
            options,
            log,
            starts: 0,
            dir: TempDir::try_new("server").map_err(|e| e.to_string())?,
        };
        match server.spawn() {
            Ok(()) => Ok(server),
            Err(why) => Err(format!("{why}\nstderr:\n{}", server.log_tail())),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address as a connect string.
    pub fn addr_str(&self) -> String {
        self.addr.to_string()
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The ZooKeeper listener's address; panics unless started with [`ServerBuilder::zookeeper`].
    pub fn zk_addr(&self) -> SocketAddr {
        self.zk_addr.unwrap_or_else(|| panic!("ward-server {} was started without its ZooKeeper listener", self.addr))
    }

    /// ZooKeeper's secure client port; panics unless started with [`ServerBuilder::zk_tls`].
    pub fn zk_tls_addr(&self) -> SocketAddr {
        self.zk_tls_addr.unwrap_or_else(|| panic!("ward-server {} was started without --zk-tls-listen", self.addr))
    }

    /// The admin HTTP listener's address (`/metrics`, `/healthz`, `/readyz`); panics unless
    /// started with [`ServerBuilder::admin`].
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr.unwrap_or_else(|| panic!("ward-server {} was started without its admin listener", self.addr))
    }

    /// [`zk_addr`](Self::zk_addr) as a connect string.
    pub fn zk_addr_str(&self) -> String {
        self.zk_addr().to_string()
    }

    /// The data directory; panics for an in-memory server, which has none.
    pub fn data_dir(&self) -> PathBuf {
        assert!(!self.options.in_memory, "an in-memory ward-server has no data directory");
        self.dir.path().join("data")
    }

    /// The running process's id; `None` while killed.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL, then reap (which also releases the data directory's lock).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
    }

    /// SIGSTOP: the process stays, with its sockets open, and answers nothing until
    /// [`resume`](Self::resume) — a server stalled rather than gone. Returns once every
    /// thread of it is stopped: the signal is delivered asynchronously, and a loaded machine
    /// may let it answer a request sent just after `kill` returned.
    pub fn pause(&mut self) {
        if let Err(why) = self.try_pause() {
            panic!("{why}");
        }
    }

    /// SIGCONT after [`pause`](Self::pause).
    pub fn resume(&mut self) {
        self.signal("-CONT");
    }

    /// [`pause`](Self::pause), `Err` instead of a panic.
    pub fn try_pause(&mut self) -> Result<(), HarnessError> {
        self.try_signal("-STOP")?;
        let pid = self.pid().ok_or(HarnessError::Signal { signal: "-STOP", why: "not running".into() })?;
        let start = Instant::now();
        while !all_threads_stopped(pid) {
            if start.elapsed() > DEADLINE {
                let why = format!("ward-server {pid} not stopped within {DEADLINE:?} of SIGSTOP");
                return Err(HarnessError::Signal { signal: "-STOP", why });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// [`resume`](Self::resume), `Err` instead of a panic.
    pub fn try_resume(&mut self) -> Result<(), HarnessError> {
        self.try_signal("-CONT")
    }

    /// SIGTERM, and waits (bounded by [`DEADLINE`]) for the process to exit by itself.
    pub fn terminate(&mut self) -> ExitStatus {
        self.signal("-TERM");
        let start = Instant::now();
        loop {
            let child = self.child.as_mut().unwrap_or_else(|| panic!("ward-server is not running"));
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return status;
            }
            if start.elapsed() > DEADLINE {
                panic!("ward-server did not exit within {DEADLINE:?} of SIGTERM; stderr:\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server if it runs, then starts it again on the same ports and data
    /// directory. Returns when the new one prints its banners, i.e. has replayed its log and
    /// listens. The ports may briefly be taken by someone else: the bind is retried.
    pub fn restart(&mut self) {
        if let Err(why) = self.try_restart() {
            panic!("{why}\nstderr:\n{}", self.log_tail());
        }
    }

    /// [`restart`](Self::restart), `Err` instead of a panic (blocking: from async code,
    /// call it in `block_in_place` or `spawn_blocking`).
    pub fn try_restart(&mut self) -> Result<(), HarnessError> {
        self.kill9();
        self.spawn_retrying()
    }

    /// Kills the server if it runs, empties its data directory and starts it again on the
    /// same ports with `flags` instead of the test's flags it ran with: a machine replaced
    /// by a new one at the same address (an ensemble member removed, then added back as a
    /// newcomer). Blocking, like [`try_restart`](Self::try_restart).
    pub fn try_restart_fresh(&mut self, flags: Vec<String>) -> Result<(), HarnessError> {
        self.kill9();
        if !self.options.in_memory {
            let data = self.data_dir();
            match std::fs::remove_dir_all(&data) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(HarnessError::io(format!("remove {}", data.display()), e)),
            }
        }
        self.options.flags = flags;
        self.spawn_retrying()
    }

    /// SIGTERM, and waits (bounded by [`DEADLINE`]) for the process to exit by itself: a
    /// clean stop, to be followed by [`try_restart`](Self::try_restart). Blocking.
    pub fn try_stop(&mut self) -> Result<ExitStatus, HarnessError> {
        self.try_signal("-TERM")?;
        let start = Instant::now();
        while start.elapsed() < DEADLINE {
            let child = self.child.as_mut().ok_or_else(|| HarnessError::Start("not running".into()))?;
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(HarnessError::Start(format!("ward-server {} did not exit within {DEADLINE:?} of SIGTERM", self.addr)))
    }

    /// Starts the server again on the same ports, data directory and flags, running `binary`
    /// from now on instead of the one it ran (`None`: the test build's `ward-server`): a
    /// member upgraded to another release, or taken back to an older one
    /// ([`crate::previous`]). Kills it first if it still runs; stop it with
    /// [`try_stop`](Self::try_stop) before for a clean upgrade. Blocking, like
    /// [`try_restart`](Self::try_restart).
    pub fn try_restart_on(&mut self, binary: Option<PathBuf>) -> Result<(), HarnessError> {
        self.options.binary = binary;
        self.try_restart()
    }

    /// Starts an incarnation, binding the previous ports again (they may briefly be taken).
    fn spawn_retrying(&mut self) -> Result<(), HarnessError> {
        let mut attempt = 1;
        loop {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(why) if why.contains("Address already in use") && attempt < BIND_TRIES => {
                    std::thread::sleep(Duration::from_millis(50 * u64::from(attempt.min(10))));
                    attempt += 1;
                }
                Err(why) => return Err(HarnessError::Start(format!("restart on {}: {why}", self.addr))),
            }
        }
    }

    /// [`restart`](Self::restart) with `flags` added after those it ran with (a later flag
    /// wins): the same server and data, a setting changed.
    pub fn restart_with(&mut self, flags: &[&str]) {
        self.options.flags.extend(flags.iter().map(|f| f.to_string()));
        self.restart();
    }

    /// Kills the server if it runs, then starts it on the same ports and data directory and
    /// SIGKILLs it again `after` its start, wherever its startup (log replay, torn-tail repair,
    /// election) or its first moments of serving have got to. Leaves it stopped.
    pub fn crash_during_startup(&mut self, after: Duration) {
        self.kill9();
        let mut child = self
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn ward-server: {e}"));
        std::thread::sleep(after);
        stop(&mut child);
    }

    /// The async form of [`restart`](Self::restart), for multi-thread runtimes: the client
    /// tasks keep running while this waits for the banner.
    pub fn restart_now(&mut self) {
        tokio::task::block_in_place(|| self.restart())
    }

    /// The async form of [`kill9`](Self::kill9).
    pub fn kill9_now(&mut self) {
        tokio::task::block_in_place(|| self.kill9())
    }

    /// Panics (with the server's log) unless the process still runs: a server that exited
    /// on its own has crashed.
    pub fn assert_running(&mut self) {
        match self.child.as_mut().map(Child::try_wait) {
            None => panic!("ward-server is not running (killed by the test)"),
            Some(Ok(Some(status))) => panic!("ward-server exited with {status}; stderr:\n{}", self.log_tail()),
            Some(_) => {}
        }
    }

    /// The last [`LOG_TAIL`] lines of stderr, over every incarnation.
    pub fn log_tail(&self) -> String {
        self.log.text()
    }

    /// The directory the process runs in (a relative `--data-dir` is relative to it).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The command line of an incarnation: the harness's flags, then the test's. The
    /// environment's `WARD_*` variables are not passed on (a developer's shell must not
    /// change what the tests run), only the test's own.
    fn command(&self) -> Command {
        let mut cmd = Command::new(self.options.binary.as_deref().unwrap_or_else(|| server_binary()));
        for (var, _) in std::env::vars_os() {
            if var.to_string_lossy().starts_with("WARD_") {
                cmd.env_remove(var);
            }
        }
        cmd.envs(self.options.envs.iter().map(|(k, v)| (k, v)));
        cmd.current_dir(self.dir.path()).stdin(Stdio::null());
        if self.options.bare {
            cmd.args(&self.options.flags);
            return cmd;
        }
        cmd.arg("--listen").arg(self.addr.to_string());
        // Small segments: a 64 MiB zero-fill per test server would dominate the run.
        cmd.args(["--segment-mb", "1"]);
        // Every test client comes from 127.0.0.1: the per-address limit (ZooKeeper's 60)
        // would take a whole test for one host. The tests of that limit set their own.
        cmd.args(["--max-connections-per-ip", "0", "--zk-listen"]);
        cmd.arg(self.zk_addr.map_or_else(|| "off".to_string(), |a| a.to_string()));
        cmd.arg("--admin-listen").arg(self.admin_addr.map_or_else(|| "off".to_string(), |a| a.to_string()));
        if let Some(zk_tls) = self.zk_tls_addr {
            cmd.arg("--zk-tls-listen").arg(zk_tls.to_string());
        }
        match self.options.in_memory {
            true => cmd.arg("--in-memory"),
            false => cmd.arg("--data-dir").arg(self.dir.path().join("data")),
        };
        cmd.args(&self.options.flags);
        cmd
    }

    /// Starts one incarnation on `self.addr` (port 0 at first) and learns its addresses.
    fn spawn(&mut self) -> Result<(), String> {
        self.starts += 1;
        let banners = Banners {
            zookeeper: self.zk_addr.is_some(),
            zk_tls: self.zk_tls_addr.is_some(),
            admin: self.admin_addr.is_some(),
        };
        let started = spawn(self.command(), self.starts, &self.log, banners)?;
        (self.addr, self.zk_addr, self.admin_addr) = (started.addr, started.zk_addr, started.admin_addr);
        self.zk_tls_addr = started.zk_tls_addr;
        self.child = Some(started.child);
        Ok(())
    }

    fn signal(&self, signal: &'static str) {
        if let Err(why) = self.try_signal(signal) {
            panic!("{why}");
        }
    }

    fn try_signal(&self, signal: &'static str) -> Result<(), HarnessError> {
        let failed = |why: String| HarnessError::Signal { signal, why };
        let pid = self.pid().ok_or_else(|| failed("not running".into()))?;
        let status = Command::new("kill")
            .arg(signal)
            .arg(pid.to_string())
            .status()
            .map_err(|e| failed(format!("run kill: {e}")))?;
        match status.success() {
            true => Ok(()),
            false => Err(failed(format!("kill {pid} exited with {status}"))),
        }
    }
}

/// Every thread of `pid` is in the stopped state (`T`, /proc/PID/task/TID/stat's third
/// field); true where /proc cannot tell (not Linux), as before this was checked.
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return true };
    tasks.flatten().all(|task| {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // After the command's name in parentheses, which may itself hold spaces.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        matches!(state, Some("T" | "t") | None)
    })
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // SIGKILL ends a paused (stopped) process too.
        self.kill9();
        if std::thread::panicking() {
            eprintln!("--- ward-server {} stderr (last {LOG_TAIL} lines) ---\n{}\n---", self.addr, self.log_tail());
        }
    }
}
