//! `ward-server`'s configuration through the real binary (docs/operations.md
//! "Configuration"): every option from a `--config` file and from `WARD_*` variables, the
//! precedence of the command line over the environment over the file, refusals that name
//! the option at fault, listeners that cannot bind, and the logs.

mod dev_ensemble;
mod every_option;
mod logs;
mod precedence;
mod refusals;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use ward_testkit::run::try_run;
use ward_testkit::TempDir;

/// A server that refuses its configuration exits at once; one that starts by mistake is
/// killed after this.
const REFUSAL: Duration = Duration::from_secs(30);

/// Writes `text` as `ward.toml` in `dir` and returns its path.
fn write_config(dir: &Path, text: &str) -> String {
    let path = dir.join("ward.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path.to_string_lossy().into_owned()
}

/// `ward-server ARGS` with only the `WARD_*` variables of `envs`, run in `dir`.
fn command(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ward-server"));
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("WARD_") {
            cmd.env_remove(var);
        }
    }
    cmd.args(args).envs(envs.iter().copied()).current_dir(dir);
    cmd
}

/// Runs `ward-server ARGS` to its exit (bounded by [`REFUSAL`]).
fn run_to_exit(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    try_run(&mut command(dir, args, envs), b"", REFUSAL).unwrap_or_else(|why| panic!("{why}"))
}

/// Asserts that the server refused to start with exit code `code` and a message on stderr
/// containing `message`, and printed nothing on stdout.
fn assert_refused(out: &Output, code: i32, message: &str) {
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "want exit {code} with {message:?}; stderr:\n{stderr}");
    assert!(stderr.contains(message), "want {message:?} in stderr:\n{stderr}");
    assert!(!stdout.contains("listening on"), "it listened:\n{stdout}");
}

/// A `ward-server` process whose stdout the test reads line by line; killed on drop.
struct Spawned {
    child: Child,
    /// The process's stdin, for commands to a `--dev-ensemble` parent.
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Everything the process wrote to stderr, once it has exited.
    stderr: Option<std::thread::JoinHandle<String>>,
    _dir: TempDir,
}

impl Spawned {
    fn start(args: &[&str], envs: &[(&str, &str)]) -> Spawned {
        let dir = TempDir::new("config");
        let mut child = command(dir.path(), args, envs)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn ward-server: {e}"));
        let stdin = child.stdin.take();
        let (stdout, mut stderr) = (child.stdout.take().expect("stdout"), child.stderr.take().expect("stderr"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Spawned { child, stdin, lines, stderr: Some(stderr), _dir: dir }
    }

    /// Writes `line` and a newline to the process's stdin.
    fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin.write_all(format!("{line}\n").as_bytes()).and_then(|()| stdin.flush()).expect("write to stdin");
    }

    /// The first line on stdout that starts with `prefix`, within `limit`.
    fn line_starting(&mut self, prefix: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(line) => seen.push(line),
                Err(_) => break,
            }
        }
        panic!("no line {prefix:?} within {limit:?}; stdout so far: {seen:?}; stderr:\n{}", self.stop());
    }

    /// SIGTERM, and waits (bounded) for the process to exit by itself, as a `--dev-ensemble`
    /// parent must to stop its members.
    fn terminate(&mut self) {
        if !self.sigterm_and_wait() {
            let limit = ward_testkit::DEADLINE;
            panic!("ward-server did not exit within {limit:?} of SIGTERM; stderr:\n{}", self.stop());
        }
    }

    /// True once the process has exited, false if it has not within the bound.
    fn sigterm_and_wait(&mut self) -> bool {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        }
        let deadline = Instant::now() + ward_testkit::DEADLINE;
        loop {
            match self.child.try_wait() {
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Ok(None) => return false,
                _ => return true,
            }
        }
    }

    /// Kills the process and returns its stderr.
    fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

impl Drop for Spawned {
    /// SIGTERM first: a `--dev-ensemble` parent stops its members then.
    fn drop(&mut self) {
        self.sigterm_and_wait();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
