//! CMD's process group. `ward lock|semaphore|elect -- CMD` starts CMD as the leader of a
//! process group of its own and, to stop it, signals the whole group: CMD's own process
//! alone would leave what it started (a shell script's children and their children) working
//! on with parent 1 after the lock is gone.
//!
//! Stopping: the group gets a first signal (SIGTERM when the lock is lost; when ward itself
//! is interrupted, the signal ward got), and SIGKILL if any of it still runs `grace` later,
//! or at once at a second signal to ward. Processes that CMD leaves running when it exits by
//! itself are not stopped: CMD's exit is the end of the protected work, as it always was.
//!
//! Signals go out through `kill -s SIG -- -PGID`, as the ward CLI already stopped CMD: the
//! workspace forbids unsafe code, std has no safe `kill(2)`, and a crate that wraps it would
//! be one more dependency for a few calls made only when CMD is stopped. Whether any of the
//! group still runs is read from /proc on Linux, where a member that has exited but is not
//! yet reaped by init (a zombie, which does no more work) does not count; elsewhere from
//! `kill -s 0`, which counts zombies too (then the wait can last the whole grace).
//!
//! Being a group of its own, CMD is outside the terminal's foreground group: the terminal's
//! SIGINT (Ctrl-C) and SIGHUP reach ward alone, which passes them on (`signals`); CMD
//! cannot read from the terminal (it would be stopped by SIGTTIN), and Ctrl-Z stops ward,
//! not CMD.

use crate::signals::Signals;
use std::time::Duration;
use tokio::process::{Child, Command};

/// How often, during the grace, ward looks whether the group has ended.
const POLL: Duration = Duration::from_millis(50);

/// Starts `program args` with `env` added, as the leader of a new process group (whose id
/// is then its pid).
pub fn spawn(program: &str, args: &[String], env: &[(&str, String)]) -> std::io::Result<Child> {
    let mut command = Command::new(program);
    // kill_on_drop: should ward itself fail half-way, CMD at least does not outlive it.
    command.args(args).kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    #[cfg(unix)]
    command.process_group(0);
    command.spawn()
}

/// How a stop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The whole group ended after the first signal.
    Ended,
    /// Some of it was still running at the end of the grace (or at a second signal to ward)
    /// and got SIGKILL.
    Killed,
}

/// Sends `first` (a `kill -s` name: TERM, INT, HUP) to CMD's group, waits up to `grace` for
/// all of it to end, then SIGKILLs what is left; a signal to ward meanwhile cuts the grace
/// short. CMD (`child`) is reaped either way.
pub async fn stop(child: &mut Child, first: &str, grace: Duration, signals: &mut Signals) -> Stopped {
    // Not reaped yet (we have not seen its exit), so the pid is still CMD's and names its
    // group. Without one, CMD has already been reaped: nothing of it to signal.
    let Some(group) = child.id() else { return Stopped::Ended };
    signal(group, first).await;
    tokio::select! {
        () = ended(child, group) => return Stopped::Ended,
        () = tokio::time::sleep(grace) => {}
        _ = signals.recv() => {}
    }
    signal(group, "KILL").await;
    let _ = child.wait().await;
    Stopped::Killed
}

/// Completes once CMD has exited (and is reaped: an unreaped CMD still counts as a member)
/// and no other member of its group runs.
async fn ended(child: &mut Child, group: u32) {
    let _ = child.wait().await;
    while runs(group).await {
        tokio::time::sleep(POLL).await;
    }
}

/// `kill -s SIGNAL -- -GROUP`. A group already gone is no error: nothing is left to stop.
#[cfg(unix)]
async fn signal(group: u32, signal: &str) {
    let _ = kill(&["-s", signal, "--", &format!("-{group}")]).await;
}

#[cfg(not(unix))]
async fn signal(_group: u32, _signal: &str) {}

/// Whether any member of the process group `group` is still running (not a zombie).
#[cfg(unix)]
async fn runs(group: u32) -> bool {
    let members = tokio::task::spawn_blocking(move || running_members(group)).await.ok().flatten();
    match members {
        Some(members) => members > 0,
        // No /proc: ask kill, which counts zombies too.
        None => kill(&["-s", "0", "--", &format!("-{group}")]).await,
    }
}

#[cfg(not(unix))]
async fn runs(_group: u32) -> bool {
    false
}

/// Runs `kill ARGS`, quietly; true if it succeeded.
#[cfg(unix)]
async fn kill(args: &[&str]) -> bool {
    use std::process::Stdio;
    let status = Command::new("kill")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await;
    status.is_ok_and(|status| status.success())
}

/// How many processes of group `group` /proc lists as running (any state but zombie and
/// dead); `None` without a readable /proc.
fn running_members(group: u32) -> Option<usize> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let group = group.to_string();
    let count = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_str().is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit())))
        // A process that ended between the listing and the read is simply not counted.
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| stat_says_running_in(stat, &group))
        .count();
    Some(count)
}

/// Reads `/proc/PID/stat`: `PID (COMM) STATE PPID PGRP ...`, where COMM may hold spaces and
/// parentheses (hence the last `)`).
fn stat_says_running_in(stat: &str, group: &str) -> bool {
    let Some((_, rest)) = stat.rsplit_once(')') else { return false };
    let mut fields = rest.split_whitespace();
    let (Some(state), Some(_ppid), Some(pgrp)) = (fields.next(), fields.next(), fields.next()) else {
        return false;
    };
    pgrp == group && !matches!(state, "Z" | "X" | "x")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_group_and_state_from_proc_stat() {
        assert!(stat_says_running_in("41 (sleep) S 40 40 40 0 -1", "40"));
        assert!(stat_says_running_in("41 (my (odd) name) R 40 40 40 0", "40"));
        assert!(!stat_says_running_in("41 (sleep) Z 1 40 40 0", "40"), "a zombie runs no more");
        assert!(!stat_says_running_in("41 (sleep) S 40 400 40 0", "40"));
        assert!(!stat_says_running_in("garbage", "40"));
    }
}
