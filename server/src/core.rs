//! The shared core: the replicated state machine behind a lock, and the one sink that
//! apply publishes its effects to ([`Effects`]).

use crate::command::{Applied, Change, Command};
use crate::lock;
use crate::state::StateMachine;
use crate::sync::RwLock;
use std::sync::{Arc, PoisonError};

/// Where apply's effects go: watch events, lock grants, sessions starting and ending. A
/// serving server provides `Local` (`local.rs`); tests provide their own to observe or drop them.
///
/// Both methods run with the state's write lock held, which is what orders an event
/// before any later read of the state (see [`crate::watch`]): they must be short and never
/// block on a connection.
pub trait Effects: Send + Sync {
    /// After one command was applied; `state` already includes its `changes`.
    fn applied(&self, state: &StateMachine, changes: &[Change]);
    /// After the whole state was replaced (a snapshot installed, or recovery at startup).
    fn replaced(&self, state: &StateMachine);
    /// A session's expiry stamped at `stamped_ms` released `held` locks (for the figures).
    fn released_by_expiry(&self, _held: usize, _stamped_ms: i64) {}
}

/// The state every connection reads and the log applies to.
pub struct Core {
    /// A std `RwLock`: reads run in parallel, apply is short and never awaits, and holding it
    /// while publishing is what orders watch events before later reads (see [`crate::watch`]).
    state: RwLock<StateMachine>,
    effects: Arc<dyn Effects>,
}

impl Core {
    pub fn new(effects: Arc<dyn Effects>) -> Core {
        Core { state: RwLock::default(), effects }
    }

    /// Applies one command and publishes its effects. Only the command log calls this, in
    /// log order; nothing else mutates the tree.
    pub fn apply(&self, cmd: &Command) -> Applied {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let expiring_holds = lock::held_by_expiring(&state, cmd);
        let (applied, changes) = state.apply_command(cmd);
        self.effects.released_by_expiry(expiring_holds, cmd.time_ms);
        self.effects.applied(&state, &changes);
        drop(state);
        tracing::trace!(zxid = applied.zxid, session = %cmd.session, xid = cmd.xid, outcome = ?applied.outcome, "applied");
        applied
    }

    /// Replaces the whole state (installing a snapshot, or recovery at startup).
    pub(crate) fn replace_state(&self, state: StateMachine) {
        let mut current = self.state.write().unwrap_or_else(PoisonError::into_inner);
        *current = state;
        self.effects.replaced(&current);
    }

    /// Runs `f` against a consistent view of the state. Watches registered inside `f` cannot
    /// miss a change: apply waits for the view to be released.
    pub fn read<R>(&self, f: impl FnOnce(&StateMachine) -> R) -> R {
        let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
        f(&state)
    }
}

#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;
    use crate::command::{CommandOp, Outcome};
    use std::sync::Mutex;
    use ward_proto::{CreateMode, Op, SessionId, SessionSecret, Zxid};

    /// A sink that only records: what a test provides to see apply's effects without any
    /// connection or session registry.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<(Zxid, Vec<Change>)>>);

    impl Effects for Recorder {
        fn applied(&self, state: &StateMachine, changes: &[Change]) {
            self.0.lock().expect("recorder").push((state.last_zxid(), changes.to_vec()));
        }
        fn replaced(&self, state: &StateMachine) {
            self.0.lock().expect("recorder").push((state.last_zxid(), Vec::new()));
        }
    }

    fn command(session: SessionId, op: CommandOp) -> Command {
        Command { time_ms: 1, session, xid: 0, op }
    }

    #[test]
    fn every_applied_command_reaches_the_sink_once_with_its_changes_and_zxid() {
        let recorder = Arc::new(Recorder::default());
        let core = Core::new(recorder.clone());
        let create = CommandOp::CreateSession { timeout_ms: 10_000, secret: SessionSecret([1; 16]), owner: None };
        let session = match core.apply(&command(SessionId(0), create)).outcome {
            Outcome::SessionCreated(id) => id,
            other => panic!("{other:?}"),
        };
        let op = Op::Create { path: "/n".into(), data: vec![], mode: CreateMode::Ephemeral };
        let created = core.apply(&command(session, CommandOp::Op(op)));
        core.apply(&command(session, CommandOp::ExpireSession));
        let seen = recorder.0.lock().expect("recorder").clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[0].1, [Change::SessionCreated { session, timeout_ms: 10_000 }]);
        assert_eq!(seen[1].0, created.zxid, "the sink sees the state after the command");
        assert!(seen[1].1.contains(&Change::Created("/n".into())), "{:?}", seen[1]);
        assert!(seen[2].1.contains(&Change::Deleted("/n".into())), "expiry deletes the ephemeral: {:?}", seen[2]);
        assert!(seen[2].1.contains(&Change::SessionEnded(session)), "{:?}", seen[2]);

        let snapshot = core.read(|state| state.clone());
        core.replace_state(snapshot);
        assert_eq!(recorder.0.lock().expect("recorder").len(), 4, "a replaced state is published once");
    }
}
