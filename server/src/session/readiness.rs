//! Whether this server may do a leader's duties now: expire sessions, delete unused
//! containers and TTL nodes, end lock-delays, refuse the touches of sessions it does not
//! know. Always on a single server; in an ensemble only on a leader that has applied every
//! entry of earlier terms and restarted every session's deadline. The switch is the
//! session tracker's ([`SessionTracker::ready_to_lead`](super::SessionTracker::ready_to_lead)),
//! which orders it with the deadlines; the duties only read it.

use crate::sync::{AtomicBool, Ordering};

#[derive(Debug)]
pub struct Readiness(AtomicBool);

impl Default for Readiness {
    fn default() -> Self {
        Readiness(AtomicBool::new(true))
    }
}

impl Readiness {
    pub(crate) fn is_ready(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    pub(super) fn set(&self, on: bool) {
        self.0.store(on, Ordering::SeqCst);
    }
}
