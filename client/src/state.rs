//! What the application can see of its session.

use crate::sync::{lock, Mutex, Signal};

/// The session as this client knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Connected to a server; requests flow.
    Connected,
    /// The connection dropped; the client is reconnecting. The session (and its ephemerals)
    /// lives on if a server is reached within the session timeout.
    Disconnected,
    /// The server ended the session (heartbeats stopped for longer than the timeout). Every
    /// request now fails with `SessionExpired`.
    Expired,
    /// The application closed the client.
    Closed,
}

impl SessionState {
    /// True once the session can never serve requests again.
    pub fn is_terminal(self) -> bool {
        matches!(self, SessionState::Expired | SessionState::Closed)
    }
}

/// The session as the connection task last published it, shared with every lock guard so
/// that a guard can tell when its lock stopped being trustworthy (see [`crate::lock`]).
///
/// Connections are numbered by how many have been lost: the first is stretch 0, the
/// disconnected stretch after a loss and the connection that resumes from it share the next
/// number. A stretch is *doubted* when it lasts so long that the session may have expired
/// unseen. A grant arrives on a live connection, so a guard made while connected trusts its
/// lock until a later stretch is doubted, and one made while disconnected until this stretch
/// is (which may already have happened).
pub(crate) struct SessionCell {
    inner: Mutex<Published>,
    changed: Signal,
}

struct Published {
    state: SessionState,
    /// Connections lost so far.
    losses: u64,
    /// The last doubted stretch (0: none; stretch 0 is a live connection, never doubted).
    doubted: u64,
}

impl SessionCell {
    pub(crate) fn new() -> SessionCell {
        SessionCell {
            inner: Mutex::new(Published { state: SessionState::Connected, losses: 0, doubted: 0 }),
            changed: Signal::default(),
        }
    }

    /// The connection task's view changed. A terminal state is final.
    pub(crate) fn set(&self, state: SessionState) {
        {
            let mut p = lock(&self.inner);
            if p.state.is_terminal() {
                return;
            }
            if p.state == SessionState::Connected && state == SessionState::Disconnected {
                p.losses += 1;
            }
            p.state = state;
        }
        self.changed.notify();
    }

    /// The connection has been gone so long that the session may have expired.
    pub(crate) fn doubt(&self) {
        {
            let mut p = lock(&self.inner);
            p.doubted = p.losses;
        }
        self.changed.notify();
    }

    /// For a grant seen now: the first stretch whose doubt makes it untrustworthy.
    pub(crate) fn trust_until(&self) -> u64 {
        let p = lock(&self.inner);
        match p.state {
            SessionState::Connected => p.losses + 1,
            _ => p.losses,
        }
    }

    /// True once a grant trusted until stretch `until` can no longer be trusted.
    pub(crate) fn is_lost(&self, until: u64) -> bool {
        let p = lock(&self.inner);
        p.state.is_terminal() || p.doubted >= until
    }

    /// Completes once [`is_lost`](Self::is_lost)`(until)` holds.
    pub(crate) async fn lost(&self, until: u64) {
        loop {
            let seen = self.changed.generation();
            if self.is_lost(until) {
                return;
            }
            self.changed.changed(seen).await;
        }
    }
}
