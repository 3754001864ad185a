//! The `ward` CLI as a child process: one-shot runs, and long-lived `create --hold`
//! processes that a test can kill. Other client programs (the client's examples) run
//! through the same two.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use ward_testkit::DEADLINE;

fn cli(server: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ward"));
    cmd.arg("--server").arg(server).args(args).env_remove("WARD_SERVER").env_remove("WARD_AUTH");
    cmd
}

/// The client's example `name` (`client/examples/NAME.rs`), built for this test, with the
/// server's address in `WARD_SERVER` as its docs tell a reader to run it.
pub fn example(name: &str, server: &str) -> Command {
    let mut cmd = Command::new(ward_testkit::locate::example_binary("ward-client", name));
    cmd.env("WARD_SERVER", server).env_remove("WARD_OWNER");
    cmd
}

/// What a finished CLI run printed.
#[derive(Debug)]
pub struct CliOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl CliOutput {
    /// Panics with everything the CLI said unless it exited 0.
    pub fn success(self) -> CliOutput {
        assert!(self.status.success(), "ward CLI failed: {self:?}");
        self
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Runs `ward --server SERVER ARGS...` to completion (bounded by [`DEADLINE`]).
pub async fn run_cli(server: &str, args: &[&str]) -> CliOutput {
    run_command(cli(server, args), None).await
}

/// Like [`run_cli`], with `input` on the CLI's stdin.
pub async fn run_cli_stdin(server: &str, args: &[&str], input: &[u8]) -> CliOutput {
    run_command(cli(server, args), Some(input.to_vec())).await
}

/// Runs `ward ARGS...` with `WARD_SERVER` set and no `--server` flag.
pub async fn run_cli_env(ward_server: &str, args: &[&str]) -> CliOutput {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ward"));
    cmd.args(args).env("WARD_SERVER", ward_server);
    run_command(cmd, None).await
}

/// Runs `sh -c SCRIPT` with `$WARD` the CLI's path and `WARD_SERVER` set: for what only a
/// shell can arrange, such as closed output streams (`>&-`) and pipes.
pub async fn run_sh(ward_server: &str, script: &str) -> CliOutput {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).env("WARD", env!("CARGO_BIN_EXE_ward")).env("WARD_SERVER", ward_server);
    run_command(cmd, None).await
}

/// Runs `cmd` to completion (bounded by [`DEADLINE`]), with `input` on its stdin.
pub async fn run_command(mut cmd: Command, input: Option<Vec<u8>>) -> CliOutput {
    let stdin = if input.is_some() { Stdio::piped() } else { Stdio::null() };
    let mut child = cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn the program");
    if let (Some(input), Some(mut pipe)) = (input, child.stdin.take()) {
        // Written from a thread of its own, and closed when written: the CLI reads to EOF.
        std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut pipe, &input);
        });
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_exit(&mut child, DEADLINE).await;
    let stdout =
        tokio::task::spawn_blocking(move || stdout.join()).await.expect("join stdout reader").expect("stdout reader");
    let stderr =
        tokio::task::spawn_blocking(move || stderr.join()).await.expect("join stderr reader").expect("stderr reader");
    CliOutput { status, stdout, stderr }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut text);
        }
        String::from_utf8_lossy(&text).into_owned()
    })
}

/// Polls for the child's exit; kills it and panics if it outlives `limit`.
async fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll child") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ward CLI did not exit within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (bounded by [`DEADLINE`]) until `file`, where a CLI's stderr goes
/// ([`ClientProcess::spawn_logged`]), has `text` in it.
pub async fn stderr_says(file: &std::path::Path, text: &str) {
    ward_testkit::wait_until(&format!("ward's stderr says {text:?}"), DEADLINE, || async {
        std::fs::read_to_string(file).is_ok_and(|said| said.contains(text))
    })
    .await;
}

/// A long-running CLI process (e.g. `create -e --hold`). Killed and reaped on drop.
pub struct ClientProcess {
    child: Child,
    /// Held open: the CLI lets go of its session when its stdin closes.
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
}

impl ClientProcess {
    /// Starts `ward --server SERVER ARGS...`.
    pub fn spawn(server: &str, args: &[&str]) -> ClientProcess {
        // Errors of a held CLI show up in the test's output directly.
        ClientProcess::spawn_with_stderr(server, args, Stdio::inherit())
    }

    /// Like [`spawn`](Self::spawn), with the CLI's stderr written to `stderr_file`.
    pub fn spawn_logged(server: &str, args: &[&str], stderr_file: &std::path::Path) -> ClientProcess {
        let file = std::fs::File::create(stderr_file).expect("create the CLI's stderr file");
        ClientProcess::spawn_with_stderr(server, args, Stdio::from(file))
    }

    /// Starts `cmd` (another client program) the same way; its stderr goes to the test's
    /// output.
    pub fn spawn_command(cmd: Command) -> ClientProcess {
        ClientProcess::start(cmd, Stdio::inherit())
    }

    fn spawn_with_stderr(server: &str, args: &[&str], stderr: Stdio) -> ClientProcess {
        ClientProcess::start(cli(server, args), stderr)
    }

    fn start(mut cmd: Command, stderr: Stdio) -> ClientProcess {
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr).spawn().expect("spawn the program");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        ClientProcess { child, stdin, lines }
    }

    /// The next line the CLI prints; panics if it exits or stays silent past [`DEADLINE`].
    pub async fn next_line(&mut self) -> String {
        match tokio::time::timeout(DEADLINE, self.lines.recv()).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("ward CLI closed stdout without a line (exit: {:?})", self.child.try_wait()),
            Err(_) => panic!("ward CLI printed nothing within {DEADLINE:?}"),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: the session is left to expire on the server.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGINT, as Ctrl-C in a terminal sends.
    pub fn interrupt(&mut self) {
        let status = Command::new("kill").arg("-INT").arg(self.child.id().to_string()).status().expect("run kill -INT");
        assert!(status.success(), "kill -INT failed: {status}");
    }

    /// SIGTERM, which asks a `--hold` to end its session cleanly.
    pub fn terminate(&mut self) {
        let status =
            Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().expect("run kill -TERM");
        assert!(status.success(), "kill -TERM failed: {status}");
    }

    /// Writes `line` and a newline to the process's stdin.
    pub fn write_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").expect("write to the process's stdin");
    }

    /// Closes the CLI's stdin, which asks a `--hold` to end its session cleanly.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits (bounded by [`DEADLINE`]) for the process to exit.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        wait_exit(&mut self.child, DEADLINE).await
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}
