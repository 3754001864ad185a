//! Starting one incarnation of a server process: wait for its banners on stdout, keep the
//! tail of its stderr (and all of it in a file, when asked).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A server start includes a cold binary and a log replay on a loaded machine.
pub const STARTUP: Duration = Duration::from_secs(60);
/// Lines of stderr kept (over all of a server's incarnations) to print when a test fails.
pub const LOG_TAIL: usize = 400;
const BANNER: &str = "ward-server listening on ";
const ZK_BANNER: &str = "ward-server zookeeper listening on ";
const ZK_TLS_BANNER: &str = "ward-server zookeeper tls listening on ";
const ADMIN_BANNER: &str = "ward-server admin listening on ";

/// The last [`LOG_TAIL`] lines a server wrote to stderr, each marked with its incarnation;
/// every line also goes to `file` if there is one.
#[derive(Clone, Default)]
pub struct LogTail(Arc<Mutex<Lines>>);

#[derive(Default)]
struct Lines {
    tail: VecDeque<String>,
    file: Option<File>,
}

impl LogTail {
    /// A tail that also appends every line to `path` (created, or added to).
    pub fn to_file(path: &std::path::Path) -> std::io::Result<LogTail> {
        let file = File::options().create(true).append(true).open(path)?;
        Ok(LogTail(Arc::new(Mutex::new(Lines { tail: VecDeque::new(), file: Some(file) }))))
    }

    fn push(&self, line: String) {
        // A test that panicked while holding this lock must not hide the log.
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(file) = log.file.as_mut() {
            // The log file is for reading afterwards; a full disk must not stop the server.
            let _ = writeln!(file, "{line}");
        }
        if log.tail.len() == LOG_TAIL {
            log.tail.pop_front();
        }
        log.tail.push_back(line);
    }

    pub fn text(&self) -> String {
        let log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Vec::from(log.tail.clone()).join("\n")
    }

    /// The last `n` lines on one line, for a short error message.
    fn last(&self, n: usize) -> String {
        let text = self.text();
        let mut last: Vec<&str> = text.lines().rev().take(n).collect();
        last.reverse();
        last.join(" | ")
    }
}

/// A running incarnation and the addresses from its banners.
pub struct Started {
    pub child: Child,
    pub addr: SocketAddr,
    pub zk_addr: Option<SocketAddr>,
    pub zk_tls_addr: Option<SocketAddr>,
    pub admin_addr: Option<SocketAddr>,
}

/// Which listeners' banners to wait for besides the client one.
#[derive(Clone, Copy, Debug)]
pub struct Banners {
    pub zookeeper: bool,
    pub zk_tls: bool,
    pub admin: bool,
}

impl Banners {
    /// The prefixes of the lines to wait for, the client banner first.
    fn prefixes(self) -> Vec<&'static str> {
        let mut prefixes = vec![BANNER];
        prefixes.extend(self.zookeeper.then_some(ZK_BANNER));
        prefixes.extend(self.zk_tls.then_some(ZK_TLS_BANNER));
        prefixes.extend(self.admin.then_some(ADMIN_BANNER));
        prefixes
    }
}

/// Spawns `cmd` and waits for the banners `banners` asks for (the client one always; the
/// server prints others, such as the peer one, in between); `Err` with the reason and its
/// last stderr lines if it exits or stays silent first.
pub fn spawn(mut cmd: Command, incarnation: u32, log: &LogTail, banners: Banners) -> Result<Started, String> {
    let mut child =
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("spawn {cmd:?}: {e}"))?;
    let (Some(stderr), Some(stdout)) = (child.stderr.take(), child.stdout.take()) else {
        stop(&mut child);
        return Err("spawned without its pipes".into());
    };
    let sink = log.clone();
    // Drained always: a full pipe would stall a chatty server.
    let stderr_done = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.push(format!("[{incarnation}] {line}"));
        }
    });
    let prefixes = banners.prefixes();
    let wanted = prefixes.len();
    let (banner_tx, banner_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut found = 0;
        while found < wanted {
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() || line.is_empty() {
                return;
            }
            // The client banner is the first line, whatever it says; the others by prefix.
            if found == 0 || prefixes.iter().any(|p| line.starts_with(p)) {
                found += 1;
                if banner_tx.send(line).is_err() {
                    return;
                }
            }
        }
        // Whatever follows the banners is drained, for the same reason as stderr.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let mut lines = Vec::new();
    let start = Instant::now();
    while lines.len() < wanted {
        match banner_rx.recv_timeout(Duration::from_millis(20)) {
            Ok(line) => lines.push(line),
            Err(_) if start.elapsed() > STARTUP => {
                stop(&mut child);
                return Err(format!("no banner within {STARTUP:?}: {}", log.last(5)));
            }
            Err(_) => {
                if let Ok(Some(status)) = child.try_wait() {
                    // Its stderr is complete once the process is gone.
                    let _ = stderr_done.join();
                    return Err(format!("exited with {status} before listening: {}", log.last(5)));
                }
            }
        }
    }
    let find = |prefix: &str| lines.iter().skip(1).find(|l| l.starts_with(prefix)).map(|l| parse(l, prefix));
    let addrs = parse(&lines[0], BANNER).and_then(|addr| {
        let zk = find(ZK_BANNER).transpose()?;
        Ok((addr, zk, find(ZK_TLS_BANNER).transpose()?, find(ADMIN_BANNER).transpose()?))
    });
    match addrs {
        Ok((addr, zk_addr, zk_tls_addr, admin_addr)) => Ok(Started { child, addr, zk_addr, zk_tls_addr, admin_addr }),
        Err(why) => {
            stop(&mut child);
            Err(format!("{why}: {}", log.last(5)))
        }
    }
}

/// SIGKILL, then reap.
pub fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn parse(line: &str, prefix: &str) -> Result<SocketAddr, String> {
    match line.trim_end().strip_prefix(prefix).map(str::parse) {
        Some(Ok(addr)) => Ok(addr),
        _ => Err(format!("unexpected banner {line:?} (expected {prefix:?}ADDR)")),
    }
}
