//! What one server keeps beside the replicated state: the watches its connections armed,
//! its sessions' deadlines and connections, and what apply pushed to them. Every member of
//! an ensemble has its own; nothing here is logged or in a snapshot.

use crate::command::Change;
use crate::conn::{CloseReason, Outbound};
use crate::core::{Core, Effects};
use crate::lock;
use crate::session::{Readiness, SessionTracker};
use crate::state::StateMachine;
use crate::sync::{AtomicU64, Ordering};
use crate::watch::WatchRegistry;
use std::sync::Arc;
use std::time::Duration;
use ward_proto::ServerStats;

/// The local registries, and the sink of apply's effects on a serving server (leader or
/// follower alike: each pushes events and grants to the clients connected to it).
pub struct Local {
    pub watches: WatchRegistry,
    pub sessions: SessionTracker,
    /// Whether this server may do a leader's duties now; `sessions` switches it.
    pub ready: Arc<Readiness>,
    /// This server's figures (`/metrics`, the four-letter words).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Lock grants pushed to waiters connected here.
    lock_grants: AtomicU64,
}

impl Default for Local {
    fn default() -> Self {
        let ready = Arc::new(Readiness::default());
        Local {
            watches: WatchRegistry::default(),
            sessions: SessionTracker::new(ready.clone()),
            ready,
            metrics: Arc::default(),
            lock_grants: AtomicU64::default(),
        }
    }
}

impl Local {
    /// A core publishing to a fresh `Local`, and that `Local`: what a serving server uses.
    pub fn serving() -> (Arc<Core>, Arc<Local>) {
        let local = Arc::new(Local::default());
        (Arc::new(Core::new(local.clone())), local)
    }

    pub fn lock_grants(&self) -> u64 {
        self.lock_grants.load(Ordering::Relaxed)
    }

    /// The server's figures: `state`'s, and this server's own.
    pub fn stats(&self, state: &StateMachine) -> ServerStats {
        ServerStats {
            last_zxid: state.last_zxid(),
            znodes: state.tree().len() as u64,
            sessions: state.sessions().count() as u64,
            watches: self.watches.len() as u64,
            lock_grants: self.lock_grants(),
            log_fsyncs: self.metrics.log_fsyncs(),
        }
    }

    /// Gives every session in `state` a full timeout from now. Heartbeats are not logged,
    /// so after a restart nobody knows when a session was last heard from; its client gets a
    /// whole timeout to reconnect. Call before accepting connections (it forgets which
    /// connection serves a session).
    pub(crate) fn restart_deadlines(&self, state: &StateMachine) {
        for (id, record) in state.sessions() {
            self.sessions.register(id, Duration::from_millis(u64::from(record.timeout_ms)));
        }
    }
}

impl AsRef<SessionTracker> for Local {
    fn as_ref(&self) -> &SessionTracker {
        &self.sessions
    }
}

impl Effects for Local {
    fn released_by_expiry(&self, held: usize, stamped_ms: i64) {
        self.metrics.locks.released_by_expiry(held, stamped_ms);
    }

    fn applied(&self, state: &StateMachine, changes: &[Change]) {
        self.watches.fire(changes, state.last_zxid());
        for grant in lock::grants(state, changes) {
            let msg = Outbound::LockGranted { path: grant.path, token: grant.token };
            // A session with no connection here learns of its grant by asking again
            // (`LockWait`) when it reconnects.
            if self.sessions.send(grant.session, msg) {
                self.lock_grants.fetch_add(1, Ordering::Relaxed);
                self.metrics.locks.granted(grant.asked_ms);
            }
        }
        for change in changes {
            match change {
                Change::SessionCreated { session, timeout_ms } => {
                    self.sessions.register(*session, Duration::from_millis(u64::from(*timeout_ms)))
                }
                Change::SessionEnded(session) => self.sessions.ended(*session),
                _ => {}
            }
        }
    }

    /// Watches are not fired and grants not pushed: nothing says which changes lie between
    /// the two states. So every connection here is closed (none are open at startup): its
    /// client reconnects, re-arms its watches from the last zxid it saw and asks after its
    /// lock waits (G6, G23). The history persistent watches are replayed from starts again
    /// at the new state. Sessions the new state no longer has are dropped, and new ones get
    /// a full timeout.
    fn replaced(&self, state: &StateMachine) {
        self.sessions.close_all(CloseReason::StateReplaced);
        self.watches.reset_history(state.last_zxid());
        let live = state.sessions().map(|(id, r)| (id, Duration::from_millis(u64::from(r.timeout_ms)))).collect();
        self.sessions.follow(live);
    }
}
