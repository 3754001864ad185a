//! Support for the server package's process-level tests: a real `ward-server` process that can
//! be SIGKILLed and restarted on the same port and data directory, a TCP proxy that can cut a
//! client off for good, bounded waiting, a tree digest and a small deterministic PRNG.
//!
//! Every process started here is killed in `Drop`, and every directory made here is removed.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};
use ward_client::{Client, Error, SessionState, Stat};

/// A server start includes a cold binary and a log replay on a loaded machine.
pub const STARTUP: Duration = Duration::from_secs(60);
/// The bound for anything that should happen "soon".
pub const DEADLINE: Duration = Duration::from_secs(30);
const BANNER: &str = "ward-server listening on ";
/// Lines of the server's stderr kept (over all its incarnations) to print when a test fails.
const LOG_TAIL: usize = 400;
/// Tries at binding the previous port again after a restart.
const BIND_TRIES: u32 = 40;

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(what: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ward-durability-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

type LogTail = Arc<Mutex<VecDeque<String>>>;

/// A durable `ward-server` on 127.0.0.1 with its own data directory. [`restart`] starts it
/// again on the same port and directory, so clients given its address reconnect by
/// themselves.
///
/// [`restart`]: ServerProcess::restart
pub struct ServerProcess {
    child: Option<Child>,
    addr: SocketAddr,
    flags: Vec<String>,
    log: LogTail,
    /// Incarnations started so far.
    starts: u32,
    // Dropped after the child is killed (fields drop after `Drop::drop`).
    data: TempDir,
}

impl ServerProcess {
    /// Starts a server on a free port with `--segment-mb 1` and `flags`.
    pub fn start(flags: &[&str]) -> ServerProcess {
        let mut server = ServerProcess {
            child: None,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            flags: flags.iter().map(|s| s.to_string()).collect(),
            log: Arc::default(),
            starts: 0,
            data: TempDir::new("data"),
        };
        match server.spawn("127.0.0.1:0") {
            Ok(()) => server,
            Err(why) => panic!("ward-server did not start: {why}\nstderr:\n{}", server.log_tail()),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn addr_str(&self) -> String {
        self.addr.to_string()
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// SIGKILL, then reap (which also releases the data directory's lock).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server if it runs, then starts it again on the same port and data directory.
    /// Returns when the new one prints its banner, i.e. has replayed its log and listens. The
    /// port may briefly be taken by someone else: the bind is retried a few times.
    pub fn restart(&mut self) {
        self.kill9();
        let listen = self.addr.to_string();
        let mut last = String::new();
        for attempt in 1..=BIND_TRIES {
            match self.spawn(&listen) {
                Ok(()) => return,
                Err(why) if why.contains("Address already in use") && attempt < BIND_TRIES => {
                    last = why;
                    std::thread::sleep(Duration::from_millis(50 * u64::from(attempt.min(10))));
                }
                Err(why) => panic!("ward-server restart failed: {why}\nstderr:\n{}", self.log_tail()),
            }
        }
        panic!("ward-server could not bind {listen} again: {last}\nstderr:\n{}", self.log_tail());
    }

    /// Kills the server if it runs, then starts it on the same port and data directory and
    /// SIGKILLs it again `after` its start, wherever its startup (log replay, torn-tail repair,
    /// election) or its first moments of serving have got to. Leaves it stopped.
    pub fn crash_during_startup(&mut self, after: Duration) {
        self.kill9();
        let mut child = Command::new(env!("CARGO_BIN_EXE_ward-server"))
            .args(["--listen", &self.addr.to_string(), "--segment-mb", "1", "--zk-listen", "off", "--data-dir"])
            .arg(self.data.path())
            .args(&self.flags)
            .current_dir(self.data.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ward-server");
        std::thread::sleep(after);
        let _ = child.kill();
        let _ = child.wait();
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

    /// Panics (with the server's log) unless the process still runs.
    pub fn assert_running(&mut self) {
        if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
            panic!("ward-server exited with {status}; stderr:\n{}", self.log_tail());
        }
    }

    pub fn log_tail(&self) -> String {
        let log = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        Vec::from(log).join("\n")
    }

    /// Starts one incarnation; `Err` with the reason (and its stderr) if it exits first.
    fn spawn(&mut self, listen: &str) -> Result<(), String> {
        self.starts += 1;
        let incarnation = self.starts;
        let mut child = Command::new(env!("CARGO_BIN_EXE_ward-server"))
            .args(["--listen", listen, "--segment-mb", "1", "--zk-listen", "off", "--data-dir"])
            .arg(self.data.path())
            .args(&self.flags)
            .current_dir(self.data.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = Arc::clone(&self.log);
        let stderr_done = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
                if log.len() == LOG_TAIL {
                    log.pop_front();
                }
                log.push_back(format!("[{incarnation}] {line}"));
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
        let start = Instant::now();
        let line = loop {
            match banner.recv_timeout(Duration::from_millis(20)) {
                Ok(line) => break line,
                Err(mpsc::RecvTimeoutError::Timeout) if start.elapsed() < STARTUP => {
                    if let Ok(Some(status)) = child.try_wait() {
                        // Its stderr is complete once the process is gone.
                        let _ = stderr_done.join();
                        let tail = self.log_tail();
                        let last: Vec<_> = tail.lines().rev().take(5).collect();
                        return Err(format!("exited with {status} before listening: {}", last.join(" | ")));
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("no banner within {STARTUP:?}"));
                }
            }
        };
        self.child = Some(child);
        match line.trim_end().strip_prefix(BANNER).map(str::parse) {
            Some(Ok(addr)) => {
                self.addr = addr;
                Ok(())
            }
            _ => Err(format!("unexpected banner {line:?}")),
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!("--- ward-server {} stderr (last {LOG_TAIL} lines) ---\n{}\n---", self.addr, self.log_tail());
        }
    }
}

// ---- a TCP proxy that can cut a client off ----

#[derive(Default)]
struct Links {
    blocked: bool,
    live: Vec<AbortHandle>,
}

/// Forwards every connection to `upstream`. `isolate()` closes the connections open now and
/// every new one at once (to the client: the server is unreachable); `unblock()` lets new
/// ones through again.
pub struct Proxy {
    addr: SocketAddr,
    links: Arc<Mutex<Links>>,
    acceptor: JoinHandle<()>,
}

impl Proxy {
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let links = Arc::new(Mutex::new(Links::default()));
        let acceptor = tokio::spawn(accept_loop(listener, upstream, Arc::clone(&links)));
        Proxy { addr, links, acceptor }
    }

    pub fn addr_str(&self) -> String {
        self.addr.to_string()
    }

    pub fn isolate(&self) {
        let mut links = self.links.lock().expect("proxy lock");
        links.blocked = true;
        for link in links.live.drain(..) {
            link.abort();
        }
    }

    pub fn unblock(&self) {
        self.links.lock().expect("proxy lock").blocked = false;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.isolate();
    }
}

async fn accept_loop(listener: TcpListener, upstream: SocketAddr, links: Arc<Mutex<Links>>) {
    loop {
        let Ok((downstream, _)) = listener.accept().await else {
            continue;
        };
        let Ok(mut links) = links.lock() else {
            return;
        };
        if links.blocked {
            drop(downstream);
            continue;
        }
        let task = tokio::spawn(async move {
            let Ok(mut up) = TcpStream::connect(upstream).await else {
                return;
            };
            let mut down = downstream;
            let _ = down.set_nodelay(true);
            let _ = up.set_nodelay(true);
            let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
        });
        links.live.retain(|t| !t.is_finished());
        links.live.push(task.abort_handle());
    }
}

// ---- bounded waiting ----

/// Runs `fut`, panicking naming `what` if it takes longer than `limit`.
pub async fn within<T>(what: &str, limit: Duration, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not finish within {limit:?}"),
    }
}

/// Polls `check` every 20 ms until it returns `Some`; panics naming `what` after `limit`.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        let remaining = limit.saturating_sub(start.elapsed());
        match tokio::time::timeout(remaining, check()).await {
            Ok(Some(value)) => return value,
            Ok(None) if start.elapsed() < limit => tokio::time::sleep(Duration::from_millis(20)).await,
            _ => panic!("timed out after {limit:?} waiting until {what}"),
        }
    }
}

/// Waits until the client's session state is `want`, remembering every state seen on the way.
pub async fn wait_state(client: &Client, want: SessionState, limit: Duration) {
    let mut states = client.state_changes();
    let mut seen = vec![*states.borrow_and_update()];
    let reached = tokio::time::timeout(limit, async {
        loop {
            let now = *seen.last().expect("a state");
            if now == want || (now.is_terminal() && !want.is_terminal()) {
                return;
            }
            if states.changed().await.is_err() {
                // The client task is gone: the state is final.
                std::future::pending::<()>().await;
            }
            seen.push(*states.borrow_and_update());
        }
    })
    .await;
    let last = *seen.last().expect("a state");
    if reached.is_err() || last != want {
        panic!("session {:?} did not reach {want:?} within {limit:?}; states seen: {seen:?}", client.session_id());
    }
}

/// A client of `addr` asking for `session_timeout`, with a generous connect timeout.
pub async fn connect(addr: &str, session_timeout: Duration) -> Client {
    within(
        "connect",
        DEADLINE,
        Client::builder(addr).connect_timeout(Duration::from_secs(20)).session_timeout(session_timeout).connect(),
    )
    .await
    .unwrap_or_else(|e| panic!("connect to {addr}: {e:?}"))
}

/// Test bodies that share this process's CPU badly (a kill loop, a throughput figure) run one
/// at a time.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

// ---- the tree ----

/// Every node as (path, data, stat), sorted by path: read with get_children / get_data. The
/// tree must not change meanwhile.
pub async fn tree_digest(client: &Client) -> Result<Vec<(String, Vec<u8>, Stat)>, Error> {
    let mut nodes = Vec::new();
    let mut stack = vec!["/".to_string()];
    while let Some(path) = stack.pop() {
        let (data, stat) = client.get_data(&path).await?;
        for child in client.get_children(&path).await? {
            stack.push(if path == "/" { format!("/{child}") } else { format!("{path}/{child}") });
        }
        nodes.push((path, data, stat));
    }
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(nodes)
}

/// Panics naming the first difference between two digests.
pub fn assert_same_tree(before: &[(String, Vec<u8>, Stat)], after: &[(String, Vec<u8>, Stat)], what: &str) {
    let (mut b, mut a) = (before.iter().peekable(), after.iter().peekable());
    loop {
        match (b.next(), a.next()) {
            (None, None) => return,
            (Some(x), Some(y)) if x == y => continue,
            (Some(x), Some(y)) if x.0 == y.0 => panic!(
                "{what}: node {} differs:\n before: data {:?} stat {:?}\n after:  data {:?} stat {:?}",
                x.0,
                String::from_utf8_lossy(&x.1),
                x.2,
                String::from_utf8_lossy(&y.1),
                y.2
            ),
            (x, y) => panic!(
                "{what}: node sets differ ({} nodes before, {} after): first mismatch {:?} vs {:?}",
                before.len(),
                after.len(),
                x.map(|n| &n.0),
                y.map(|n| &n.0)
            ),
        }
    }
}

// ---- randomness ----

/// SplitMix64: small, deterministic, good enough to pick kill moments.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `$WARD_TEST_SEED`, or one made from the clock. Printed by the caller so a failure can be
/// repeated.
pub fn seed() -> u64 {
    match std::env::var("WARD_TEST_SEED") {
        Ok(s) => s.trim().parse().unwrap_or_else(|e| panic!("WARD_TEST_SEED={s:?}: {e}")),
        Err(_) => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)
        }
    }
}
