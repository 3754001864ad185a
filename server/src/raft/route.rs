//! Where a batch of commands goes: into Raft here when this member leads, otherwise to the
//! leader over the peer link. Either way the batch's replies are released only once this
//! member has applied it, so per-session order (G2) and events before replies (G6) hold on
//! every member, not only on the leader.
//!
//! The failure of each path is typed ([`Rejected`]): "not applied" (no leader yet, or the
//! leader refused before logging it: the batch is tried again at the next leader, within the
//! deadline) against "unknown" (sent, and no answer came: the caller must not claim either
//! outcome).

use super::batch::{Batch, Replies};
use super::membership::{self, AppliedReports};
use super::transfer::HandingOver;
use super::types::{NodeId, Raft, TypeConfig};
use crate::command::{Applied, Command};
use crate::peer::{AdminReply, AdminRequest, Channel, ForwardError, PeerError, PeerRequest, PeerResponse, Peers};
use crate::replication::Rejected;
use openraft::async_runtime::WatchReceiver;
use openraft::error::{ClientWriteError, LinearizableReadError, RaftError};
use openraft::raft::ReadPolicy;
use openraft::Instant as _;
use openraft::LinearizerOption;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a batch may wait for a leader (an election) before it is refused as not applied.
const LEADER_WAIT: Duration = Duration::from_secs(6);
/// How long the leader may take to commit a batch before its outcome is called unknown.
pub(crate) const COMMIT_TIMEOUT: Duration = Duration::from_secs(10);
/// A new member is caught up before it votes, perhaps from a snapshot.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest pause before asking again after "not the leader", so a member that has not yet
/// learned of a new term does not spin; it ends as soon as this member learns of another
/// leader ([`Route::pause_unless_moved`]).
const RETRY_PAUSE: Duration = Duration::from_millis(50);
/// How often a member that leads but does not take writes yet (handing over, or newly
/// elected and not yet acknowledged by a quorum, which openraft's metrics may not announce)
/// looks again: a planned restart's writes wait this long at most for it.
const LOOK_AGAIN: Duration = Duration::from_millis(2);

/// The two ways to the log.
#[derive(Clone)]
pub(crate) struct Route {
    pub raft: Raft,
    pub peers: Arc<Peers>,
    pub me: NodeId,
    /// Set while this member hands its leadership over: it is then no longer the leader to
    /// write to, and the next is awaited.
    pub handing: HandingOver,
    /// How this member, leading, confirms that it still leads before it names a read index.
    pub reads: Reads,
}

/// How a leader confirms that it still leads before it names a read index (`sync`, a fence
/// check, a backup). docs/guarantees.md, "Lease reads", has the argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reads {
    /// A heartbeat round to a quorum sent after the request (Raft's ReadIndex): safe whatever
    /// the clocks do.
    Index,
    /// A quorum acknowledgement of an append or heartbeat sent within this long is proof
    /// enough (`--lease-read`): no round trip, if the members' clocks keep time within a
    /// bound.
    Lease(Duration),
}

impl Route {
    /// Whether this member leads, as far as it knows, and takes writes now (see
    /// `writable_here`).
    pub(crate) fn leads_here(&self) -> bool {
        self.writable_here(&self.raft.metrics().borrow_watched())
    }

    /// Whether openraft takes a write here now: this member leads, is not handing the
    /// leadership over, and holds its lease (a quorum acknowledged it within
    /// `election_timeout_max`). A leader without the lease refuses writes before logging them
    /// ("forward to the leader"): a new leader elected by a transfer does until the others'
    /// first acknowledgement, and a write handed to it then would fail for nothing. Until
    /// then writes wait in [`Route::leader`] as for an election.
    fn writable_here(&self, m: &openraft::RaftMetrics<TypeConfig>) -> bool {
        if m.current_leader != Some(self.me) || self.handing.is_set() {
            return false;
        }
        let lease = Duration::from_millis(self.raft.config().election_timeout_max);
        m.membership_config.membership().voter_ids().eq([self.me])
            || m.last_quorum_acked.as_ref().is_some_and(|at| at.elapsed() < lease)
    }

