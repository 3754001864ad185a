//! Successful answers, and the node metadata they carry.

use crate::acl::Acl;
use crate::error::ErrorCode;
use crate::event::StreamEvent;
use crate::ids::{SessionId, Zxid};
use serde::{Deserialize, Serialize};

/// A node's metadata, with ZooKeeper's meaning for every field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stat {
    /// The zxid of the change that created the node.
    pub czxid: Zxid,
    /// The zxid of the change that last set the node's data (or created it).
    pub mzxid: Zxid,
    /// The zxid of the change that last added or removed a child (or created the node).
    pub pzxid: Zxid,
    /// Creation time, milliseconds since the Unix epoch, stamped by the accepting server.
    pub ctime: i64,
    /// Last data change time, milliseconds since the Unix epoch.
    pub mtime: i64,
    /// Number of data changes.
    pub version: i32,
    /// Number of child changes (creates and deletes).
    pub cversion: i32,
    /// Number of ACL changes.
    pub aversion: i32,
    /// The owning session of an ephemeral node.
    pub ephemeral_owner: Option<SessionId>,
    pub data_length: u32,
    pub num_children: u32,
}

/// The successful result of a [`Request`](crate::Request).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// The created node's actual path (with any sequence suffix) and its stat.
    Created {
        path: String,
        stat: Stat,
    },
    Deleted,
    /// The node's stat after a set.
    DataSet(Stat),
    Data {
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        stat: Stat,
    },
    /// `None`: the node does not exist (not an error for `exists`).
    Exists(Option<Stat>),
    /// Children's names (not paths), sorted, and the parent's stat.
    Children {
        children: Vec<String>,
        stat: Stat,
    },
    /// One result per op. On failure every op carries an error: the failing op its own, the
    /// rest [`ErrorCode::RolledBack`].
    Multi(Vec<OpResult>),
    Synced,
    Pong,
    Closed,
    WatchesSet,
    Lock(LockState),
    /// The fence is valid: that node holds its lock with that token.
    FenceValid,
    Stats(ServerStats),
    Members(Vec<MemberInfo>),
    /// A membership change is done.
    MembersChanged,
    // Appended, so that the responses above keep their encoding.
    /// A node's ACL and stat. Digest ids show their hash only to a client with ADMIN on the
    /// node; others see `user:x`, as ZooKeeper shows them.
    Acl {
        acl: Vec<Acl>,
        stat: Stat,
    },
    /// The node's stat after its ACL was replaced.
    AclSet(Stat),
    /// `AddAuth` succeeded: the identity counts for this connection from now on.
    AuthAdded,
    // The variants below were appended, so that the ones above keep their encoding.
    /// The watches of an `AddWatches` are armed. `replay`: in position order, the changes
    /// after their `since` positions that they match, which the client has not had (each
    /// once, however many of the watches match it). `missed`: the indices of the watches
    /// whose `since` is older than the server's history reaches back: events may have been
    /// lost for them (they are armed all the same).
    WatchesAdded {
        replay: Vec<StreamEvent>,
        missed: Vec<u32>,
    },
    WatchesRemoved,
    /// Member `leader` leads now (after [`Request::TransferLeader`](crate::Request::TransferLeader)).
    LeaderTransferred {
        leader: u64,
    },
    /// The answer to [`Request::MemberList`](crate::Request::MemberList).
    MemberList(MemberList),
}

/// One member of the ensemble, as its leader sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberInfo {
    pub id: u64,
    /// Where its peers reach it.
    pub addr: String,
    pub role: MemberRole,
    /// The last log index it has applied, as it last reported (the leader's own is exact);
    /// `None` if not known.
    pub applied: Option<u64>,
    /// How many log entries it is behind the leader's log; `None` if not known.
    pub lag: Option<u64>,
}

/// The member list with what only the leader knows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberList {
    pub members: Vec<MemberStatus>,
    /// The leader, as the member that answered knows it.
    pub leader: Option<u64>,
    /// While the leader hands its leadership over: the member it hands it to.
    pub handing_over_to: Option<u64>,
}

/// One member and whether the leader hears from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberStatus {
    pub info: MemberInfo,
    pub contact: Contact,
}

/// Whether the leader hears from a member. Only the leader can tell: a follower hears from
/// the leader alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Contact {
    /// The member leads; its figures are its own.
    Leads,
    /// The leader's last append or heartbeat that it acknowledged was sent this long ago,
    /// within the leader's lease.
    Reachable { last_heard_ms: u64 },
    /// Nothing it acknowledged was sent within the leader's lease (`last_heard_ms`: how long
    /// ago the last was; `None`: nothing since this leader took the lead). Its applied index
    /// and lag are then unknown, not the last figures it reported.
    Unreachable { last_heard_ms: Option<u64> },
    /// The member that answered does not lead, and the leader's answer to it carries no
    /// liveness (ask the leader).
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberRole {
    Leader,
    Follower,
    /// Receives the log and serves clients but does not vote: an observer, or a member
    /// being added until it has caught up.
    Learner,
}

/// A lock attempt's standing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockState {
    /// One contender per directory, in the order the directories were asked for.
    pub nodes: Vec<LockNode>,
    /// True if the attempt holds now (in every directory).
    pub held: bool,
}

/// One contender of a lock attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockNode {
    pub path: String,
    /// The fencing token: the node's czxid, larger for every later holder of the lock.
    pub token: Zxid,
}

/// Counters of one server, for operators and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    pub last_zxid: Zxid,
    pub znodes: u64,
    pub sessions: u64,
    pub watches: u64,
    /// Lock grants pushed to waiters (a contender told "you hold it now"): one per handoff.
    pub lock_grants: u64,
    /// `fdatasync` calls that made log appends durable (0 for an in-memory server): with
    /// group commit, far fewer than acknowledged writes.
    pub log_fsyncs: u64,
}

/// The result of one op of a multi.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpResult {
    Created {
        path: String,
        stat: Stat,
    },
    Deleted,
    DataSet(Stat),
    Checked,
    Error(ErrorCode),
    /// Appended: [`Op::SetAcl`](crate::Op::SetAcl)'s result.
    AclSet(Stat),
}
