//! The openraft type configuration: what a Raft entry carries and what applying it returns.
//!
//! An entry's payload is a *batch* of commands, not one command: openraft 0.9 writes one
//! entry per `client_write` and keeps one append in flight, so group commit has to happen
//! in front of it (see [`super::proposer`]).

use super::batch::Batch;
use super::snapshot_file::SnapshotFile;
use crate::command::Applied;

openraft::declare_raft_types!(
    /// Ward's Raft types: a batch of commands in, one result per command out.
    pub TypeConfig:
        D = Batch,
        R = Vec<Applied>,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        // Sent and received a chunk at a time, from and into files of the data directory.
        SnapshotData = SnapshotFile,
        AsyncRuntime = openraft::TokioRuntime,
);

/// This server's id in its (one-member, for now) group.
pub const NODE_ID: NodeId = 1;

pub type NodeId = u64;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type StoredMembership = openraft::StoredMembership<NodeId, openraft::BasicNode>;
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, openraft::BasicNode>;
pub type Snapshot = openraft::Snapshot<TypeConfig>;
pub type LogState = openraft::LogState<TypeConfig>;
pub type Raft = openraft::Raft<TypeConfig>;

/// A log position for log lines: `index 42 (term 3)`, or `none` (nothing logged yet),
/// instead of openraft's `Some(LogId { leader_id: ... })` debug form.
pub fn shown(id: Option<LogId>) -> String {
    match id {
        Some(id) => format!("index {} (term {})", id.index, id.leader_id.term),
        None => "none".to_string(),
    }
}
