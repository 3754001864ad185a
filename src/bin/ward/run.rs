//! `ward lock`, `ward semaphore` and `ward elect`: run a command while holding a lock (or a
//! permit) or leading an election.
//!
//! CMD runs as a child with `WARD_FENCING_TOKEN` and `WARD_LOCK_PATH` in its environment and
//! ward's stdin, stdout and stderr. When it exits, ward releases (unlock / resign) and exits
//! with its status. When the lock can no longer be trusted (`lost()`), or ward gets SIGTERM
//! or SIGINT, CMD gets SIGTERM, then SIGKILL if it is still running [`GRACE`] later (or at
//! a second signal to ward); ward then releases and exits non-zero.
//!
//! SIGTERM is sent with `kill -TERM PID` (the workspace forbids unsafe code, and this needs
//! no extra crate). Only CMD's own process is signalled: a shell wrapper should `exec` the
//! real program, or trap TERM and pass it on.

use crate::commands::{ward, Failure};
use crate::output::warn;
use std::future::Future;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::process::{Child, Command};
use ward_client::{Client, Error, Fence, LockKind, LockOptions};

/// How long CMD has to exit after SIGTERM before it gets SIGKILL.
const GRACE: Duration = Duration::from_secs(10);

/// What `ward lock` or `ward semaphore` asks for.
pub struct Asked {
    pub kind: LockKind,
    /// Give up if not granted within this.
    pub timeout: Option<Duration>,
    pub lock_delay: Option<Duration>,
}

/// Runs `cmd` while holding the lock(s) `paths`; see the module docs.
pub async fn lock(
    client: &Client,
    paths: &[String],
    asked: Asked,
    cmd: &[String],
    mut signals: Signals,
) -> Result<u8, Failure> {
    let Asked { kind, timeout, lock_delay } = asked;
    let options = lock_delay.map_or_else(LockOptions::new, |d| LockOptions::new().lock_delay(d));
    let what = match kind {
        LockKind::Exclusive => format!("lock {}", paths.join(" ")),
        LockKind::Shared => format!("shared lock {}", paths.join(" ")),
        LockKind::Semaphore { permits } => format!("permit (of {permits}) of {}", paths.join(" ")),
    };
    let context = format!("ward-cli pid={} host={} cmd={}", std::process::id(), hostname(), cmd.join(" "));
    let dirs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let acquire = async {
        let attempt = client.acquire_with(&dirs, kind, context.as_bytes(), &options);
        match timeout {
            Some(limit) => tokio::time::timeout(limit, attempt).await.ok(),
            None => Some(attempt.await),
        }
    };
    // Dropping the attempt (timeout, signal) removes its contender nodes.
    let guard = tokio::select! {
        acquired = acquire => match acquired {
            Some(guard) => guard.map_err(ward(what.clone()))?,
            None => return Err(Failure::NotGranted { what, timeout: timeout.unwrap_or_default() }),
        },
        (signal, name) = signals.recv() => {
            let then = format!("gave up waiting for the {what}; command not run");
            return Err(Failure::Interrupted { signal, name, then });
        }
    };
    let joined = |f: fn(&Fence) -> String| guard.fences().iter().map(f).collect::<Vec<_>>().join(",");
    let env = [("WARD_FENCING_TOKEN", joined(|f| f.token.to_string())), ("WARD_LOCK_PATH", joined(|f| f.path.clone()))];
    let ended = supervise(cmd, &env, guard.lost(), &mut signals).await;
    let released = release(&ended, client, guard.unlock()).await;
    finish(ended, released, what)
}

/// Runs `cmd` while leading the election `path` as `id`; see the module docs.
pub async fn elect(client: &Client, path: &str, id: &str, cmd: &[String], mut signals: Signals) -> Result<u8, Failure> {
    let election = client.election(path);
    let leadership = tokio::select! {
        campaign = election.campaign(id.as_bytes()) => campaign.map_err(ward(format!("campaign in {path}")))?,
        (signal, name) = signals.recv() => {
            let then = format!("gave up campaigning in {path}; command not run");
            return Err(Failure::Interrupted { signal, name, then });
        }
    };
    let env = [
        ("WARD_FENCING_TOKEN", leadership.fencing_token().to_string()),
        ("WARD_LOCK_PATH", leadership.path().to_owned()),
    ];
    let ended = supervise(cmd, &env, leadership.lost(), &mut signals).await;
    let released = release(&ended, client, leadership.resign()).await;
    finish(ended, released, format!("leadership of {path}"))
}

