//! `ward lock`, `ward semaphore` and `ward elect`: run a command while holding a lock (or a
//! permit) or leading an election.
//!
//! CMD runs as a child in a process group of its own (`group`), with `WARD_FENCING_TOKEN` and
//! `WARD_LOCK_PATH` in its environment and ward's stdin, stdout and stderr. When it exits,
//! ward releases (unlock / resign) and exits with its status. When the lock can no longer be
//! trusted (`lost()`), CMD's whole group gets SIGTERM; when ward gets SIGTERM, SIGINT or
//! SIGHUP, the group gets that signal. Whatever of the group still runs `--grace` later (or
//! at a second signal to ward) gets SIGKILL; ward then releases and exits non-zero.
//!
//! While it waits for the lock, ward says on stderr behind whom, and when the connection
//! to the server drops and comes back (`waiting`), unless `--quiet`.

use crate::commands::{ward, Failure};
use crate::group::{self, Stopped};
use crate::mismatch;
use crate::output::warn;
use crate::signals::{Received, Signals};
use crate::waiting::{told, Waiting};
use std::future::Future;
use std::process::ExitStatus;
use std::time::Duration;
use ward_client::{Client, Error, Fence, LockKind, LockOptions};

/// What `ward lock` or `ward semaphore` asks for.
pub struct Asked {
    pub kind: LockKind,
    /// Give up if not granted within this.
    pub timeout: Option<Duration>,
    pub lock_delay: Option<Duration>,
}

/// How CMD is run, by all three commands.
pub struct Run<'a> {
    /// CMD and its arguments.
    pub cmd: &'a [String],
    /// How long CMD's group has, after the first signal, before SIGKILL.
    pub grace: Duration,
    /// Say nothing on stderr while waiting.
    pub quiet: bool,
}

/// Runs `cmd` while holding the lock(s) `paths`; see the module docs.
pub async fn lock(
    client: &Client,
    paths: &[String],
    asked: Asked,
    run: Run<'_>,
    mut signals: Signals,
) -> Result<u8, Failure> {
    let Asked { kind, timeout, lock_delay } = asked;
    let options = lock_delay.map_or_else(LockOptions::new, |d| LockOptions::new().lock_delay(d));
    let what = match kind {
        LockKind::Exclusive => format!("lock {}", paths.join(" ")),
        LockKind::Shared => format!("shared lock {}", paths.join(" ")),
        LockKind::Semaphore { permits } => format!("permit (of {permits}) of {}", paths.join(" ")),
    };
    let context = format!("ward-cli pid={} host={} cmd={}", std::process::id(), hostname(), run.cmd.join(" "));
    let dirs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let waiting = (!run.quiet).then_some(Waiting { client, what: &what, dirs: &dirs });
    let acquire = async {
        let attempt = told(client.acquire_with(&dirs, kind, context.as_bytes(), &options), waiting);
        match timeout {
            Some(limit) => tokio::time::timeout(limit, attempt).await.ok(),
            None => Some(attempt.await),
        }
    };
    // Dropping the attempt (timeout, signal) removes its contender nodes.
    let acquired = tokio::select! {
        acquired = acquire => match acquired {
            Some(acquired) => acquired,
            None => return Err(Failure::NotGranted { what, timeout: timeout.unwrap_or_default() }),
        },
        signal = signals.recv() => {
            let then = format!("gave up waiting for the {what}; command not run");
            return Err(Failure::Interrupted { signal, then });
        }
    };
    let guard = match acquired {
        Ok(guard) => guard,
        Err(error) => {
            // As the client rounds it (`LockOptions::lock_delay`): up to whole milliseconds.
            let asked_ms = lock_delay
                .filter(|d| !d.is_zero())
                .map(|d| u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX));
            return Err(match mismatch::explain(client, &dirs, kind, asked_ms, &error).await {
                Some(mismatch) => Failure::Mismatch { what, mismatch },
                None => ward(what)(error),
            });
        }
    };
    let joined = |f: fn(&Fence) -> String| guard.fences().iter().map(f).collect::<Vec<_>>().join(",");
    let env = [("WARD_FENCING_TOKEN", joined(|f| f.token.to_string())), ("WARD_LOCK_PATH", joined(|f| f.path.clone()))];
    let ended = supervise(&run, &env, guard.lost(), &mut signals).await;
    let released = release(&ended, client, guard.unlock()).await;
    finish(ended, released, what)
}

