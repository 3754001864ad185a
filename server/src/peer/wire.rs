//! The peer link's messages: what ensemble members say to each other.
//!
//! Frames are `ward-proto`'s (a 4-byte length, then postcard). A connection opens with a
//! [`PeerHello`] naming the ensemble, the caller and the member it meant to reach, so a
//! misrouted or foreign connection is refused before it can touch Raft; after the
//! [`HelloAnswer`] every frame is an [`Envelope`] whose `id` pairs a reply with its request,
//! so one connection carries many calls at once.

use crate::command::{Applied, Command};
use crate::raft::types::{NodeId, SnapshotMeta, TypeConfig, Vote};
use openraft::error::RaftError;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, TransferLeaderRequest, TransferLeaderResponse, VoteRequest,
    VoteResponse,
};
use serde::{Deserialize, Serialize};
use ward_proto::{MemberInfo, SessionId};

/// "Ward peer": not a client hello, which starts with Ward's client magic.
pub(crate) const PEER_MAGIC: [u8; 4] = *b"WRDP";
/// Bumped when a message changes shape; members of one ensemble must agree. Version 2 is
/// openraft 0.10's messages (pre-vote, leader transfer, snapshots sent whole in chunks of
/// Ward's own); a member of version 1 is refused at the hello, with both versions named.
pub(crate) const PEER_VERSION: u32 = 2;
/// Why a member refuses a peer of another protocol version, in words an operator can act on.
pub(crate) fn version_mismatch(here: u32, there: u32) -> String {
    format!(
        "peer protocol {here} here, {there} there: members of releases with different peer protocols cannot \
         form one ensemble (version 2 is openraft 0.10's); stop every member, then start them all on one \
         release (docs/operations.md, \"Upgrading\")"
    )
}

/// Largest peer frame: a batch entry is at most about 1 MiB and an append carries a few,
/// snapshot chunks are 1 MiB.
pub(crate) const MAX_PEER_FRAME: usize = 64 << 20;

/// What a connection is for. Snapshots have their own connection so that a large transfer
/// never delays heartbeats; client traffic (forwarded writes, touches, read index) has its
/// own so that a burst of writes never delays Raft's own messages either.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Channel {
    Raft,
    Snapshot,
    Client,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PeerHello {
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
pub(crate) enum HelloAnswer {
    Accepted,
    Refused(String),
}

/// A request or a reply, tagged with the caller's request id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Envelope<T> {
    pub id: u64,
    pub body: T,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum PeerRequest {
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<TypeConfig>),
    /// A candidate asks whether it would get a vote before it raises its term (Pre-Vote).
    PreVote(VoteRequest<TypeConfig>),
    SnapshotChunk(SnapshotChunk),
    /// The leader hands its leadership to the receiver.
    TransferLeader(TransferLeaderRequest<TypeConfig>),
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
    /// The sender found the leader of `vote` refusing connections: is it gone here too?
    /// (`raft::gone_leader`; `last_log` is the sender's last log index.)
    LeaderGone {
        vote: Vote,
        last_log: u64,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum PeerResponse {
    AppendEntries(Result<AppendEntriesResponse<TypeConfig>, RaftError<TypeConfig>>),
    Vote(Result<VoteResponse<TypeConfig>, RaftError<TypeConfig>>),
    PreVote(Result<VoteResponse<TypeConfig>, RaftError<TypeConfig>>),
    /// The receiver's vote; a chunk is refused (`Err`) only when the file cannot be written
    /// or the snapshot not installed.
    SnapshotChunk(Result<Vote, String>),
    TransferLeader(Result<TransferLeaderResponse<TypeConfig>, String>),
    /// The log index of the entry holding the batch, and each command's result.
    Forward(Result<(u64, Vec<Applied>), ForwardError>),
    /// The touched sessions the leader does not know (or is expiring): they are gone.
    Touch(Result<Vec<SessionId>, ForwardError>),
    ReadIndex(Result<u64, ForwardError>),
    Admin(Result<AdminReply, ForwardError>),
    LeaderGone(GoneAnswer),
}

/// A voter's answer to "is the leader of this vote gone for you too?".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GoneAnswer {
    pub gone: bool,
    /// The answering voter's last log index, so that the longest log stands.
    pub(crate) last_log: u64,
}

/// A piece of the leader's snapshot file (`docs/storage.md`), sent in order; the one with
/// `done` set is the last, and the receiver installs the snapshot when it has it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SnapshotChunk {
    /// The sending leader's vote.
    pub vote: Vote,
    pub(crate) meta: SnapshotMeta,
    /// Where in the file `data` starts; a transfer starts at 0.
    pub offset: u64,
    pub data: Vec<u8>,
    pub done: bool,
}

/// Why the leader did not do what a follower forwarded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub(crate) enum ForwardError {
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
pub(crate) enum AdminRequest {
    /// Adds `id` at peer address `addr` as a learner, waits until it has caught up, then
    /// makes it a voter.
    AddMember { id: NodeId, addr: String },
    /// Removes `id` from the voters and the group.
    RemoveMember { id: NodeId },
    /// The member list, as the leader knows it.
    Members,
    /// Hands the leadership to `to`, or to the voter most up to date.
    TransferLeader { to: Option<NodeId> },
    /// Adds `id` at peer address `addr` as a learner that stays one (an observer); returns
    /// once it has caught up. Last: a member of a release without it refuses it undecoded.
    AddObserver { id: NodeId, addr: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum AdminReply {
    Done,
    Members(Vec<MemberInfo>),
    /// The member that leads after a transfer.
    Leader(NodeId),
}
