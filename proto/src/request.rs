//! Requests: one variant per operation.

use crate::acl::{Acl, Credentials};
use crate::event::Position;
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
    // The modes below were appended, so that the four above keep their encoding.
    /// Deleted by the server once its last child is deleted (ZooKeeper's container). One
    /// that never had a child is deleted too, after a grace the server sets
    /// (docs/zookeeper-compat.md, "TTL and container nodes").
    Container,
    /// Deleted by the server once it has no children and has not been changed (created or
    /// set) for `ttl_ms`, which must be 1 to [`MAX_TTL_MS`].
    PersistentWithTtl {
        ttl_ms: u64,
    },
    /// [`CreateMode::PersistentWithTtl`] with a sequential name.
    PersistentSequentialWithTtl {
        ttl_ms: u64,
    },
}

/// The longest TTL a node may have: ZooKeeper's limit (2^40 - 1 ms, about 34 years), as it
/// keeps the TTL in 40 bits.
pub const MAX_TTL_MS: u64 = (1 << 40) - 1;

/// The longest lock-delay: the node that keeps an ended holder's place keeps its delay in
/// the same 40 bits as a TTL.
pub const MAX_LOCK_DELAY_MS: u64 = MAX_TTL_MS;

impl CreateMode {
    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl { .. }
        )
    }
    /// The TTL of a TTL mode.
    pub fn ttl_ms(self) -> Option<u64> {
        match self {
            CreateMode::PersistentWithTtl { ttl_ms } | CreateMode::PersistentSequentialWithTtl { ttl_ms } => {
                Some(ttl_ms)
            }
            _ => None,
        }
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

/// What a persistent watch covers (ZooKeeper's `AddWatchMode`). Either stays armed when it
/// fires, until removed or its connection closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WatchMode {
    /// Every change of the node itself: `NodeCreated`, `NodeDataChanged`, `NodeDeleted` and
    /// `NodeChildrenChanged`.
    Persistent,
    /// Every change of the node and of every node below it, each event naming the node that
    /// changed, except `NodeChildrenChanged` (ZooKeeper's rule: the creates and deletes
    /// below are reported themselves).
    PersistentRecursive,
}