/// Runs `cmd` while leading the election `path` as `id`; see the module docs.
pub async fn elect(client: &Client, path: &str, id: &str, run: Run<'_>, mut signals: Signals) -> Result<u8, Failure> {
    let election = client.election(path);
    let what = format!("leadership of {path}");
    let dirs = [path];
    let waiting = (!run.quiet).then_some(Waiting { client, what: &what, dirs: &dirs });
    let leadership = tokio::select! {
        campaign = told(election.campaign(id.as_bytes()), waiting) => {
            campaign.map_err(ward(format!("campaign in {path}")))?
        }
        signal = signals.recv() => {
            let then = format!("gave up campaigning in {path}; command not run");
            return Err(Failure::Interrupted { signal, then });
        }
    };
    let env = [
        ("WARD_FENCING_TOKEN", leadership.fencing_token().to_string()),
        ("WARD_LOCK_PATH", leadership.path().to_owned()),
    ];
    let ended = supervise(&run, &env, leadership.lost(), &mut signals).await;
    let released = release(&ended, client, leadership.resign()).await;
    finish(ended, released, what)
}

/// Waits for the release, but no longer than the session could live while we are cut off.
/// A lost lock is not waited for: whatever is left of it goes with the session, which ward
/// closes (or which expires) next.
async fn release(ended: &Ended, client: &Client, release: impl Future<Output = Result<(), Error>>) -> Released {
    if matches!(ended, Ended::Lost(_)) {
        return Ok(Ok(()));
    }
    tokio::time::timeout(client.session_timeout() + Duration::from_secs(1), release).await
}

type Released = Result<Result<(), Error>, tokio::time::error::Elapsed>;

/// How CMD's run ended.
enum Ended {
    Exited(ExitStatus),
    /// The lock was lost, and CMD's group stopped (how: the `Stopped`).
    Lost(Stopped),
    /// A signal reached ward, and CMD's group was stopped.
    Signalled(Received, Stopped),
    /// CMD could not be started (or waited for).
    Failed {
        program: String,
        error: std::io::Error,
    },
}

fn finish(ended: Ended, released: Released, what: String) -> Result<u8, Failure> {
    let status = match ended {
        Ended::Exited(status) => status,
        Ended::Lost(stopped) => return Err(Failure::LockLost { what, stopped: how("SIGTERM", stopped) }),
        Ended::Signalled(signal, stopped) => {
            let stopped = how(signal.name, stopped);
            let then = match released {
                Ok(Ok(())) => format!("{stopped}; {what} released"),
                _ => format!("{stopped}; the {what} goes with the session"),
            };
            return Err(Failure::Interrupted { signal, then });
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

/// How CMD's group was stopped, in words: `first` (a signal's name) and what followed.
fn how(first: &str, stopped: Stopped) -> String {
    match stopped {
        Stopped::Ended => format!("{first} sent to the command's process group"),
        Stopped::Killed => format!("{first} sent to the command's process group, then SIGKILL"),
    }
}

/// Runs CMD until it exits, `lost` completes or a signal arrives (then stops its group).
async fn supervise(
    run: &Run<'_>,
    env: &[(&str, String); 2],
    lost: impl Future<Output = ()>,
    signals: &mut Signals,
) -> Ended {
    let Some((program, args)) = run.cmd.split_first() else {
        return Ended::Failed { program: String::new(), error: std::io::Error::other("empty command") };
    };
    let mut child = match group::spawn(program, args, env) {
        Ok(child) => child,
        Err(error) => return Ended::Failed { program: program.clone(), error },
    };
    // `lost` first: if the lock went while CMD was finishing, its run was not protected
    // to the end, and the caller must hear about it. `None`: lost; else the signal.
    let why = tokio::select! {
        biased;
        () = lost => Ok(None),
        signal = signals.recv() => Ok(Some(signal)),
        status = child.wait() => match status {
            Ok(status) => return Ended::Exited(status),
            Err(error) => Err(error),
        },
    };
    let first = match &why {
        Ok(Some(signal)) => signal.short_name(),
        // Lost, or CMD could not be waited for: stopped as on a SIGTERM.
        Ok(None) | Err(_) => "TERM",
    };
    let stopped = group::stop(&mut child, first, run.grace, signals).await;
    match why {
        Ok(None) => Ended::Lost(stopped),
        Ok(Some(signal)) => Ended::Signalled(signal, stopped),
        Err(error) => Ended::Failed { program: program.clone(), error },
    }
}

fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|file| std::fs::read_to_string(file).ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".to_owned())
}
