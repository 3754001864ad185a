//! Standing for election at once when a candidate that cannot win asks for this member's
//! vote.
//!
//! A leader killed while it replicates often leaves its followers' logs one entry apart. If
//! the follower behind calls the election first, the one ahead refuses it (its log is
//! longer), but the candidate's new term still stands in its way: openraft's next election
//! here would be in that same term, which the candidate already voted itself, so this member
//! waits a whole election timeout more (0.5–0.75 s by default) before a term above it.
//! Members' logs measured in leader kills after writing showed exactly that.
//!
//! So a follower that refuses a vote because its own log is longer, and has not heard from a
//! leader within openraft's leader lease, stands itself at once, and at a term above the
//! candidate's. Safety is openraft's, unchanged: any member may stand at any time. What must
//! not happen is a live leader deposed, and it is not: a follower still hearing from its
//! leader (within the lease) never stands here, a leader ignores the trigger, and it stands only in a group of at most three voters, where the refused
//! candidate cannot have won without this member's vote (with the old leader gone). In a
//! larger group the candidate may win with the others' votes, and a member standing above it
//! before its first append arrives would depose it; there openraft's own timer decides, as
//! without this module. A candidate in this member's own term stands in its way only as a tie
//! (both candidates, neither able to win); one that voted for another member in that term, or
//! knows its leader, leaves it alone, and a request below its term is stale.

use super::types::{NodeId, Raft, TypeConfig};
use openraft::async_runtime::WatchReceiver;
use openraft::raft::{VoteRequest, VoteResponse};
use openraft::Instant as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// When this member last accepted entries or a heartbeat from a leader (see [`Standing`]).
pub(super) type Heard = Arc<Mutex<Option<Instant>>>;

/// Elections started at once at most, back to back, to reach a term above a candidate's: a
/// candidate further ahead than that has been standing alone for a while and will give up.
const MAX_TERMS_AHEAD: u64 = 3;

pub(crate) struct Standing {
    /// openraft's leader lease (`election_timeout_max`).
    lease: Duration,
    /// When this member last accepted entries or a heartbeat from a leader, set once the
    /// append is answered: it can lag openraft's own record (an answer held back while a
    /// snapshot is installed), so a decision to stand checks that record too.
    heard: Heard,
    /// Elections triggered here and not yet all started: two candidates refused at once
    /// start one series, not two.
    running: Arc<AtomicBool>,
}

impl Standing {
    pub(crate) fn new(lease: Duration) -> Standing {
        Standing { lease, heard: Heard::default(), running: Arc::default() }
    }

