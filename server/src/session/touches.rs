//! Touch rounds, the followers' half of session liveness: the sessions heard from here since
//! the last round, passed on to the leader (whose deadlines are the ones that count), and
//! the ones the leader answered "gone" at the last round that carried their touch.

use std::collections::HashSet;
use ward_proto::SessionId;

#[derive(Default)]
pub(crate) struct Touches {
    /// Heard from since the last [`Touches::take`], in the order first heard, so draining
    /// costs what was touched and not every session.
    pending: Vec<SessionId>,
    listed: HashSet<SessionId>,
    /// The leader does not know these (or is expiring them): their heartbeats are not
    /// confirmed here until a later round carries a touch the leader takes.
    refused: HashSet<SessionId>,
}

impl Touches {
    pub(crate) fn mark(&mut self, session: SessionId) {
        if self.listed.insert(session) {
            self.pending.push(session);
        }
    }

    pub(crate) fn take(&mut self) -> Vec<SessionId> {
        self.listed.clear();
        std::mem::take(&mut self.pending)
    }

    /// The leader acknowledged a round that carried the touches of `touched`, and answered
    /// `gone` of them gone.
    pub(crate) fn heard_back(&mut self, touched: &[SessionId], gone: &[SessionId]) {
        let gone: HashSet<&SessionId> = gone.iter().collect();
        for id in touched {
            if gone.contains(id) {
                self.refused.insert(*id);
            } else {
                self.refused.remove(id);
            }
        }
    }

    pub(crate) fn refused(&self, session: SessionId) -> bool {
        self.refused.contains(&session)
    }

    /// The refusals were another leader's: this one decides now.
    pub(crate) fn forget_refusals(&mut self) {
        self.refused.clear();
    }

    /// The session ended here.
    pub(crate) fn forget(&mut self, session: SessionId) {
        self.refused.remove(&session);
    }
}
