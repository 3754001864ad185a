//! `ward-contender` processes (testkit/contender): lock and election contenders in
//! OS processes of their own, which a test can SIGKILL. Killed and reaped on drop.

use std::io::Write;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use ward_testkit::DEADLINE;

/// One line a contender printed, and when the test read it.
#[derive(Debug)]
pub struct Line {
    pub text: String,
    pub at: Instant,
}

pub struct Contender {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<Line>,
}

impl Contender {
    /// Starts `ward-contender ARGS...`; its stderr goes to the test's output.
    pub fn spawn(args: &[&str]) -> Contender {
        let mut child = Command::new(ward_testkit::locate::contender_binary())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ward-contender");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(Line { text, at: Instant::now() }).is_err() {
                    break;
                }
            }
        });
        Contender { child, stdin, lines }
    }

    /// Lets a `lock`-mode contender that printed "ready" start.
    pub fn go(&mut self) {
        let mut stdin = self.stdin.take().expect("go() once");
        stdin.write_all(b"go\n").expect("write go");
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line; panics if the process closes stdout or stays silent past `limit`.
    pub async fn next_line_within(&mut self, limit: Duration) -> Line {
        match tokio::time::timeout(limit, self.lines.recv()).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("ward-contender {} exited without a line ({:?})", self.pid(), self.child.try_wait()),
            Err(_) => panic!("ward-contender {} printed nothing within {limit:?}", self.pid()),
        }
    }

    pub async fn next_line(&mut self) -> Line {
        self.next_line_within(DEADLINE).await
    }

    /// A line printed already, if any.
    pub fn try_line(&mut self) -> Option<Line> {
        self.lines.try_recv().ok()
    }

    /// SIGKILL, and reap: once this returns the process cannot write anything more.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits (bounded by `limit`) for the process to exit on its own.
    pub async fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll ward-contender") {
                return status;
            }
            if start.elapsed() > limit {
                panic!("ward-contender {} did not exit within {limit:?}", self.pid());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Contender {
    fn drop(&mut self) {
        self.kill9();
    }
}
