//! Deadlines and connection ownership of live sessions.

use crate::sync::{Mutex, MutexGuard};
use crate::watch::{CloseReason, ConnId, Outbound, OutboundTx};
use std::collections::HashMap;
use std::sync::PoisonError;
use std::time::Duration;
use tokio::time::Instant;
use ward_proto::SessionId;

struct Tracked {
    timeout: Duration,
    deadline: Instant,
    /// The connection serving the session now, if any.
    conn: Option<(ConnId, OutboundTx)>,
    /// An expiry has been proposed; later heartbeats do not revive the session.
    expiring: bool,
}

/// Every live session's deadline. Heartbeats only touch this map; they never reach the log.
#[derive(Default)]
pub struct SessionTracker {
    // A std mutex: touched on every frame, never held across an await.
    inner: Mutex<HashMap<SessionId, Tracked>>,
}

impl SessionTracker {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Tracked>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts tracking a session created by apply, with a full timeout ahead of it.
    pub fn register(&self, session: SessionId, timeout: Duration) {
        let tracked = Tracked { timeout, deadline: Instant::now() + timeout, conn: None, expiring: false };
        self.lock().insert(session, tracked);
    }

    /// Binds the session to a connection, closing the one that served it before. Returns
    /// false when the session is not live here.
    pub fn attach(&self, session: SessionId, conn: ConnId, tx: OutboundTx) -> bool {
        let mut map = self.lock();
        let Some(t) = map.get_mut(&session) else { return false };
        if t.expiring {
            return false;
        }
        t.deadline = Instant::now() + t.timeout;
        if let Some((_, old)) = t.conn.replace((conn, tx)) {
            let _ = old.send(Outbound::Close(CloseReason::SessionMoved));
        }
        true
    }

    /// Records a sign of life: any frame on the session's connection.
    pub fn touch(&self, session: SessionId) {
        if let Some(t) = self.lock().get_mut(&session) {
            if !t.expiring {
                t.deadline = Instant::now() + t.timeout;
            }
        }
    }

    /// The connection went away; the session lives on until its deadline.
    pub fn detach(&self, session: SessionId, conn: ConnId) {
        if let Some(t) = self.lock().get_mut(&session) {
            if t.conn.as_ref().is_some_and(|(id, _)| *id == conn) {
                t.conn = None;
            }
        }
    }

    /// Pushes `msg` to the connection serving `session`; false if none does.
    pub fn send(&self, session: SessionId, msg: Outbound) -> bool {
        match self.lock().get(&session).and_then(|t| t.conn.as_ref()) {
            Some((_, tx)) => tx.send(msg),
            None => false,
        }
    }

    /// True while `conn` is the connection serving `session`. A connection that lost its
    /// session to a newer one must not submit more writes for it.
    pub fn is_owner(&self, session: SessionId, conn: ConnId) -> bool {
        self.lock().get(&session).and_then(|t| t.conn.as_ref()).is_some_and(|(id, _)| *id == conn)
    }

    /// The session ended in the state machine: forget it and close its connection.
    pub fn ended(&self, session: SessionId) {
        if let Some(t) = self.lock().remove(&session) {
            if let Some((_, tx)) = t.conn {
                let _ = tx.send(Outbound::Close(CloseReason::SessionEnded));
            }
        }
    }

    /// Sessions whose deadline has passed and whose expiry is not yet proposed; marks them.
    pub fn take_due(&self, now: Instant) -> Vec<SessionId> {
        let mut map = self.lock();
        let mut due = Vec::new();
        for (id, t) in map.iter_mut() {
            if !t.expiring && t.deadline <= now {
                t.expiring = true;
                due.push(*id);
            }
        }
        due
    }

    /// An expiry proposal failed to be ordered; let the next sweep try again.
    pub fn retry_expiry(&self, session: SessionId) {
        if let Some(t) = self.lock().get_mut(&session) {
            t.expiring = false;
        }
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
