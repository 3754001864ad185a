//! The shared core: the state machine behind a lock, and the local registries that apply
//! publishes to (watches, session deadlines).

use crate::command::{Applied, Change, Command};
use crate::session::SessionTracker;
use crate::state::StateMachine;
use crate::watch::WatchRegistry;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

/// State shared by every connection and by the log.
#[derive(Default)]
pub struct Core {
    /// A std `RwLock`: reads run in parallel, apply is short and never awaits, and holding it
    /// while publishing is what orders watch events before later reads (see [`crate::watch`]).
    state: RwLock<StateMachine>,
    pub watches: WatchRegistry,
    pub sessions: SessionTracker,
}

impl Core {
    /// Applies one command and publishes its effects. Only the command log calls this, in
    /// log order; nothing else mutates the tree.
    pub fn apply(&self, cmd: &Command) -> Applied {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let (outcome, changes) = state.apply(cmd);
        let zxid = state.last_zxid();
        self.watches.fire(&changes, zxid);
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
        tracing::trace!(zxid, session = %cmd.session, xid = cmd.xid, ?outcome, "applied");
        Applied { zxid, outcome }
    }

    /// Runs `f` against a consistent view of the state. Watches registered inside `f` cannot
    /// miss a change: apply waits for the view to be released.
    pub fn read<R>(&self, f: impl FnOnce(&StateMachine) -> R) -> R {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        f(&state)
    }
}
