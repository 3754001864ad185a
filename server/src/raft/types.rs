//! The openraft type configuration: what a Raft entry carries and what applying it returns.
//!
//! An entry's payload is a *batch* of commands, not one command: group commit happens in
//! front of openraft (see [`super::proposer`]), so that one entry, one record and one
//! fdatasync carry many commands.
//!
//! The leader id is openraft's "advanced" one (a term and the node that led it), as in
//! openraft 0.9: log ids, votes and snapshot metadata keep the byte layout 0.9 wrote, so a
//! data directory and a peer of the previous release read as they did (docs/storage.md).

use super::batch::Batch;
use super::snapshot_file::SnapshotFile;
use super::state_machine::StateMachineStore;
use crate::command::Applied;

openraft::declare_raft_types!(
    /// Ward's Raft types: a batch of commands in, one result per command out.
    pub TypeConfig:
        D = Batch,
        R = Vec<Applied>,
        NodeId = u64,
        Node = openraft::BasicNode,
        Term = u64,
        LeaderId = openraft::impls::leader_id_adv::LeaderId<u64, u64>,
        Vote = openraft::impls::Vote<openraft::impls::leader_id_adv::LeaderId<u64, u64>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// This server's id in its (one-member, for now) group.
pub(crate) const NODE_ID: NodeId = 1;

pub(crate) type NodeId = u64;
pub type LeaderId = openraft::impls::leader_id_adv::LeaderId<u64, u64>;
pub type LogId = openraft::LogId<LeaderId>;
pub type Vote = openraft::impls::Vote<LeaderId>;
pub type Entry = openraft::Entry<LeaderId, openraft::EntryPayload<Batch, NodeId, openraft::BasicNode>>;
pub(crate) type StoredMembership = openraft::StoredMembership<LeaderId, NodeId, openraft::BasicNode>;
pub(crate) type SnapshotMeta = openraft::SnapshotMeta<LeaderId, NodeId, openraft::BasicNode>;
pub type Snapshot = openraft::Snapshot<LeaderId, NodeId, openraft::BasicNode, SnapshotFile>;
pub(crate) type LogState = openraft::LogState<TypeConfig>;
pub type Raft = openraft::Raft<TypeConfig, StateMachineStore>;

/// A log position for log lines: `index 42 (term 3)`, or `none` (nothing logged yet),
/// instead of openraft's `Some(LogId { leader_id: ... })` debug form.
pub fn shown(id: Option<LogId>) -> String {
    match id {
        Some(id) => format!("index {} (term {})", id.index, id.leader_id.term),
        None => "none".to_string(),
    }
}