    /// The leader this member knows of and its peer address, waiting (until `deadline`) for
    /// one to be elected.
    async fn leader(&self, deadline: Instant) -> Result<(NodeId, String), Rejected> {
        let mut metrics = self.raft.metrics();
        loop {
            {
                let m = metrics.borrow_watched();
                let leader = m.current_leader.filter(|l| *l != self.me || self.writable_here(&m));
                if let Some(leader) = leader {
                    let addr = m.membership_config.membership().get_node(&leader).map(|n| n.addr.clone());
                    if let Some(addr) = addr {
                        return Ok((leader, addr));
                    }
                }
            }
            // While handing over, this member's leadership may also end without a change of
            // metrics (the transfer failed), and a new leader's first quorum acknowledgement
            // is not announced: look again soon then. A leader whose lease ran out (cut off
            // from its quorum) is not about to take writes: every waiter need not look often.
            let poll = {
                let m = metrics.borrow_watched();
                let soon =
                    m.current_leader == Some(self.me) && (self.handing.is_set() || m.last_quorum_acked.is_none());
                if soon {
                    LOOK_AGAIN
                } else {
                    RETRY_PAUSE
                }
            };
            let changed = tokio::time::timeout(poll, metrics.changed());
            match tokio::time::timeout_at(deadline, changed).await {
                Ok(Ok(Ok(()))) | Ok(Err(_)) => {}
                Ok(Ok(Err(_))) => return Err(Rejected::Stopped),
                Err(_) => return Err(Rejected::NotApplied("no leader elected".into())),
            }
        }
    }

    /// Calls `leader` on the Client channel, giving up (as `Lost`: the request may have
    /// arrived) as soon as this member learns that `leader` no longer leads. A leader cut off
    /// by a partition answers nothing, and waiting out the whole timeout would hold up every
    /// write of the sessions in this batch behind it (`super::forwards`).
    async fn call_leader(
        &self,
        leader: NodeId,
        addr: &str,
        request: PeerRequest,
        timeout: Duration,
    ) -> Result<PeerResponse, PeerError> {
        tokio::select! {
            answer = self.peers.call(leader, addr, Channel::Client, request, timeout) => answer,
            () = self.no_longer_leads(leader) => Err(PeerError::Lost(leader, "it stopped leading while it had the request".into())),
        }
    }

    /// Commits `batch` and waits until this member has applied it.
    pub(crate) async fn commit(&self, batch: Vec<Command>) -> Result<Vec<Applied>, Rejected> {
        let deadline = Instant::now() + LEADER_WAIT;
        loop {
            let (leader, addr) = self.leader(deadline).await?;
            if leader == self.me {
                // Moved, not cloned: on the hot path of a single server a copy of every batch
                // would cost. A refusal before logging fails the batch as not applied.
                return write_here(&self.raft, batch).await.map(|(_, applied)| applied).map_err(|e| match e {
                    ForwardError::NotLeader(_) => Rejected::NotApplied("leadership moved".into()),
                    ForwardError::Unknown(why) | ForwardError::Refused(why) => Rejected::Unknown(why),
                });
            }
            let request = PeerRequest::Forward(batch.clone());
            let answer = self.call_leader(leader, &addr, request, COMMIT_TIMEOUT).await;
            match answer {
                Ok(PeerResponse::Forward(Ok((index, applied)))) => {
                    self.applied_here(index).await?;
                    return Ok(applied);
                }
                Ok(PeerResponse::Forward(Err(ForwardError::NotLeader(_)))) | Err(PeerError::Unreachable(..)) => {
                    if Instant::now() + RETRY_PAUSE >= deadline {
                        return Err(Rejected::NotApplied(format!("member {leader} does not lead and no other does")));
                    }
                    self.pause_unless_moved(leader).await;
                }
                Ok(PeerResponse::Forward(Err(e))) => return Err(Rejected::Unknown(e.to_string())),
                Ok(_) => {
                    return Err(Rejected::Unknown(format!("member {leader} answered a forward with another reply")))
                }
                Err(e @ PeerError::Lost(..)) => return Err(Rejected::Unknown(e.to_string())),
            }
        }
    }

