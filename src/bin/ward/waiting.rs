//! What a queued `ward lock|semaphore|elect` says on stderr while it waits, so that a wait
//! is never silent (a wait behind a long holder, or for a server that is down, looked hung):
//! once, whom it waits behind, with the holders' context (another ward's is
//! `ward-cli pid=N host=H cmd=CMD`; an election leader's, its `--id`); and each time the
//! connection to the server drops and comes back. `--quiet` turns it off.
//!
//! Only while waiting: once CMD runs, stderr is CMD's, and a lock lost under it is reported
//! when ward exits.

use crate::holders;
use crate::output::{one_line, utc, warn};
use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;
use ward_client::{Client, Contender, Error, SessionState};

/// A free lock is granted in one round trip: looking at the queue only after this pause
/// spares the server the reads for it (the grant drops the look unfinished).
const FIRST_LOOK: Duration = Duration::from_millis(200);
/// Before the attempt's contender shows in the queue (the acquire's reply is on its way),
/// look again after this, doubling up to [`LAST_PAUSE`].
const LOOK_AGAIN: Duration = Duration::from_millis(100);
const LAST_PAUSE: Duration = Duration::from_secs(5);

/// The attempt to be told about: `what` it is (`lock /a`, `leadership of /e`) and its lock
/// directories.
pub struct Waiting<'a> {
    pub client: &'a Client,
    pub what: &'a str,
    pub dirs: &'a [&'a str],
}

/// Runs `wait` to its end, telling meanwhile what it waits for (`None`: `--quiet`).
pub async fn told<T>(wait: impl Future<Output = T>, waiting: Option<Waiting<'_>>) -> T {
    let Some(waiting) = waiting else { return wait.await };
    tokio::select! {
        biased;
        out = wait => out,
        never = waiting.tell() => match never {},
    }
}

/// What the queue shows of the attempt.
enum Look {
    /// Its contenders are not all in the queue yet.
    NotQueued,
    /// It holds everywhere: the grant is on its way.
    Holds,
    /// It waits; the line says behind whom.
    Behind(String),
}

impl Waiting<'_> {
    async fn tell(&self) -> Infallible {
        let ((), never) = tokio::join!(self.behind(), self.connection());
        never
    }

    /// Says once whom the attempt waits behind, if it waits at all.
    async fn behind(&self) {
        tokio::time::sleep(FIRST_LOOK).await;
        let mut pause = LOOK_AGAIN;
        loop {
            match self.look().await {
                Ok(Look::Behind(line)) => return warn(line),
                Ok(Look::Holds) => return,
                Ok(Look::NotQueued) => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LAST_PAUSE);
                }
                // Cut off: look once the connection is back (`connection` tells meanwhile).
                Err(Error::ConnectionLoss) if self.reconnected().await => {}
                // Anything else (a session gone for good, a queue we may not read) is the
                // attempt's to report, or leaves nothing to say.
                Err(_) => return,
            }
        }
    }

    async fn look(&self) -> Result<Look, Error> {
        let me = Some(self.client.session_id());
        let mut blocked = Vec::new();
        for &dir in self.dirs {
            let (queue, holds) = holders::queue(self.client, dir).await?;
            let Some(mine) = queue.iter().position(|c| c.session == me) else { return Ok(Look::NotQueued) };
            if holds[mine] {
                continue;
            }
            let held_by: Vec<String> = queue.iter().zip(&holds).filter(|(_, &h)| h).map(|(c, _)| who(c)).collect();
            let mut line = if held_by.is_empty() { "no holder".to_owned() } else { held_by.join(", ") };
            let waiters_ahead = holds[..mine].iter().filter(|&&h| !h).count();
            if waiters_ahead > 0 {
                line.push_str(&format!(", and {waiters_ahead} more waiting ahead"));
            }
            // One directory is named by `what` already.
            blocked.push(if self.dirs.len() > 1 { format!("{dir} held by {line}") } else { format!("held by {line}") });
        }
        if blocked.is_empty() {
            return Ok(Look::Holds);
        }
        Ok(Look::Behind(format!("waiting for the {}: {}", self.what, blocked.join("; "))))
    }

    /// Waits until the session is connected again: true, or false if it ended for good.
    async fn reconnected(&self) -> bool {
        let mut states = self.client.state_changes();
        loop {
            match *states.borrow_and_update() {
                SessionState::Connected => return true,
                SessionState::Disconnected => {}
                SessionState::Expired | SessionState::Closed => return false,
            }
            if states.changed().await.is_err() {
                return false;
            }
        }
    }

    /// Says when the connection to the server drops, and when it is back. Never completes.
    async fn connection(&self) -> Infallible {
        let mut states = self.client.state_changes();
        let mut cut_off = false;
        loop {
            let state = *states.borrow_and_update();
            if state == SessionState::Disconnected && !cut_off {
                let lasts = self.client.session_timeout();
                warn(format!(
                    "lost the connection to the server; still waiting for the {} (the session and its place in \
                     the queue last {lasts:?} without one)",
                    self.what
                ));
            } else if state == SessionState::Connected && cut_off {
                warn(format!("connected to the server again; still waiting for the {}", self.what));
            }
            cut_off = state == SessionState::Disconnected;
            // A closed channel: the client is gone, and the attempt with it.
            if states.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

/// A holder as the waiting line names it: its context, and its session.
fn who(contender: &Contender) -> String {
    let context =
        if contender.data.is_empty() { "a holder without context".to_owned() } else { one_line(&contender.data) };
    match contender.lock_delay_until_ms {
        Some(ms) => format!("{context} (its session ended; held over by the lock-delay until {})", utc(ms)),
        None => format!("{context} (session {})", holders::session(contender)),
    }
}
