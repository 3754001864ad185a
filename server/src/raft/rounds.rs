//! The bookkeeping of touch rounds, apart from their I/O so that loom can check it: which
//! round a ping needs, and whether it has been acknowledged.
//!
//! The rule (R3 in docs/guarantees.md) is that a ping is answered only after a round that
//! *started after the ping arrived* is acknowledged: a round already in flight may have
//! passed its touches to the leader before the ping came, and acknowledging it would tell
//! the client that a heartbeat counted when the leader never saw it. Rounds are numbered as
//! they start; a ping arriving when `started` rounds have begun needs round `started + 1`.

use crate::session::SessionTracker;
use crate::sync::{Mutex, MutexGuard};
use std::sync::PoisonError;
use ward_proto::SessionId;

#[derive(Default)]
struct State {
    /// Rounds begun so far (the number of the newest).
    started: u64,
    /// The highest round acknowledged by the leader.
    acked: u64,
}

/// Shared by the round task and the connections' pings.
#[derive(Default)]
pub(crate) struct Rounds {
    // One lock for both counters: "started after the ping arrived" is decided by the order
    // of `needed` and `start` on it.
    state: Mutex<State>,
}

impl Rounds {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A ping arrived: the round it must wait for.
    pub(crate) fn needed(&self) -> u64 {
        self.lock().started + 1
    }

    /// The round task begins a round (before it takes the touched sessions): its number.
    pub(crate) fn start(&self) -> u64 {
        let mut state = self.lock();
        state.started += 1;
        state.started
    }

    /// The leader acknowledged round `round`, which carried the touches of `touched`, and
    /// answered `gone` of them gone. The refusals are recorded first: a ping this round
    /// confirms must not be answered as confirmed for a session the leader refused.
    pub(crate) fn acknowledged(
        &self,
        round: u64,
        sessions: &SessionTracker,
        touched: &[SessionId],
        gone: &[SessionId],
    ) {
        sessions.heard_back(touched, gone);
        self.ack(round);
    }

    /// The leader acknowledged round `round`.
    pub(crate) fn ack(&self, round: u64) {
        let mut state = self.lock();
        state.acked = state.acked.max(round);
    }

    /// Whether a ping that needed round `need` may be answered.
    pub(crate) fn confirmed(&self, need: u64) -> bool {
        self.lock().acked >= need
    }
}
