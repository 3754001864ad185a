//! The shared core: the state machine behind a lock, and the local registries that apply
//! publishes to (watches, session deadlines).

use crate::command::{Applied, Change, Command};
use crate::lock;
use crate::outbox::Outbox;
use crate::session::SessionTracker;
use crate::state::StateMachine;
use crate::sync::{AtomicU64, Ordering, RwLock};
use crate::watch::{Outbound, WatchRegistry};
use std::sync::PoisonError;
use std::time::Duration;
use ward_proto::{ServerStats, Zxid};

/// State shared by every connection and by the log.
#[derive(Default)]
pub struct Core {
    /// A std `RwLock`: reads run in parallel, apply is short and never awaits, and holding it
    /// while publishing is what orders watch events before later reads (see [`crate::watch`]).
    state: RwLock<StateMachine>,
    pub watches: WatchRegistry,
    pub sessions: SessionTracker,
    /// Lock grants pushed to waiters, for [`ServerStats`].
    lock_grants: AtomicU64,
}

impl Core {
    /// Applies one command and publishes its effects. Only the command log calls this, in
    /// log order; nothing else mutates the tree.
    pub fn apply(&self, cmd: &Command) -> Applied {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let expiring_holds = lock::held_by_expiring(&state, cmd);
        let (applied, changes) = state.apply_command(cmd);
        crate::metrics::locks::released_by_expiry(expiring_holds, cmd.time_ms);
        let zxid = state.last_zxid();
        self.watches.fire(&changes, zxid);
        for grant in lock::grants(&state, &changes) {
            let msg = Outbound::LockGranted { path: grant.path, token: grant.token };
            // A session with no connection here learns of its grant by asking again
            // (`LockWait`) when it reconnects.
            if self.sessions.send(grant.session, msg) {
                self.lock_grants.fetch_add(1, Ordering::Relaxed);
                crate::metrics::locks::granted(grant.asked_ms);
            }
        }
        for change in &changes {
            match change {
                Change::SessionCreated { session, timeout_ms } => {
                    self.sessions.register(*session, Duration::from_millis(u64::from(*timeout_ms)))
                }
                Change::SessionEnded(session) => self.sessions.ended(*session),
                _ => {}
            }
        }
        drop(state);
        tracing::trace!(zxid = applied.zxid, session = %cmd.session, xid = cmd.xid, outcome = ?applied.outcome, "applied");
        applied
    }

    pub fn stats(&self, state: &StateMachine) -> ServerStats {
        ServerStats {
            last_zxid: state.last_zxid(),
            znodes: state.tree().len() as u64,
            sessions: state.sessions().count() as u64,
            watches: self.watches.len() as u64,
            lock_grants: self.lock_grants.load(Ordering::Relaxed),
            log_fsyncs: crate::metrics::log_fsyncs(),
        }
    }

    /// Replaces the whole state (installing a snapshot, or recovery at startup). Watches are
    /// not fired: connections that watched the old state are expected to be gone.
    /// The session tracker follows: sessions the new state no longer has are dropped (their
    /// connections closed), and new ones get a full timeout.
    pub fn replace_state(&self, state: StateMachine) {
        let mut current = self.state.write().unwrap_or_else(PoisonError::into_inner);
        *current = state;
        let live = current.sessions().map(|(id, r)| (id, Duration::from_millis(u64::from(r.timeout_ms)))).collect();
        self.sessions.follow(live);
    }

    /// Runs `f` against a consistent view of the state. Watches registered inside `f` cannot
    /// miss a change: apply waits for the view to be released.
    pub fn read<R>(&self, f: impl FnOnce(&StateMachine) -> R) -> R {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        f(&state)
    }

    /// A read on behalf of a connection: runs `f` in a consistent view, and returns the last
    /// zxid of that view and how many messages `outbox` had queued when `f` looked (`f` gets
    /// the count too). Since apply queues events under the write lock, every event for a
    /// change `f` can see is within that count, and the connection writes them before the
    /// read's reply (G6).
    pub fn view<R>(&self, outbox: &Outbox, f: impl FnOnce(&Core, &StateMachine, u64) -> R) -> (Zxid, u64, R) {
        self.read(|state| {
            let events_before = outbox.queued();
            (state.last_zxid(), events_before, f(self, state, events_before))
        })
    }
}