/// Waits for the release, but no longer than the session could live while we are cut off.
/// A lost lock is not waited for: whatever is left of it goes with the session, which ward
/// closes (or which expires) next.
async fn release(ended: &Ended, client: &Client, release: impl Future<Output = Result<(), Error>>) -> Released {
    if matches!(ended, Ended::Lost) {
        return Ok(Ok(()));
    }
    tokio::time::timeout(client.session_timeout() + Duration::from_secs(1), release).await
}

type Released = Result<Result<(), Error>, tokio::time::error::Elapsed>;

/// How CMD's run ended.
enum Ended {
    Exited(ExitStatus),
    Lost,
    Signalled(i32, &'static str),
    /// CMD could not be started (or waited for).
    Failed {
        program: String,
        error: std::io::Error,
    },
}

fn finish(ended: Ended, released: Released, what: String) -> Result<u8, Failure> {
    let status = match ended {
        Ended::Exited(status) => status,
        Ended::Lost => return Err(Failure::LockLost { what }),
        Ended::Signalled(signal, name) => {
            let then = match released {
                Ok(Ok(())) => format!("command stopped, {what} released"),
                _ => format!("command stopped; the {what} goes with the session"),
            };
            return Err(Failure::Interrupted { signal, name, then });
        }
        Ended::Failed { program, error } => return Err(Failure::Spawn { program, error }),
    };
    match released {
        Ok(Ok(())) => {}
        // CMD is done either way; the session's close (or expiry) removes the node.
        Ok(Err(e)) => warn(format!("warning: releasing the {what}: {e}")),
        Err(_) => warn(format!("warning: releasing the {what}: no answer from the server")),
    }
    Ok(exit_code(status))
}

/// CMD's exit code; a CMD killed by signal N gives 128+N, as shells report it.
fn exit_code(status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        return u8::try_from(code & 0xff).unwrap_or(1);
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return u8::try_from(128 + signal).unwrap_or(1);
    }
    1
}

/// Runs CMD until it exits, `lost` completes or a signal arrives (then stops it).
async fn supervise(
    cmd: &[String],
    env: &[(&str, String); 2],
    lost: impl Future<Output = ()>,
    signals: &mut Signals,
) -> Ended {
    let Some((program, args)) = cmd.split_first() else {
        return Ended::Failed { program: String::new(), error: std::io::Error::other("empty command") };
    };
    let mut command = Command::new(program);
    command.args(args).kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return Ended::Failed { program: program.clone(), error },
    };
    // `lost` first: if the lock went while CMD was finishing, its run was not protected
    // to the end, and the caller must hear about it.
    let ended = tokio::select! {
        biased;
        () = lost => Ended::Lost,
        (signal, name) = signals.recv() => Ended::Signalled(signal, name),
        status = child.wait() => match status {
            Ok(status) => return Ended::Exited(status),
            Err(error) => Ended::Failed { program: program.clone(), error },
        },
    };
    stop(&mut child, signals).await;
    ended
}

/// SIGTERM, then SIGKILL after [`GRACE`] or at the next signal to ward; waits for the exit.
async fn stop(child: &mut Child, signals: &mut Signals) {
    // Not reaped yet (we have not seen its exit), so the pid is still CMD's.
    if let Some(pid) = child.id() {
        terminate(pid).await;
    }
    tokio::select! {
        _ = child.wait() => return,
        _ = tokio::time::sleep(GRACE) => {}
        _ = signals.recv() => {}
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}

#[cfg(unix)]
async fn terminate(pid: u32) {
    let _ = Command::new("kill").arg("-TERM").arg(pid.to_string()).kill_on_drop(true).status().await;
}

#[cfg(not(unix))]
async fn terminate(_pid: u32) {}

fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|file| std::fs::read_to_string(file).ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// SIGTERM and SIGINT, handled from the moment [`Signals::install`] returns.
pub struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Installs the handlers now, so a signal arriving before anyone waits is kept.
    #[cfg(unix)]
    pub fn install() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        Signals { term: signal(SignalKind::terminate()).ok(), int: signal(SignalKind::interrupt()).ok() }
    }

    #[cfg(not(unix))]
    pub fn install() -> Signals {
        Signals {}
    }

    /// The next SIGTERM or SIGINT, as (number, name).
    #[cfg(unix)]
    pub async fn recv(&mut self) -> (i32, &'static str) {
        async fn next(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                // `None` only if the runtime is shutting down: never resolve.
                Some(signal) => {
                    if signal.recv().await.is_none() {
                        std::future::pending::<()>().await
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = next(&mut self.term) => (15, "SIGTERM"),
            () = next(&mut self.int) => (2, "SIGINT"),
        }
    }

    #[cfg(not(unix))]
    pub async fn recv(&mut self) -> (i32, &'static str) {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        (2, "SIGINT")
    }
}
