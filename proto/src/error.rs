//! The wire error vocabulary. The server maps its internal errors to these codes only at the
//! connection edge; clients map them to their own typed errors.

use serde::{Deserialize, Serialize};

/// Why a request failed. Names and meanings follow ZooKeeper's `KeeperException.Code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The node (or, for create, its parent) does not exist.
    #[error("no node")]
    NoNode,
    /// A node already exists at that path.
    #[error("node exists")]
    NodeExists,
    /// The expected version did not match the node's version.
    #[error("bad version")]
    BadVersion,
    /// The node has children, so it cannot be deleted.
    #[error("node not empty")]
    NotEmpty,
    /// Ephemeral nodes cannot have children.
    #[error("ephemeral nodes cannot have children")]
    NoChildrenForEphemerals,
    /// The session is unknown, expired or closed.
    #[error("session expired")]
    SessionExpired,
    /// The request is malformed: invalid path, bad mode, data too large, and so on.
    #[error("bad arguments")]
    BadArguments,
    /// The operation is not implemented by this server.
    #[error("unimplemented")]
    Unimplemented,
    /// In a failed multi: this op was not the one that failed, and was rolled back.
    #[error("rolled back: another op of the multi failed")]
    RolledBack,
    /// The server is shutting down or could not order the request; retry elsewhere.
    #[error("server unavailable")]
    Unavailable,
    /// The client speaks a protocol version this server does not.
    #[error("protocol version mismatch")]
    ProtocolVersion,
    /// A fenced write or fence check: that lock node no longer holds its lock with that
    /// token (released, expired, or the token is not the holder's).
    #[error("stale fence: not the current lock holder")]
    StaleFence,
    /// A semaphore acquire asked for another number of permits than the semaphore has.
    #[error("semaphore permits mismatch")]
    PermitsMismatch,
    /// `CheckLast`: another contender waits behind this one.
    #[error("another contender waits in the lock queue")]
    LockContended,
    /// A resent write had been applied, and its reply is no longer kept: it happened once,
    /// with a result the server cannot give again.
    #[error("the resent write was applied before; its outcome is no longer known")]
    OutcomeUnknown,
    /// The write came through a connection its session has since left (it attached again,
    /// here or at another member): it was not applied, and never will be. ZooKeeper's
    /// `SESSIONMOVED`.
    #[error("the session has moved to another connection")]
    SessionMoved,
    /// The answer would exceed the reply limit (`MAX_REPLY_FRAME`, 64 MiB): a listing of
    /// that many children. Nothing was sent but this error; asking again fails the same way.
    #[error("the reply would exceed the reply limit")]
    ReplyTooLarge,
    /// The node's ACL does not give the connection's identities the permission the operation
    /// needs (ZooKeeper's `NOAUTH`).
    #[error("not authorized by the node's ACL")]
    NoAuth,
    /// The ACL given is empty, names an unknown scheme or a malformed id, or uses `auth`
    /// without an authenticated identity (ZooKeeper's `INVALIDACL`).
    #[error("invalid ACL")]
    InvalidAcl,
    /// `AddAuth` with a scheme the server cannot authenticate (ZooKeeper's `AUTHFAILED`).
    #[error("authentication failed")]
    AuthFailed,
    /// `RemoveWatches`: this connection has no such watch. ZooKeeper's `NOWATCHER`.
    #[error("no such watch")]
    NoWatcher,
    /// A lock acquire asked for another lock-delay than the directory has.
    #[error("lock-delay mismatch")]
    LockDelayMismatch,
}
