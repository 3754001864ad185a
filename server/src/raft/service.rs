//! What a member does with its peers' requests: Raft's own messages go to openraft; a
//! forwarded batch, a read index and a membership change are the leader's to do; touches
//! keep the sessions of clients connected elsewhere alive in the leader's deadlines.

use super::gone_leader::{self, GoneLeader};
use super::membership;
use super::proposer::Chunks;
use super::quorum::QuorumClock;
use super::route::read_index_here;
use super::snapshot_receive::SnapshotReceiver;
use super::standing::Standing;
use super::types::{NodeId, Raft};
use crate::command::{Applied, Command};
use crate::local::Local;
use crate::peer::{ForwardError, PeerRequest, PeerResponse, PeerService, Peers};
use crate::replication::Rejected;
use openraft::async_runtime::WatchReceiver;
use openraft::raft::AppendEntriesResponse;
use std::sync::Arc;

pub(crate) struct Member {
    pub raft: Raft,
    pub local: Arc<Local>,
    pub reports: membership::AppliedReports,
    /// Forwarded batches join this member's own entries while it leads.
    pub chunks: Chunks,
    pub standing: Standing,
    /// When a quorum last accepted this member's appends: the touch lease.
    pub quorum: Arc<QuorumClock>,
    /// Set while this member hands its leadership over.
    pub handing: super::transfer::HandingOver,
    /// A snapshot being received from the leader, a chunk at a time.
    pub snapshots: tokio::sync::Mutex<SnapshotReceiver>,
    /// A leader this member found gone, whose lease it waives (`gone_leader`), unless this
    /// ensemble reads by lease.
    pub gone: Arc<GoneLeader>,
    /// How this member, leading, names a read index.
    pub reads: super::route::Reads,
    pub peers: Arc<Peers>,
}

impl PeerService for Member {
    async fn handle(&self, from: NodeId, request: PeerRequest) -> PeerResponse {
        match request {
            PeerRequest::AppendEntries(rpc) => {
                let answer = self.raft.append_entries(rpc).await;
                if answer.as_ref().is_ok_and(|r| !matches!(r, AppendEntriesResponse::HigherVote(_))) {
                    self.standing.heard_leader();
                    self.gone.heard_leader();
                }
                PeerResponse::AppendEntries(answer)
            }
            PeerRequest::Vote(mut rpc) => {
                // A voter that found its leader's port refusing connections has no live
                // leader to keep the lease for (G16 does not rest on it: `gone_leader`).
                let current = self.raft.server_metrics().borrow_watched().vote;
                // With lease reads, an old leader alive behind a refusing port may still
                // answer reads from its lease: the lease is never waived then.
                let lease_reads = matches!(self.reads, super::route::Reads::Lease(_));
                if !rpc.leadership_transfer && !lease_reads && self.gone.waives(&current) {
                    tracing::info!(from, vote = %rpc.vote, "the leader is gone here: its lease is waived for this vote");
                    rpc.leadership_transfer = true;
                }
                let answer = self.raft.vote(rpc.clone()).await;
                if let Ok(response) = &answer {
                    self.standing.after_vote(&self.raft, &rpc, response);
                }
                PeerResponse::Vote(answer)
            }
            PeerRequest::PreVote(rpc) => PeerResponse::PreVote(self.raft.pre_vote(rpc).await),
            PeerRequest::SnapshotChunk(chunk) => {
                // Every accepted chunk from the leader counts as hearing from it, as an
                // append does (see `standing` and `silence`).
                let leader = chunk.vote;
                let answer = self.snapshots.lock().await.chunk(&self.raft, chunk).await;
                if answer.as_ref().is_ok_and(|vote| *vote == leader) {
                    self.standing.heard_leader();
                }
                PeerResponse::SnapshotChunk(answer)
            }
            PeerRequest::TransferLeader(request) => {
                let answer = self.raft.handle_transfer_leader(request).await.map_err(|fatal| fatal.to_string());
                PeerResponse::TransferLeader(answer)
            }
            PeerRequest::Forward(batch) => {
                tracing::trace!(from, commands = batch.len(), "forwarded batch");
                PeerResponse::Forward(self.forwarded(batch).await)
            }
            PeerRequest::ReadIndex => {
                PeerResponse::ReadIndex(read_index_here(&self.raft, self.reads, &self.handing).await)
            }
            PeerRequest::Touch { sessions, applied } => {
                if let Some(applied) = applied {
                    self.reports.record(from, applied);
                }
                PeerResponse::Touch(self.touch(sessions))
            }
            PeerRequest::LeaderGone { vote, last_log } => {
                let asked = (from, vote, last_log);
                PeerResponse::LeaderGone(gone_leader::answer(&self.raft, &self.peers, &self.gone, asked).await)
            }
            PeerRequest::Admin(admin) => PeerResponse::Admin(
                membership::run(&self.raft, &self.reports, (&self.handing, &self.peers.identity().levels), admin).await,
            ),
        }
    }
}

impl Member {
    /// Commits a follower's batch as a chunk of this member's next entry
    /// ([`super::proposer`]), if this member leads.
    async fn forwarded(&self, batch: Vec<Command>) -> Result<(u64, Vec<Applied>), ForwardError> {
        let (me, leader) = {
            let metrics = self.raft.metrics();
            let m = metrics.borrow_watched();
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
        if !self.raft.metrics().borrow_watched().state.is_leader() {
            return Err(ForwardError::NotLeader(self.raft.metrics().borrow_watched().current_leader));
        }
        if !self.local.ready.is_ready() || !super::contact::lease_fresh(&self.raft, &self.quorum, &self.handing) {
            return Err(ForwardError::NotLeader(None));
        }
        Ok(sessions.into_iter().filter(|s| !self.local.sessions.touch(*s)).collect())
    }
}
