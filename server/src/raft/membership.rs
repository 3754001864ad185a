//! Membership, run by the leader: the member list, and changes to it. A new member joins as
//! a learner, is caught up (from a snapshot if the log it needs is gone) and only then
//! becomes a voter, so a slow newcomer never counts toward a quorum it cannot serve; a
//! removed member (the leader included) leaves the voters and the group.

use super::types::{NodeId, Raft};
use crate::peer::{AdminReply, AdminRequest, ForwardError};
use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, ChangeMembers};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use ward_proto::{MemberInfo, MemberRole};

/// The applied index each member last reported with its touches.
#[derive(Clone, Default)]
pub struct AppliedReports(Arc<Mutex<HashMap<NodeId, u64>>>);

impl AppliedReports {
    pub fn record(&self, member: NodeId, applied: u64) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(member, applied);
    }

    fn get(&self, member: NodeId) -> Option<u64> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(&member).copied()
    }
}

/// Does `request` on this member, which must lead.
///
/// A change that fails with an unknown outcome (openraft answers "forward to leader" also for
/// an entry a new leader removed after it was logged) may be sent again and applied twice.
/// That is harmless: openraft 0.9 computes the new voters from the current ones
/// (`Membership::change`: the union for `AddVoterIds`, the difference for `RemoveVoters`), so
/// a second add or removal of the same member leaves the membership as the first made it, and
/// `add_learner` of a node already present keeps its entry.
pub async fn run(raft: &Raft, reports: &AppliedReports, request: AdminRequest) -> Result<AdminReply, ForwardError> {
    match request {
        AdminRequest::AddMember { id, addr } => {
            // `blocking`: returns once the learner has caught up with the leader's log.
            raft.add_learner(id, BasicNode::new(addr), true).await.map_err(refusal)?;
            raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false).await.map_err(refusal)?;
        }
        AdminRequest::RemoveMember { id } => {
            raft.change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([id])), false).await.map_err(refusal)?;
        }
        AdminRequest::Members => return members_here(raft, reports).map(AdminReply::Members),
    }
    Ok(AdminReply::Done)
}

/// The member list as this member, the leader, knows it.
fn members_here(raft: &Raft, reports: &AppliedReports) -> Result<Vec<MemberInfo>, ForwardError> {
    let m = raft.metrics().borrow().clone();
    if m.current_leader != Some(m.id) {
        return Err(ForwardError::NotLeader(m.current_leader));
    }
    let membership = m.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let last = m.last_log_index.unwrap_or(0);
    let members = membership
        .nodes()
        .map(|(id, node)| {
            let matched = m.replication.as_ref().and_then(|r| r.get(id)).and_then(|l| l.map(|l| l.index));
            let (role, applied, lag) = if *id == m.id {
                (MemberRole::Leader, m.last_applied.map(|l| l.index), Some(0))
            } else {
                let role = if voters.contains(id) { MemberRole::Follower } else { MemberRole::Learner };
                (role, reports.get(*id), matched.map(|i| last.saturating_sub(i)))
            };
            MemberInfo { id: *id, addr: node.addr.clone(), role, applied, lag }
        })
        .collect();
    Ok(members)
}

fn refusal(e: RaftError<u64, ClientWriteError<u64, BasicNode>>) -> ForwardError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => ForwardError::NotLeader(f.leader_id),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => ForwardError::Refused(e.to_string()),
        RaftError::Fatal(e) => ForwardError::Unknown(e.to_string()),
    }
}
