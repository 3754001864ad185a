//! The peer link's messages: what ensemble members say to each other.
//!
//! Frames are `ward-proto`'s (a 4-byte length, then postcard). A connection opens with a
//! [`PeerHello`] naming the ensemble, the caller and the member it meant to reach, so a
//! misrouted or foreign connection is refused before it can touch Raft; after the
//! [`HelloAnswer`] every frame is an [`Envelope`] whose `id` pairs a reply with its request,
//! so one connection carries many calls at once.

use crate::command::{Applied, Command};
use crate::raft::types::{NodeId, TypeConfig};
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use serde::{Deserialize, Serialize};
use ward_proto::{MemberInfo, SessionId};

/// "Ward peer": not a client hello, which starts with Ward's client magic.
pub const PEER_MAGIC: [u8; 4] = *b"WRDP";
/// Bumped when a message changes shape; members of one ensemble must agree.
pub const PEER_VERSION: u32 = 1;
/// Largest peer frame: a batch entry is at most about 1 MiB and an append carries a few,
/// snapshot chunks are 1 MiB.
pub const MAX_PEER_FRAME: usize = 64 << 20;

/// What a connection is for. Snapshots have their own connection so that a large transfer
/// never delays heartbeats; client traffic (forwarded writes, touches, read index) has its
/// own so that a burst of writes never delays Raft's own messages either.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Channel {
    Raft,
    Snapshot,
    Client,
}

impl Channel {
    pub const ALL: [Channel; 3] = [Channel::Raft, Channel::Snapshot, Channel::Client];
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerHello {
    pub magic: [u8; 4],
    pub version: u32,
    /// The ensemble's name: two ensembles on one network never talk to each other.
    pub ensemble: String,
    pub from: NodeId,
    /// The member the caller meant to reach: a stale address book is caught here.
    pub to: NodeId,
    pub channel: Channel,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HelloAnswer {
    Accepted,
    Refused(String),
}

/// A request or a reply, tagged with the caller's request id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub id: u64,
    pub body: T,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum PeerRequest {
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// A follower's batch of client writes, for the leader to order as one entry.
    Forward(Vec<Command>),
    /// Sessions whose clients were heard from on the sender since its last touch, and the
    /// sender's last applied log index (for the member list).
    Touch {
        sessions: Vec<SessionId>,
        applied: Option<u64>,
    },
    /// Confirm leadership and name the log index a linearizable read must wait for.
    ReadIndex,
    Admin(AdminRequest),
}

#[derive(Debug, Serialize, Deserialize)]
pub enum PeerResponse {
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    InstallSnapshot(Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>),
    /// The log index of the entry holding the batch, and each command's result.
    Forward(Result<(u64, Vec<Applied>), ForwardError>),
    /// The touched sessions the leader does not know (or is expiring): they are gone.
    Touch(Result<Vec<SessionId>, ForwardError>),
    ReadIndex(Result<u64, ForwardError>),
    Admin(Result<AdminReply, ForwardError>),
}

/// Why the leader did not do what a follower forwarded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ForwardError {
    /// Not done: this member is not the leader (it names the one it knows, if any).
    /// Safe to send again to the leader.
    #[error("not the leader (leader: {0:?})")]
    NotLeader(Option<NodeId>),
    /// Handed to Raft, but whether it committed is not known (leadership lost, a timeout).
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// Refused, with why (a bad membership change, a member that does not exist).
    #[error("{0}")]
    Refused(String),
}

/// Membership changes and the member list, run by the leader.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdminRequest {
    /// Adds `id` at peer address `addr` as a learner, waits until it has caught up, then
    /// makes it a voter.
    AddMember { id: NodeId, addr: String },
    /// Removes `id` from the voters and the group.
    RemoveMember { id: NodeId },
    /// The member list, as the leader knows it.
    Members,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdminReply {
    Done,
    Members(Vec<MemberInfo>),
}
