//! Requests: one variant per operation.

use crate::ids::Zxid;
use crate::lock::LockKind;
use serde::{Deserialize, Serialize};

/// How a node is created (ZooKeeper's `CreateMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CreateMode {
    Persistent,
    /// Deleted when the creating session ends.
    Ephemeral,
    /// The name gets a 10-digit suffix from the parent's counter.
    PersistentSequential,
    EphemeralSequential,
}

impl CreateMode {
    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }
    pub fn is_sequential(self) -> bool {
        matches!(self, CreateMode::PersistentSequential | CreateMode::EphemeralSequential)
    }
}

/// Which kind of one-shot watch a read leaves behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WatchKind {
    /// Set by `get_data`, or by `exists` on a node that exists: fires on data change or delete.
    Data,
    /// Set by `exists` on a missing node: fires on create.
    Exists,
    /// Set by `get_children`: fires on child create/delete or on the node's delete.
    Child,
}

/// A request. Paths are checked by the server; clients check them too, to fail early.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    Create {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        mode: CreateMode,
    },
    /// `version: None` deletes whatever the version.
    Delete {
        path: String,
        version: Option<i32>,
    },
    SetData {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        version: Option<i32>,
    },
    GetData {
        path: String,
        watch: bool,
    },
    Exists {
        path: String,
        watch: bool,
    },
    GetChildren {
        path: String,
        watch: bool,
    },
    /// All-or-nothing: every op applies, or none does.
    Multi(Vec<Op>),
    /// Answered once every write ordered before it has been applied on this server.
    Sync {
        path: String,
    },
    Ping,
    /// Ends the session now: its ephemeral nodes are deleted.
    CloseSession,
    /// Re-arms watches after a reconnect. A watch whose node changed after `last_zxid`
    /// fires at once instead of being re-armed.
    SetWatches {
        last_zxid: Zxid,
        watches: Vec<(WatchKind, String)>,
    },
    /// Joins the lock queue of every directory in `dirs` at once (one contender each, all
    /// created by one command, so multi-locks queue in one global order and cannot deadlock),
    /// or finds the contenders an earlier, unanswered attempt with this `tag` created.
    /// Answered with [`Response::Lock`](crate::Response::Lock); if not yet held, the server
    /// sends [`ServerMessage::LockGranted`](crate::ServerMessage::LockGranted) when the
    /// attempt holds in every directory.
    LockAcquire {
        dirs: Vec<String>,
        tag: u64,
        kind: LockKind,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    /// Leaves the lock queues: deletes this session's contenders for `tag` in `dirs`.
    LockRelease {
        dirs: Vec<String>,
        tag: u64,
    },
    /// Asks again whether a contender holds its lock (after a reconnect, when a grant may
    /// have been missed). Answered with [`Response::Lock`](crate::Response::Lock).
    LockWait {
        path: String,
    },
    /// Fails with `StaleFence` unless `path` is the current holder of its lock with this
    /// fencing token.
    CheckFence {
        path: String,
        token: Zxid,
    },
    /// Counters of the server that answers.
    Stats,
    /// The ensemble's members as the leader knows them. Answered with
    /// [`Response::Members`](crate::Response::Members).
    Members,
    /// Adds member `id`, reachable by its peers at `addr`: it joins as a learner, catches up
    /// (from a snapshot if need be) and then becomes a voter. Answered once it votes.
    AddMember {
        id: u64,
        addr: String,
    },
    /// Removes member `id` from the ensemble (the leader too: a new one is elected).
    RemoveMember {
        id: u64,
    },
    /// A write (create, delete, set or multi) sent again, under its original xid, after the
    /// connection it was sent on was lost before its reply came. Applied only if it was not
    /// applied before; if it was, answered with its original reply, or `OutcomeUnknown` when
    /// a later write of the session has been applied since (only the last reply is kept).
    /// Xids of one session must grow: the client's own counter does.
    Resend(Box<Request>),
}

impl Request {
    /// True for requests that change state and so go through the command log.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Request::Create { .. }
                | Request::Delete { .. }
                | Request::SetData { .. }
                | Request::Multi(_)
                | Request::CloseSession
                | Request::LockAcquire { .. }
                | Request::LockRelease { .. }
        ) || matches!(self, Request::Resend(inner) if inner.is_write())
    }
}

/// One operation inside a [`Request::Multi`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Create {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        mode: CreateMode,
    },
    Delete {
        path: String,
        version: Option<i32>,
    },
    SetData {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        version: Option<i32>,
    },
    /// Fails the multi unless the node exists with this version (`None`: any version).
    Check {
        path: String,
        version: Option<i32>,
    },
    /// Fails the multi with `StaleFence` unless `path` holds its lock with this token: the
    /// fence a lock holder puts in front of its writes.
    CheckFence {
        path: String,
        token: Zxid,
    },
    /// Fails the multi with `LockContended` unless `path` is the last contender in its
    /// directory's queue (no other contender waits behind it).
    CheckLast {
        path: String,
    },
}
