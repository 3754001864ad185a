//! Membership changes, run on the leader: a new member joins as a learner, is caught up
//! (from a snapshot if the log it needs is gone) and only then becomes a voter, so a slow
//! newcomer never counts toward a quorum it cannot serve; a removed member (the leader
//! included) leaves the voters and the group.

use super::types::Raft;
use crate::peer::{AdminReply, AdminRequest, ForwardError};
use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, ChangeMembers};
use std::collections::BTreeSet;

pub async fn run(raft: &Raft, request: AdminRequest) -> Result<AdminReply, ForwardError> {
    match request {
        AdminRequest::AddMember { id, addr } => {
            // `blocking`: returns once the learner has caught up with the leader's log.
            raft.add_learner(id, BasicNode::new(addr), true).await.map_err(refusal)?;
            raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false).await.map_err(refusal)?;
        }
        AdminRequest::RemoveMember { id } => {
            raft.change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([id])), false).await.map_err(refusal)?;
        }
    }
    Ok(AdminReply::Done)
}

fn refusal(e: RaftError<u64, ClientWriteError<u64, BasicNode>>) -> ForwardError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => ForwardError::NotLeader(f.leader_id),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => ForwardError::Refused(e.to_string()),
        RaftError::Fatal(e) => ForwardError::Unknown(e.to_string()),
    }
}