    /// After `leader` answered "not the leader" (or could not be reached): waits until this
    /// member knows of another leader, or no leader, but at most [`RETRY_PAUSE`]. A leader
    /// handing over answers so until its successor leads, which the others learn within a
    /// round trip: a fixed pause would hold every write of a planned restart that long.
    async fn pause_unless_moved(&self, leader: NodeId) {
        let _ = tokio::time::timeout(RETRY_PAUSE, self.no_longer_leads(leader)).await;
    }

    /// Returns once this member knows `leader` no longer leads (or Raft stopped).
    async fn no_longer_leads(&self, leader: NodeId) {
        let mut metrics = self.raft.metrics();
        loop {
            if metrics.borrow_watched().current_leader != Some(leader) {
                return;
            }
            if metrics.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits until this member has applied log index `index`.
    async fn applied_here(&self, index: u64) -> Result<(), Rejected> {
        self.raft
            .wait(Some(COMMIT_TIMEOUT))
            .applied_index_at_least(Some(index), "apply a forwarded batch")
            .await
            .map(|_| ())
            .map_err(|e| Rejected::Unknown(format!("committed, but not applied here in time: {e}")))
    }

    /// A linearizable point: the leader confirms with a quorum that it still leads and names
    /// its commit index; this member waits until it has applied that far.
    pub(crate) async fn barrier(&self) -> Result<(), Rejected> {
        let deadline = Instant::now() + LEADER_WAIT;
        loop {
            let (leader, addr) = self.leader(deadline).await?;
            let index = if leader == self.me {
                read_index_here(&self.raft, self.reads, &self.handing).await
            } else {
                match self.call_leader(leader, &addr, PeerRequest::ReadIndex, COMMIT_TIMEOUT).await {
                    Ok(PeerResponse::ReadIndex(r)) => r,
                    Ok(_) => Err(ForwardError::Unknown("wrong reply to a read index".into())),
                    // A read index asked again changes nothing: retry on any failure.
                    Err(_) => Err(ForwardError::NotLeader(None)),
                }
            };
            match index {
                Ok(index) => return self.applied_here(index).await,
                Err(ForwardError::NotLeader(_)) if Instant::now() + RETRY_PAUSE < deadline => {
                    self.pause_unless_moved(leader).await;
                }
                Err(e) => return Err(Rejected::NotApplied(e.to_string())),
            }
        }
    }
}

impl Route {
    /// Runs a membership request on the leader (here, or forwarded), asking again after a
    /// leader change.
    pub(crate) async fn admin(&self, request: AdminRequest, reports: &AppliedReports) -> Result<AdminReply, Rejected> {
        let deadline = Instant::now() + LEADER_WAIT;
        loop {
            let (leader, addr) = self.leader(deadline).await?;
            let answer = if leader == self.me {
                membership::run(&self.raft, reports, (&self.handing, &self.peers.identity().levels), request.clone())
                    .await
            } else {
                let call = PeerRequest::Admin(request.clone());
                // Listing members is quick; a membership change waits for a learner to catch up.
                let limit = if request == AdminRequest::Members { COMMIT_TIMEOUT } else { ADMIN_TIMEOUT };
                let answer = match request {
                    // The leader stops leading by design; its answer says who leads now.
                    AdminRequest::TransferLeader { .. } => {
                        self.peers.call(leader, &addr, Channel::Client, call, limit).await
                    }
                    _ => self.call_leader(leader, &addr, call, limit).await,
                };
                match answer {
                    Ok(PeerResponse::Admin(r)) => r,
                    Ok(_) => Err(ForwardError::Unknown("wrong reply to a membership request".into())),
                    Err(PeerError::Unreachable(..)) => Err(ForwardError::NotLeader(None)),
                    // Listing members changes nothing: ask again.
                    Err(PeerError::Lost(..)) if request == AdminRequest::Members => Err(ForwardError::NotLeader(None)),
                    Err(e) => Err(ForwardError::Unknown(e.to_string())),
                }
            };
            match answer {
                Ok(reply) => return Ok(reply),
                Err(ForwardError::NotLeader(_)) if Instant::now() + RETRY_PAUSE < deadline => {
                    self.pause_unless_moved(leader).await;
                }
                Err(ForwardError::Unknown(why)) => return Err(Rejected::Unknown(why)),
                Err(e) => return Err(Rejected::NotApplied(e.to_string())),
            }
        }
    }
}

/// A write openraft answered "forward to the leader" after its entry was logged here: a new
/// leader's log removed it from this member's, but a copy on another member may still be
/// committed, so its outcome is unknown (never "not applied", which invites a resend).
pub(crate) fn removed() -> Rejected {
    Rejected::Unknown(REMOVED.into())
}

const REMOVED: &str = "logged, then removed from this member's log by a new leader's: it may still be committed";

/// Proposes `batch` as one entry on this member, which must lead. Returns the entry's index
/// and each command's result. Used for a batch whose leader turned out to be this member
/// on its way there, and for expiries (forwarded batches join the proposer's entries).
pub(crate) async fn write_here(raft: &Raft, batch: Vec<Command>) -> Result<(u64, Vec<Applied>), ForwardError> {
    // No senders: every result comes back in openraft's answer. Kept to learn whether the
    // entry was logged (see `Replies`).
    let replies = Arc::new(Replies::default());
    let entry = Batch::answered(batch, &replies);
    match tokio::time::timeout(COMMIT_TIMEOUT, raft.client_write(entry)).await {
        Ok(Ok(response)) => Ok((response.log_id.index, response.data)),
        Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_)))) if replies.logged() => {
            Err(ForwardError::Unknown(REMOVED.into()))
        }
        Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => Err(ForwardError::NotLeader(f.leader_id)),
        Ok(Err(e)) => Err(ForwardError::Unknown(e.to_string())),
        // openraft keeps a deposed leader's pending writes waiting (#973): bound them.
        Err(_) => Err(ForwardError::Unknown(format!("not committed within {COMMIT_TIMEOUT:?}"))),
    }
}

