//! Commands: what the log orders and the state machine applies.
//!
//! A command carries everything apply needs (the accepting server's clock reading, the
//! session, the session secret it chose), so apply reads no clock and no random source and
//! every replica that applies the same log reaches the same state.

use crate::acl::AuthId;
use serde::{Deserialize, Serialize};
use ward_proto::{ErrorCode, LockKind, Op, Response, SessionId, SessionSecret, Zxid};

/// One entry of the command log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// Wall-clock milliseconds stamped by the server that accepted the command.
    pub time_ms: i64,
    /// The session on whose behalf the command runs.
    pub session: SessionId,
    /// The client's request tag. Ward's clients number a session's requests in order, so it
    /// is also the key that recognizes a resent write; 0 (ZooKeeper clients, the server's
    /// own commands) is never deduplicated.
    pub xid: u64,
    pub op: CommandOp,
}

/// What a command does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandOp {
    /// One create, delete or set (a `Check` on its own is refused in prep).
    Op(Op),
    /// All ops or none.
    Multi(Vec<Op>),
    /// Opens a session; its id becomes the zxid of this command.
    /// `owner`: a new session of the same owner ends the owner's previous session first.
    CreateSession { timeout_ms: u32, secret: SessionSecret, owner: Option<String> },
    /// The client closed its session.
    CloseSession,
    /// The session's heartbeats stopped; proposed by the server tracking its deadline.
    ExpireSession,
    /// Joins the lock queues of `dirs` as one attempt (or finds this session's contenders
    /// for `tag` from an earlier try).
    LockAcquire { dirs: Vec<String>, tag: u64, kind: LockKind, data: Vec<u8> },
    /// Leaves the queues: deletes this session's contenders for `tag` in `dirs`.
    LockRelease { dirs: Vec<String>, tag: u64 },
    /// An `Op` or `Multi` sent again under its original xid after a lost connection: apply
    /// answers it from the session's last write instead of applying it twice (exactly once,
    /// Raft dissertation §6.3). Last, so that logs written before it decode unchanged.
    Resent(Box<CommandOp>),
    /// An unconditional [`CommandOp::AttachIf`], as builds before it logged it: still
    /// applied from older logs, never written now. (Appended after `Resent`, as is `Fenced`,
    /// so that older logs decode unchanged.)
    Attach,
    /// A session's command sent through a connection of an ensemble member that attached at
    /// `epoch`: refused with `SessionMoved` once a later attachment of the session is in
    /// the log. A command can wait at a member the client has left (in its queue, or on a slow
    /// link to the leader) and reach the log after what the client sent from its new
    /// connection; applied then, it would reorder the session's writes, or bring back a lock
    /// attempt the client gave up. ZooKeeper refuses such a request the same way.
    Fenced { epoch: Zxid, op: Box<CommandOp> },
    /// Deletes the container or TTL node at `path` if it is unused at this command's time
    /// (`time_ms`), checked in log order: proposed by the leader's cleanup
    /// ([`crate::cleanup`]) for a node it found unused, which may have been used since.
    /// `never_used_ms`: how long a container that never had a child is kept (0: for good).
    /// (Appended after `Fenced`, so that older logs decode unchanged.)
    DeleteIfUnused { path: String, never_used_ms: u64 },
    /// An `Op` or a `Multi` from a ZooKeeper client that sent null data (jute's length -1,
    /// which Ward's own protocol cannot say) to the ops at `nulls` (indices into the multi, 0
    /// for a lone op): their data, empty in `op`, is stored as null. (Appended after
    /// `DeleteIfUnused`, so that older logs decode unchanged.)
    NullData { nulls: Vec<u32>, op: Box<CommandOp> },
    /// The session attached to a connection of an ensemble member: writes that connection
    /// sends carry this command's zxid as their epoch ([`CommandOp::Fenced`]). Applied only
    /// if the session's latest attachment is still `expected`, the one the member saw when
    /// the handshake began, else refused with `SessionMoved`: a handshake the client gave up
    /// (it timed out, and the client attached elsewhere) can reach the log late, and must not
    /// take the session from the connection the client uses now. (Appended last, so that
    /// older logs decode unchanged.)
    AttachIf { expected: Zxid },
    /// `op` on behalf of a connection with these identities: its address, the digests and
    /// certificate it showed (docs/security.md, "How identities travel"). Apply checks the
    /// ACLs against them, so every member of an ensemble reaches the same verdict. A
    /// command without it has no identity (only `world:anyone` grants it anything): the
    /// server's own commands, which need none, and writes logged before ACLs, which only
    /// found open nodes. (Appended last, so that older logs decode unchanged.)
    As { ids: Vec<AuthId>, op: Box<CommandOp> },
    /// [`CommandOp::LockAcquire`] asking for a lock-delay of `lock_delay_ms` (at least 1) in
    /// every directory: recorded in a directory whose queue is empty, else it must be the
    /// directory's (`LockDelayMismatch`). (Appended last, so that older logs decode
    /// unchanged.)
    LockAcquireDelayed { dirs: Vec<String>, tag: u64, kind: LockKind, data: Vec<u8>, lock_delay_ms: u64 },
}

/// What applying a command produced. Serializable: it is the Raft response of a batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The answer to a client's request.
    Reply(Result<Response, ErrorCode>),
    /// A session was opened with this id.
    SessionCreated(SessionId),
    /// A session's attachment was logged ([`CommandOp::Attach`]); its zxid is the epoch.
    Attached,
}

/// A command after apply: its zxid and its outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub zxid: Zxid,
    pub outcome: Outcome,
}

/// A change apply made, from which watches fire. Watches are never decided inside the
/// tree's mutation code: apply reports changes and the watch registry turns them into
/// events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Created(String),
    Deleted(String),
    DataChanged(String),
    ChildrenChanged(String),
    SessionCreated { session: SessionId, timeout_ms: u32 },
    SessionEnded(SessionId),
}