    /// An append from the leader was accepted.
    pub(crate) fn heard_leader(&self) {
        *self.heard.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// When this member last heard from a leader, for [`super::silence`].
    pub(crate) fn heard(&self) -> Heard {
        self.heard.clone()
    }

    /// Elections this member runs now, so that a watcher does not start a second series.
    pub(crate) fn running(&self) -> Arc<AtomicBool> {
        self.running.clone()
    }

    /// After answering `request` with `response`: stands if it should (see the module).
    pub(crate) fn after_vote(
        &self,
        raft: &Raft,
        request: &VoteRequest<TypeConfig>,
        response: &VoteResponse<TypeConfig>,
    ) {
        let heard = *self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        let lease_over = heard.is_none_or(|at| at.elapsed() > self.lease);
        let (me, voters) = {
            let metrics = raft.metrics();
            let metrics = metrics.borrow_watched();
            (metrics.id, metrics.membership_config.membership().voter_ids().count())
        };
        let elections = if voters <= 3 { elections_to_stand(me, request, response, lease_over) } else { 0 };
        if elections == 0 || self.running.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::info!(
            candidate = request.vote.leader_id.node_id,
            candidate_last = %super::types::shown(request.last_log_id),
            mine = %super::types::shown(response.last_log_id),
            elections,
            "refused a candidate whose log is behind this member's: standing at once"
        );
        let (raft, running, lease) = (raft.clone(), self.running.clone(), self.lease);
        tokio::spawn(async move {
            // `heard` may lag openraft's own record (an answer held back while a snapshot is
            // installed); the lease must be over by that record too, read in the core's order.
            let over =
                raft.with_raft_state(move |state| state.vote_last_modified().is_none_or(|at| at.elapsed() > lease));
            if !over.await.unwrap_or(false) {
                running.store(false, Ordering::Release);
                return;
            }
            for _ in 0..elections {
                // Each raises this member's term by one; only the last can win.
                if raft.trigger().elect(false).await.is_err() {
                    break;
                }
            }
            running.store(false, Ordering::Release);
        });
    }
}

/// How many elections, back to back, put this member in a term above the candidate of
/// `request` that it refused with `response`; 0: it should not stand.
pub(super) fn elections_to_stand(
    me: NodeId,
    request: &VoteRequest<TypeConfig>,
    response: &VoteResponse<TypeConfig>,
    lease_over: bool,
) -> u64 {
    let refused_for_its_log = !response.vote_granted && response.last_log_id > request.last_log_id;
    if !refused_for_its_log || !lease_over {
        return 0;
    }
    let candidate = request.vote.leader_id.term;
    let mine = response.vote.leader_id.term;
    if mine > candidate {
        // A stale request: this member's own next election is above it already.
        return 0;
    }
    if mine == candidate {
        // Both stand in that term, each with its own vote: neither can win it (the third
        // voter is the leader that died), and each would wait a whole election timeout for
        // the next. One election more ends the tie at once. Having voted for another member
        // in that term, or knowing its leader, this member leaves it alone.
        let own_candidacy = !response.vote.committed && response.vote.leader_id.node_id == me;
        return u64::from(own_candidacy);
    }
    // Our next election is in `mine + 1`; at the candidate's term it loses to the candidate's
    // own vote, so one more.
    let elections = candidate - mine + 1;
    if elections > MAX_TERMS_AHEAD {
        0
    } else {
        elections
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::types::{LeaderId, LogId, Vote};

    fn log(term: u64, index: u64) -> Option<LogId> {
        Some(LogId::new(LeaderId { term, node_id: 1 }, index))
    }

    fn request(term: u64, candidate: NodeId, last: u64) -> VoteRequest<TypeConfig> {
        VoteRequest::new(Vote::new(term, candidate), log(2, last))
    }

    fn refusal(term: u64, leader: NodeId, last: u64) -> VoteResponse<TypeConfig> {
        VoteResponse::new(Vote::new_committed(term, leader), log(2, last), false)
    }

    /// As in a kill measured: the follower one entry behind stands in term 3; the one ahead
    /// (still in term 2) needs terms 3 and 4 to be elected, and three elections from term 2
    /// to pass a candidate in term 4.
    #[test]
    fn a_member_ahead_of_the_candidate_stands_above_its_term_once_the_lease_is_over() {
        assert_eq!(elections_to_stand(2, &request(3, 3, 25828), &refusal(2, 1, 25829), true), 2);
        assert_eq!(elections_to_stand(2, &request(4, 3, 25828), &refusal(2, 1, 25829), true), 3);
    }

    #[test]
    fn it_does_not_stand_while_it_hears_its_leader_or_when_the_candidate_could_win() {
        assert_eq!(elections_to_stand(2, &request(3, 3, 25828), &refusal(2, 1, 25829), false), 0, "within the lease");
        assert_eq!(elections_to_stand(2, &request(3, 3, 25829), &refusal(2, 1, 25829), true), 0, "logs equal");
        let granted = VoteResponse::new(Vote::new(3, 3), log(2, 25829), true);
        assert_eq!(elections_to_stand(2, &request(3, 3, 25830), &granted, true), 0, "granted");
        assert_eq!(elections_to_stand(2, &request(9, 3, 25828), &refusal(2, 1, 25829), true), 0, "too far ahead");
        assert_eq!(elections_to_stand(2, &request(3, 3, 25828), &refusal(4, 2, 25829), true), 0, "a stale request");
        assert_eq!(elections_to_stand(2, &request(3, 3, 25828), &refusal(3, 2, 25829), true), 0, "knows its leader");
        let voted_for = |id| VoteResponse::new(Vote::new(3, id), log(2, 25829), false);
        assert_eq!(elections_to_stand(2, &request(3, 3, 25828), &voted_for(1), true), 0, "voted for another");
        assert_eq!(elections_to_stand(2, &request(3, 3, 25828), &voted_for(2), true), 1, "a tie of two candidates");
    }
}
