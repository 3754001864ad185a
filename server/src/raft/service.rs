//! What a member does with its peers' requests: Raft's own messages go to openraft; a
//! forwarded batch, a read index and a membership change are the leader's to do; touches
//! keep the sessions of clients connected elsewhere alive in the leader's deadlines.

use super::membership;
use super::route::{read_index_here, write_here};
use super::types::{NodeId, Raft};
use crate::local::Local;
use crate::peer::{ForwardError, PeerRequest, PeerResponse, PeerService};
use std::sync::Arc;

pub struct Member {
    pub raft: Raft,
    pub local: Arc<Local>,
    pub reports: membership::AppliedReports,
}

impl PeerService for Member {
    async fn handle(&self, from: NodeId, request: PeerRequest) -> PeerResponse {
        match request {
            PeerRequest::AppendEntries(rpc) => PeerResponse::AppendEntries(self.raft.append_entries(rpc).await),
            PeerRequest::Vote(rpc) => PeerResponse::Vote(self.raft.vote(rpc).await),
            PeerRequest::InstallSnapshot(rpc) => PeerResponse::InstallSnapshot(self.raft.install_snapshot(rpc).await),
            PeerRequest::Forward(batch) => {
                tracing::trace!(from, commands = batch.len(), "forwarded batch");
                PeerResponse::Forward(write_here(&self.raft, batch).await)
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
    /// Refreshes the deadlines of sessions whose clients another member heard from.
    fn touch(&self, sessions: Vec<ward_proto::SessionId>) -> Result<Vec<ward_proto::SessionId>, ForwardError> {
        // R1: acknowledged only by a leader that is ready (every earlier entry applied,
        // deadlines restarted) and still holds its lease.
        if !self.raft.metrics().borrow().state.is_leader() {
            return Err(ForwardError::NotLeader(self.raft.metrics().borrow().current_leader));
        }
        if !self.local.sessions.is_sweeping() || !super::contact::lease_fresh(&self.raft) {
            return Err(ForwardError::NotLeader(None));
        }
        Ok(sessions.into_iter().filter(|s| !self.local.sessions.touch(*s)).collect())
    }
}
