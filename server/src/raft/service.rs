//! What a member does with its peers' requests: Raft's own messages go to openraft; a
//! forwarded batch, a read index and a membership change are the leader's to do; touches
//! keep the sessions of clients connected elsewhere alive in the leader's deadlines.

use super::membership;
use super::proposer::Chunks;
use super::quorum::QuorumClock;
use super::route::read_index_here;
use super::standing::Standing;
use super::types::{NodeId, Raft};
use crate::command::{Applied, Command};
use crate::local::Local;
use crate::log::Rejected;
use crate::peer::{ForwardError, PeerRequest, PeerResponse, PeerService};
use openraft::raft::AppendEntriesResponse;
use std::sync::Arc;

pub struct Member {
    pub raft: Raft,
    pub local: Arc<Local>,
    pub reports: membership::AppliedReports,
    /// Forwarded batches join this member's own entries while it leads.
    pub chunks: Chunks,
    pub standing: Standing,
    /// When a quorum last accepted this member's appends: the touch lease.
    pub quorum: Arc<QuorumClock>,
}

impl PeerService for Member {
    async fn handle(&self, from: NodeId, request: PeerRequest) -> PeerResponse {
        match request {
            PeerRequest::AppendEntries(rpc) => {
                let answer = self.raft.append_entries(rpc).await;
                if answer.as_ref().is_ok_and(|r| !matches!(r, AppendEntriesResponse::HigherVote(_))) {
                    self.standing.heard_leader();
                }
                PeerResponse::AppendEntries(answer)
            }
            PeerRequest::Vote(rpc) => {
                let answer = self.raft.vote(rpc.clone()).await;
                if let Ok(response) = &answer {
                    self.standing.after_vote(&self.raft, &rpc, response);
                }
                PeerResponse::Vote(answer)
            }
            PeerRequest::InstallSnapshot(rpc) => {
                // openraft renews its lease on a snapshot's chunks; counting every accepted chunk
                // keeps this member's record close to openraft's (a decision to stand still
                // checks openraft's own, see `standing` and `silence`).
                let leader = rpc.vote;
                let answer = self.raft.install_snapshot(rpc).await;
                if answer.as_ref().is_ok_and(|r| r.vote == leader) {
                    self.standing.heard_leader();
                }
                PeerResponse::InstallSnapshot(answer)
            }
            PeerRequest::Forward(batch) => {
                tracing::trace!(from, commands = batch.len(), "forwarded batch");
                PeerResponse::Forward(self.forwarded(batch).await)
            }
            PeerRequest::ReadIndex => PeerResponse::ReadIndex(read_index_here(&self.raft).await),
            PeerRequest::Touch { sessions, applied } => {
                if let Some(applied) = applied {
                    self.reports.record(from, applied);
                }
                PeerResponse::Touch(self.touch(sessions))
            }
            PeerRequest::Admin(admin) => PeerResponse::Admin(membership::run(&self.raft, &self.reports, admin).await),
        }
    }
}

impl Member {
    /// Commits a follower's batch as a chunk of this member's next entry
    /// ([`super::proposer`]), if this member leads.
    async fn forwarded(&self, batch: Vec<Command>) -> Result<(u64, Vec<Applied>), ForwardError> {
        let (me, leader) = {
            let metrics = self.raft.metrics();
            let m = metrics.borrow();
            (m.id, m.current_leader)
        };
        if leader != Some(me) {
            return Err(ForwardError::NotLeader(leader));
        }
        self.chunks.commit(batch).await.map_err(|rejected| match rejected {
            // Certainly not logged: the follower may send it to the next leader.
            Rejected::NotApplied(_) => ForwardError::NotLeader(None),
            Rejected::Unknown(why) => ForwardError::Unknown(why),
            Rejected::Stopped => ForwardError::Unknown("the leader's log stopped".into()),
        })
    }

    /// Refreshes the deadlines of sessions whose clients another member heard from.
    fn touch(&self, sessions: Vec<ward_proto::SessionId>) -> Result<Vec<ward_proto::SessionId>, ForwardError> {
        // R1: acknowledged only by a leader that is ready (every earlier entry applied,
        // deadlines restarted) and still holds its lease.
        if !self.raft.metrics().borrow().state.is_leader() {
            return Err(ForwardError::NotLeader(self.raft.metrics().borrow().current_leader));
        }
        if !self.local.sessions.is_sweeping() || !super::contact::lease_fresh(&self.raft, &self.quorum) {
            return Err(ForwardError::NotLeader(None));
        }
        Ok(sessions.into_iter().filter(|s| !self.local.sessions.touch(*s)).collect())
    }
}
