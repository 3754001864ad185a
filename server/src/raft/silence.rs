//! Standing for election once the leader has been silent for openraft's lease.
//!
//! openraft lets a follower of a known leader call an election only once the leader has
//! been silent for its lease (`election_timeout_max`) and then for a random election timeout
//! more (`handle_tick_election`). The lease is what keeps a new leader from being elected
//! while the old one may still acknowledge touches (G16); the timeout after it only spreads
//! the followers' candidacies apart, and costs every failover one to two election timeouts.
//!
//! So this member, a follower of a known leader, stands itself once that leader has been
//! silent for the lease, a heartbeat interval more (the other voters heard the leader at most
//! an interval later, and refuse every vote until their own lease is over), and a jitter of up
//! to half an election timeout, different on every member, so that two followers rarely stand
//! at once. If they do, both lose that term and openraft's own timer, unchanged, decides the
//! next. Safety stays openraft's: any member may stand at any time, and every voter still
//! refuses votes for its lease. It stands with a Pre-Vote round, so a member whose own link
//! to the leader broke, while the others still hear it, raises no term. This member stands sooner than openraft's timer would (which
//! adds at least `election_timeout_min` to the lease), but never within its own lease: the
//! decision is taken inside openraft's core, from openraft's own record of when it last heard
//! the leader, after every message that arrived before it (this member's `heard`, set when an
//! append is answered, can lag that record, e.g. while a snapshot is installed, and only
//! schedules the check). It stands once per silence: the next chance comes after it hears a
//! leader again.

use super::standing::Heard;
use super::types::{NodeId, Raft};
use openraft::async_runtime::WatchReceiver;
use openraft::Instant as _;
use openraft::ServerState;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long after the leader's last word this member stands: openraft's lease, one heartbeat
/// interval, and a jitter below `spread` drawn from `seed` (this member's id and the silence).
pub(super) fn wait_after(lease: Duration, heartbeat: Duration, spread: Duration, seed: u64) -> Duration {
    let spread_us = u64::try_from(spread.as_micros()).unwrap_or(u64::MAX).max(1);
    // A multiplicative hash: members and silences that differ by little land far apart.
    let jitter = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
    lease + heartbeat + Duration::from_micros(jitter % spread_us)
}

/// Whether to stand now, the wait over: still silent since `heard`, a voter following a leader.
pub(super) fn stands(silent: bool, state: ServerState, following: bool, voter: bool) -> bool {
    silent && state == ServerState::Follower && following && voter
}

/// Watches for the leader's silence until `cancel`; see the module.
pub(super) async fn watch(
    raft: Raft,
    heard: Heard,
    running: Arc<AtomicBool>,
    (lease, heartbeat, spread): (Duration, Duration, Duration),
    cancel: CancellationToken,
) {
    let me = raft.metrics().borrow_watched().id;
    let mut stood_for = None;
    loop {
        let last = *heard.lock().unwrap_or_else(PoisonError::into_inner);
        let due = match last {
            Some(at) if stood_for != Some(at) => {
                let seed = me ^ u64::from(at.elapsed().subsec_nanos()) << 32;
                Some(at + wait_after(lease, heartbeat, spread, seed))
            }
            // Nothing heard yet (openraft's own first election decides), or stood already.
            _ => None,
        };
        let wake = due.unwrap_or_else(|| Instant::now() + heartbeat.max(Duration::from_millis(10)));
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep_until(wake.into()) => {}
        }
        let (Some(at), Some(due)) = (last, due) else { continue };
        if *heard.lock().unwrap_or_else(PoisonError::into_inner) != Some(at) {
            continue;
        }
        stood_for = Some(at);
        if !silent_in_core(&raft, me, due - at).await || running.swap(true, Ordering::AcqRel) {
            continue;
        }
        tracing::info!(silent_ms = at.elapsed().as_millis(), "no word from the leader for its lease: standing");
        // Pre-Vote first: a member that only lost its own link to a leader the others still
        // follow raises no term, and does not depose that leader when the link is back.
        if let Err(error) = raft.trigger().elect(true).await {
            tracing::warn!(%error, "standing after the leader's silence");
        }
        running.store(false, Ordering::Release);
    }
}

/// Whether openraft's own record says this member should stand: a voter following a leader
/// it has not heard from for `wait`. Asked inside openraft's core, so after every message
/// that reached it first.
pub(super) async fn silent_in_core(raft: &Raft, me: NodeId, wait: Duration) -> bool {
    raft.with_raft_state(move |state| {
        let silent = state.vote_last_modified().is_some_and(|at| at.elapsed() >= wait);
        let voter = state.membership_state.effective().voter_ids().any(|id| id == me);
        stands(silent, state.server_state, state.vote_ref().is_committed(), voter)
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_the_lease_a_heartbeat_and_a_jitter_below_the_spread() {
        let (lease, beat, spread) =
            (Duration::from_millis(1000), Duration::from_millis(250), Duration::from_millis(250));
        let waits: Vec<Duration> = (0..1000u64).map(|seed| wait_after(lease, beat, spread, seed)).collect();
        assert!(waits.iter().all(|w| *w >= lease + beat && *w < lease + beat + spread));
        // Spread out: seeds a member apart land in many different tenths of the spread.
        let tenths: std::collections::BTreeSet<u128> =
            waits.iter().map(|w| (*w - lease - beat).as_micros() * 10 / spread.as_micros()).collect();
        assert_eq!(tenths.len(), 10);
    }

    #[test]
    fn only_a_silent_follower_of_a_known_leader_that_votes_stands() {
        assert!(stands(true, ServerState::Follower, true, true));
        assert!(!stands(false, ServerState::Follower, true, true), "heard its leader since");
        assert!(!stands(true, ServerState::Candidate, true, true), "an election is on");
        assert!(!stands(true, ServerState::Leader, true, true), "it leads");
        assert!(!stands(true, ServerState::Follower, false, true), "voted, no leader known: openraft's timer");
        assert!(!stands(true, ServerState::Learner, true, false), "a learner");
    }
}
