//! When a quorum last followed this leader, by Ward's own clock: the touch lease (G16).
//!
//! openraft's metrics carry `millis_since_quorum_ack`, but it is computed when the core
//! publishes them, at the top of its loop. Read later it is older by the time since: a core
//! held up by storage, or a process paused and resumed before its core ran again, still
//! reads "fresh", and the leader would acknowledge touches that a leader elected meanwhile
//! never saw. So the network records here when it *sent* each append (a heartbeat is one)
//! that a voter accepted, and the lease is judged from those instants at the moment of the
//! check. An acceptance means the voter took the append after it was sent, and before any
//! vote it gave a later leader (after which it takes nothing from this one): a majority of
//! every configuration having accepted appends sent after `q` means no other leader elected
//! before `q`, whether or not the voters kept openraft's lease (`gone_leader` waives it).

use crate::sync::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::PoisonError;
use std::time::{Duration, Instant};

/// See the module's doc. Shared by the network (one writer per peer) and the touch rounds.
#[derive(Default)]
pub(crate) struct QuorumClock {
    /// Per peer: when the newest append it accepted was sent.
    accepted: Mutex<BTreeMap<u64, Instant>>,
}

impl QuorumClock {
    /// `peer` accepted an append this member sent at `sent` (answered it with anything but
    /// a higher vote).
    pub(crate) fn accepted(&self, peer: u64, sent: Instant) {
        let mut accepted = self.accepted.lock().unwrap_or_else(PoisonError::into_inner);
        let at = accepted.entry(peer).or_insert(sent);
        *at = (*at).max(sent);
    }

    /// Whether a majority of the voters of every one of `configs` (a joint membership has
    /// two) accepted an append sent less than `lease` before `now`; `me` counts as having
    /// accepted it now.
    pub(crate) fn fresh(&self, me: u64, configs: &[BTreeSet<u64>], now: Instant, lease: Duration) -> bool {
        let accepted = self.accepted.lock().unwrap_or_else(PoisonError::into_inner);
        let recent = |voter: &u64| {
            *voter == me || accepted.get(voter).is_some_and(|&sent| now.saturating_duration_since(sent) < lease)
        };
        !configs.is_empty()
            && configs.iter().all(|voters| 2 * voters.iter().filter(|v| recent(v)).count() > voters.len())
    }
}

#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_millis(70);

    fn voters(ids: &[u64]) -> Vec<BTreeSet<u64>> {
        vec![ids.iter().copied().collect()]
    }

    /// G16: freshness is judged when asked, from when the appends were sent, so a check made
    /// after a pause longer than the lease finds nothing fresh, however recently the
    /// acceptances were recorded.
    #[test]
    fn a_quorum_is_fresh_only_within_the_lease_of_the_sends() {
        let clock = QuorumClock::default();
        let t0 = Instant::now();
        assert!(!clock.fresh(1, &voters(&[1, 2, 3]), t0, LEASE), "nothing accepted yet");
        clock.accepted(2, t0);
        assert!(clock.fresh(1, &voters(&[1, 2, 3]), t0 + LEASE / 2, LEASE));
        assert!(!clock.fresh(1, &voters(&[1, 2, 3]), t0 + LEASE, LEASE), "a lease after the send");
        assert!(!clock.fresh(1, &voters(&[1, 2, 3]), t0 + Duration::from_secs(2), LEASE), "after a pause");
        // An older send answered late does not move the newest one back.
        clock.accepted(2, t0 + LEASE);
        clock.accepted(2, t0);
        assert!(clock.fresh(1, &voters(&[1, 2, 3]), t0 + LEASE + LEASE / 2, LEASE));
    }

    /// G16: a majority of voters, of each configuration of a joint membership; a learner's
    /// acceptance counts for nothing.
    #[test]
    fn a_quorum_is_a_majority_of_every_configuration() {
        let clock = QuorumClock::default();
        let t0 = Instant::now();
        clock.accepted(2, t0);
        clock.accepted(9, t0);
        assert!(clock.fresh(1, &voters(&[1, 2, 3]), t0, LEASE));
        assert!(!clock.fresh(1, &voters(&[1, 2, 3, 4, 5]), t0, LEASE), "two of five");
        clock.accepted(3, t0);
        assert!(clock.fresh(1, &voters(&[1, 2, 3, 4, 5]), t0, LEASE));
        let joint = vec![[1, 2, 3].into_iter().collect(), [1, 4, 5].into_iter().collect()];
        assert!(!clock.fresh(1, &joint, t0, LEASE), "no majority of the new configuration");
        clock.accepted(4, t0);
        assert!(clock.fresh(1, &joint, t0, LEASE));
        assert!(!clock.fresh(1, &[], t0, LEASE), "no configuration");
    }
}
