//! Running an outside program (a kazoo script, the Java client, zkCli, pip) to completion
//! within a time limit.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Runs `cmd` to completion with `input` on its stdin, capturing its output; `Err` if it
/// cannot start or outlives `limit` (then it is killed).
pub fn try_run(cmd: &mut Command, input: &[u8], limit: Duration) -> Result<Output, String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let stdin = child.stdin.take();
    let input = input.to_vec();
    // Written on a thread of its own, then closed: a program that reads all its input
    // before writing must not block this one.
    std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input);
        }
    });
    // Both pipes are drained as the program runs: a full pipe would stall it.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            outcome => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
                let why = match outcome {
                    Err(e) => format!("waiting for it failed: {e}"),
                    _ => format!("it did not finish within {limit:?}"),
                };
                return Err(format!("{cmd:?}: {why}; stderr:\n{stderr}"));
            }
        }
    };
    Ok(Output { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() })
}

/// Runs `cmd` (bounded by `limit`, nothing on its stdin); panics with its output unless it
/// exits 0, else returns its stdout.
pub fn run_ok(mut cmd: Command, limit: Duration) -> String {
    let what = format!("{:?}", cmd.get_args().collect::<Vec<_>>());
    let out = try_run(&mut cmd, b"", limit).unwrap_or_else(|why| panic!("{why}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}