/// The read index on this member, which must lead: `get_read_log_id` confirms leadership
/// with a quorum of heartbeats.
pub(crate) async fn read_index_here(raft: &Raft, reads: Reads, handing: &HandingOver) -> Result<u64, ForwardError> {
    let option = match reads {
        Reads::Index => LinearizerOption::from(ReadPolicy::ReadIndex),
        // A leader handing its leadership over may be replaced before its lease ends (the
        // voters do not wait it out for a transfer): it names no read index from its lease.
        Reads::Lease(_) if handing.is_set() => return Err(ForwardError::NotLeader(None)),
        // An acknowledgement older than the lease: a fresh round, as ReadIndex.
        Reads::Lease(age) => LinearizerOption::new(Some(age), true),
    };
    match tokio::time::timeout(COMMIT_TIMEOUT, raft.get_read_log_id(option)).await {
        Ok(Ok((read, _applied))) => Ok(read.log_id().index),
        Ok(Err(RaftError::APIError(LinearizableReadError::ForwardToLeader(f)))) => {
            Err(ForwardError::NotLeader(f.leader_id))
        }
        // No quorum answered: perhaps deposed; the caller asks again.
        Ok(Err(RaftError::APIError(LinearizableReadError::QuorumNotEnough(_)))) => Err(ForwardError::NotLeader(None)),
        Ok(Err(e)) => Err(ForwardError::Unknown(e.to_string())),
        Err(_) => Err(ForwardError::Unknown(format!("leadership not confirmed within {COMMIT_TIMEOUT:?}"))),
    }
}
