//! A real `ward-server` process on a free 127.0.0.1 port.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

/// Startup includes a cold binary on a loaded machine.
const STARTUP: Duration = Duration::from_secs(60);
const BANNER: &str = "ward-server listening on ";
/// Lines of the server's stderr kept to print when a test fails.
const LOG_TAIL: usize = 300;

pub struct ServerProcess {
    child: Child,
    addr: SocketAddr,
    log: Arc<Mutex<VecDeque<String>>>,
    dir: PathBuf,
}

impl ServerProcess {
    /// A server with default flags.
    pub fn start() -> ServerProcess {
        ServerProcess::start_with(&[])
    }

    /// A server with extra flags, e.g. `["--min-session-timeout-ms", "500"]`.
    pub fn start_with(flags: &[&str]) -> ServerProcess {
        let dir = scratch_dir("server");
        let mut child = Command::new(server_binary())
            .arg("--listen")
            .arg("127.0.0.1:0")
            // Durable in the scratch directory (cwd), with small segments: a 64 MiB zero-fill
            // per test server would dominate the run.
            .args(["--segment-mb", "1", "--zk-listen", "off"])
            .args(flags)
            // Whatever the server writes next to itself stays out of the work tree.
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ward-server");
        let log = Arc::new(Mutex::new(VecDeque::new()));
        // Drain stderr always: a full pipe would stall a chatty server.
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().expect("log lock");
                if log.len() == LOG_TAIL {
                    log.pop_front();
                }
                log.push_back(line);
            }
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let (first_line, banner) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            if reader.read_line(&mut line).is_ok() && !line.is_empty() {
                let _ = first_line.send(line);
            }
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let mut server = ServerProcess { child, addr: SocketAddr::from(([127, 0, 0, 1], 0)), log, dir };
        let line = match banner.recv_timeout(STARTUP) {
            Ok(line) => line,
            Err(e) => panic!("ward-server printed no banner ({e}); stderr:\n{}", server.log_tail()),
        };
        server.addr = match line.trim_end().strip_prefix(BANNER).map(str::parse) {
            Some(Ok(addr)) => addr,
            _ => panic!("unexpected ward-server banner {line:?}"),
        };
        server
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address as a connect string.
    pub fn addr_str(&self) -> String {
        self.addr.to_string()
    }

    /// Kills the server with SIGKILL and reaps it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Panics (with the server's log) unless the process is still running: a server that
    /// exited on its own has crashed.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("ward-server exited with {status}; stderr:\n{}", self.log_tail());
        }
    }

    fn log_tail(&self) -> String {
        let log = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        Vec::from(log).join("\n")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!("--- ward-server {} stderr (last {LOG_TAIL} lines) ---\n{}\n---", self.addr, self.log_tail());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh directory under the system temp dir, unique within this machine.
pub fn scratch_dir(what: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("ward-it-{what}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The `ward-server` binary: `$WARD_SERVER_BIN`, or the one next to this test's own
/// target directory, built (once per test run) with the same profile.
pub fn server_binary() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("WARD_SERVER_BIN") {
            return PathBuf::from(bin);
        }
        let exe = std::env::current_exe().expect("current test exe");
        // target/<profile>/deps/it-xxxx
        let profile_dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("test exe lives in <target>/<profile>/deps")
            .to_path_buf();
        let bin = profile_dir.join(format!("ward-server{}", std::env::consts::EXE_SUFFIX));
        build_server(&profile_dir, &bin);
        bin
    })
}

/// Runs `cargo build` for the server even when a binary exists: `cargo test` of this
/// package alone does not build other packages' binaries, and a stale one would test old
/// code. When cargo is up to date this takes a fraction of a second.
fn build_server(profile_dir: &std::path::Path, bin: &std::path::Path) {
    let cargo = std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(OsString::from))
        .unwrap_or_else(|| OsString::from("cargo"));
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_owned(),
        Some(other) => other.to_owned(),
    };
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-q", "-p", "ward-server", "--bin", "ward-server"])
        .arg("--profile")
        .arg(&profile)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(target_dir) = profile_dir.parent() {
        cmd.arg("--target-dir").arg(target_dir);
    }
    let outcome = cmd.spawn().and_then(|mut child| {
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        child.wait().map(|status| (status, err))
    });
    match outcome {
        Ok((status, _)) if status.success() => {}
        Ok((status, err)) if !bin.exists() => {
            panic!("cargo build of ward-server failed ({status}):\n{err}")
        }
        Err(e) if !bin.exists() => panic!("cannot run cargo to build ward-server: {e}"),
        _ => eprintln!("warning: could not rebuild ward-server; using {}", bin.display()),
    }
}
