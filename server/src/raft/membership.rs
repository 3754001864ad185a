//! Membership, run by the leader: the member list, and changes to it. A new member joins as
//! a learner, is caught up (from a snapshot if the log it needs is gone) and only then
//! becomes a voter (an observer stays a learner), so a slow newcomer never counts toward a quorum it cannot serve; a
//! removed member (the leader included) leaves the voters and the group.

use super::transfer::HandingOver;
use super::types::{NodeId, Raft, TypeConfig};
use crate::peer::level::{self, Levels};
use crate::peer::{AdminReply, AdminRequest, ForwardError};
use openraft::async_runtime::WatchReceiver;
use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, ChangeMembers};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use ward_proto::{Contact, MemberInfo, MemberList, MemberRole, MemberStatus};

/// The applied index each member last reported with its touches.
#[derive(Clone, Default)]
pub(crate) struct AppliedReports(Arc<Mutex<HashMap<NodeId, u64>>>);

impl AppliedReports {
    pub(crate) fn record(&self, member: NodeId, applied: u64) {
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
/// That is harmless: openraft computes the new voters from the current ones
/// (`Membership::change`: the union for `AddVoterIds`, the difference for `RemoveVoters`), so
/// a second add or removal of the same member leaves the membership as the first made it, and
/// `add_learner` of a node already present keeps its entry.
pub(crate) async fn run(
    raft: &Raft,
    reports: &AppliedReports,
    (handing, levels): (&HandingOver, &Levels),
    request: AdminRequest,
) -> Result<AdminReply, ForwardError> {
    match request {
        AdminRequest::AddMember { id, addr } => {
            // `blocking`: returns once the learner has caught up with the leader's log.
            raft.add_learner(id, BasicNode::new(addr), true).await.map_err(refusal)?;
            raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false).await.map_err(refusal)?;
        }
        AdminRequest::AddObserver { id, addr } => {
            let m = raft.metrics().borrow_watched().clone();
            let members = m.membership_config.membership().nodes().map(|(id, _)| *id).collect::<Vec<_>>();
            if let Some(why) = levels.of(m.id, members).short_of(level::OBSERVERS) {
                tracing::warn!(observer = id, %why, "adding an observer refused");
                return Err(ForwardError::Refused(format!("adding an observer {why}")));
            }
            // A learner that is never promoted: it counts toward no quorum.
            raft.add_learner(id, BasicNode::new(addr), true).await.map_err(refusal)?;
        }
        AdminRequest::RemoveMember { id } => {
            raft.change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([id])), false).await.map_err(refusal)?;
        }
        AdminRequest::Members => {
            let list = list_here(raft, reports, handing)?;
            return Ok(AdminReply::Members(list.members.into_iter().map(|m| m.info).collect()));
        }
        AdminRequest::TransferLeader { to } => {
            return super::transfer::hand_over(raft, handing, to, TRANSFER_WAIT).await.map(AdminReply::Leader);
        }
    }
    Ok(AdminReply::Done)
}

/// How long a transfer asked for by a client may take: an election at most, on a loaded
/// machine.
const TRANSFER_WAIT: Duration = Duration::from_secs(5);

/// The member list as this member, the leader, knows it, with whom it hears from. A member
/// it has not heard from within its lease gets no applied index and no lag: the last ones it
/// reported are not current.
pub(crate) fn list_here(
    raft: &Raft,
    reports: &AppliedReports,
    handing: &HandingOver,
) -> Result<MemberList, ForwardError> {
    let m = raft.metrics().borrow_watched().clone();
    let bound = Duration::from_millis(raft.config().election_timeout_max);
    let contacts = super::liveness::contacts(&m, bound).ok_or(ForwardError::NotLeader(m.current_leader))?;
    let membership = m.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let last = m.last_log_index.unwrap_or(0);
    let members = membership
        .nodes()
        .map(|(id, node)| {
            let matched = m.replication.as_ref().and_then(|r| r.get(id)).and_then(|l| l.map(|l| l.index));
            let contact = contacts.get(id).copied().unwrap_or(Contact::Unreachable { last_heard_ms: None });
            let (role, applied, lag) = if *id == m.id {
                (MemberRole::Leader, m.last_applied.map(|l| l.index), Some(0))
            } else {
                let role = if voters.contains(id) { MemberRole::Follower } else { MemberRole::Learner };
                match contact {
                    Contact::Unreachable { .. } => (role, None, None),
                    _ => (role, reports.get(*id), matched.map(|i| last.saturating_sub(i))),
                }
            };
            MemberStatus { info: MemberInfo { id: *id, addr: node.addr.clone(), role, applied, lag }, contact }
        })
        .collect();
    Ok(MemberList { members, leader: Some(m.id), handing_over_to: handing.target() })
}

/// The member list a leader gave a follower: the peer protocol's list carries no liveness,
/// which only the leader knows (a new question would be one the leaders of earlier releases
/// cannot read: docs/operations.md, "Upgrading").
pub(crate) fn forwarded(members: Vec<MemberInfo>) -> MemberList {
    let leader = members.iter().find(|m| m.role == MemberRole::Leader).map(|m| m.id);
    let members = members
        .into_iter()
        .map(|info| {
            let contact = if info.role == MemberRole::Leader { Contact::Leads } else { Contact::Unknown };
            MemberStatus { info, contact }
        })
        .collect();
    MemberList { members, leader, handing_over_to: None }
}

fn refusal(e: RaftError<TypeConfig, ClientWriteError<TypeConfig>>) -> ForwardError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => ForwardError::NotLeader(f.leader_id),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => ForwardError::Refused(e.to_string()),
        // Neither is asked for: no precondition is set, and the leader keeps its entries.
        RaftError::APIError(e @ ClientWriteError::LogEntryDiscarded(_))
        | RaftError::APIError(e @ ClientWriteError::PreconditionFailed(_)) => ForwardError::Unknown(e.to_string()),
        RaftError::Fatal(e) => ForwardError::Unknown(e.to_string()),
    }
}