/// One persistent watch to arm ([`Request::AddWatches`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistentWatch {
    pub path: String,
    pub mode: WatchMode,
    /// `None`: watch from now on. `Some(p)`: the watch was armed before (on a connection
    /// since lost) and its client has every event up to position `p`; the server sends the
    /// events after `p` that the watch would have fired, from its recent history.
    pub since: Option<Position>,
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
    // The requests below were appended, so that older clients' requests keep their encoding.
    /// [`Request::Create`] with the node's ACL (a plain create gives `world:anyone` every
    /// permission). The `auth` scheme stands for the session's authenticated identities.
    CreateWithAcl {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        mode: CreateMode,
        acl: Vec<Acl>,
    },
    /// Replaces a node's ACL; `version: Some(v)` fails with `BadVersion` unless the node's
    /// `aversion` is `v`. Answered with [`Response::AclSet`](crate::Response::AclSet).
    SetAcl {
        path: String,
        acl: Vec<Acl>,
        version: Option<i32>,
    },
    /// A node's ACL and stat ([`Response::Acl`](crate::Response::Acl)).
    GetAcl {
        path: String,
    },
    /// Adds an identity to this connection (ZooKeeper's `addAuth`): for `digest`,
    /// `user:password`. It lasts as long as the connection: a client sends it again after a
    /// reconnect. Answered with [`Response::AuthAdded`](crate::Response::AuthAdded), or
    /// `AuthFailed` for a scheme the server cannot authenticate.
    AddAuth {
        scheme: String,
        credentials: Credentials,
    },
    /// Arms persistent watches for this connection. Answered with
    /// [`Response::WatchesAdded`](crate::Response::WatchesAdded), which carries the events a
    /// watch with `since` missed; every later change it matches is sent as
    /// [`ServerMessage::Streamed`](crate::ServerMessage::Streamed).
    AddWatches {
        watches: Vec<PersistentWatch>,
    },
    /// Disarms this connection's persistent watch of `mode` on `path`. Fails with
    /// `NoWatcher` if there is none.
    RemoveWatches {
        path: String,
        mode: WatchMode,
    },
    /// [`Request::LockAcquire`] with a lock-delay: after a holder's session ends without an
    /// orderly release (it expired, or was ended by the server), the next contender of the
    /// lock is not granted it until `lock_delay_ms` after that end. The delay belongs to the
    /// directory: the first acquire that asks for one while the queue is empty records it in
    /// the directory's data (`ward_proto::lock`); a later one must ask for the same, or for
    /// none with a plain `LockAcquire`.
    LockAcquireDelayed {
        dirs: Vec<String>,
        tag: u64,
        kind: LockKind,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        lock_delay_ms: u64,
    },
    /// Hands the ensemble's leadership to member `to`, or (`None`) to the voter whose log is
    /// most up to date. Answered with [`Response::LeaderTransferred`](crate::Response::LeaderTransferred) once the new leader
    /// leads. A single server has no one to hand it to: `BadArguments`.
    TransferLeader {
        to: Option<u64>,
    },
    /// [`Request::Members`] with what only the leader knows: which members it hears from,
    /// and a transfer of its leadership in progress. Answered with
    /// [`Response::MemberList`](crate::Response::MemberList).
    MemberList,
    /// Adds member `id`, reachable by its peers at `addr`, as an observer (ZooKeeper's word):
    /// it receives the log and serves clients (reads, watches, sessions, lock waits; writes
    /// go to the leader) but never votes, so it counts toward no quorum. Answered once it has
    /// caught up with the leader's log.
    AddObserver {
        id: u64,
        addr: String,
    },
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
                | Request::LockAcquireDelayed { .. }
                | Request::LockRelease { .. }
                | Request::CreateWithAcl { .. }
                | Request::SetAcl { .. }
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
    // Appended, so that the ops above keep their encoding (in requests and in the log).
    /// [`Op::Create`] with the node's ACL.
    CreateWithAcl {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        mode: CreateMode,
        acl: Vec<Acl>,
    },
    /// Replaces a node's ACL (a Ward extension: ZooKeeper's multi has no setACL).
    SetAcl {
        path: String,
        acl: Vec<Acl>,
        version: Option<i32>,
    },
}

impl Op {
    /// The node the op acts on.
    pub fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::Delete { path, .. }
            | Op::SetData { path, .. }
            | Op::Check { path, .. }
            | Op::CheckFence { path, .. }
            | Op::CheckLast { path }
            | Op::CreateWithAcl { path, .. }
            | Op::SetAcl { path, .. } => path,
        }
    }

    /// The bytes of node data the op writes.
    pub fn data_len(&self) -> usize {
        match self {
            Op::Create { data, .. } | Op::SetData { data, .. } | Op::CreateWithAcl { data, .. } => data.len(),
            _ => 0,
        }
    }

    /// The mode of a create.
    pub fn create_mode(&self) -> Option<CreateMode> {
        match self {
            Op::Create { mode, .. } | Op::CreateWithAcl { mode, .. } => Some(*mode),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modes were appended: the first four encode as they always did (a variant index,
    /// then a TTL mode's ttl), so older clients and logged commands read the same.
    #[test]
    fn create_modes_keep_their_encoding() {
        let cases = [
            (CreateMode::Persistent, vec![0]),
            (CreateMode::Ephemeral, vec![1]),
            (CreateMode::PersistentSequential, vec![2]),
            (CreateMode::EphemeralSequential, vec![3]),
            (CreateMode::Container, vec![4]),
            (CreateMode::PersistentWithTtl { ttl_ms: 300 }, vec![5, 0xac, 0x02]),
            (CreateMode::PersistentSequentialWithTtl { ttl_ms: 1 }, vec![6, 1]),
        ];
        for (mode, bytes) in cases {
            assert_eq!(postcard::to_allocvec(&mode).expect("encode"), bytes, "{mode:?}");
            assert_eq!(postcard::from_bytes::<CreateMode>(&bytes).expect("decode"), mode);
        }
        assert!(CreateMode::PersistentSequentialWithTtl { ttl_ms: 1 }.is_sequential());
        assert!(!CreateMode::Container.is_sequential() && !CreateMode::Container.is_ephemeral());
    }
}
