//! The client's typed errors.

use ward_proto::ErrorCode;

/// Why an operation failed. Server-side outcomes keep ZooKeeper's names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("no node")]
    NoNode,
    #[error("node exists")]
    NodeExists,
    #[error("bad version")]
    BadVersion,
    #[error("node not empty")]
    NotEmpty,
    #[error("ephemeral nodes cannot have children")]
    NoChildrenForEphemerals,
    /// The session has ended; its ephemerals are gone. Make a new client.
    #[error("session expired")]
    SessionExpired,
    /// The connection dropped before the answer arrived: the request may or may not have
    /// been applied. The client is reconnecting.
    #[error("connection lost; the outcome of the request is unknown")]
    ConnectionLoss,
    #[error("bad arguments: {0}")]
    BadArguments(String),
    #[error("unimplemented")]
    Unimplemented,
    #[error("server unavailable")]
    Unavailable,
    #[error("protocol version mismatch: {0}")]
    ProtocolVersion(String),
    /// In a multi: this op did not fail itself but was rolled back with the others.
    #[error("rolled back")]
    RolledBack,
    /// A multi failed: nothing was applied; `index` is the op that failed and `source` why.
    #[error("multi failed at op {index}: {source}")]
    MultiFailed { index: usize, source: Box<Error> },
    /// A fenced write or fence check: that lock is no longer held with that token.
    #[error("stale fence: not the current lock holder")]
    StaleFence,
    /// A semaphore was asked for with another number of permits than it has.
    #[error("semaphore permits mismatch")]
    PermitsMismatch,
    /// `Op::CheckLast`: another contender waits in the lock queue.
    #[error("another contender waits in the lock queue")]
    LockContended,
    /// The answer would exceed the reply limit (64 MiB): a listing of that many children.
    #[error("the reply would exceed the server's reply limit")]
    ReplyTooLarge,
    /// The node's ACL does not give this client's identities the permission the operation
    /// needs (ZooKeeper's `NoAuth`): show other credentials with [`Client::add_auth`].
    ///
    /// [`Client::add_auth`]: crate::Client::add_auth
    #[error("not authorized by the node's ACL")]
    NoAuth,
    /// The ACL given is empty, names an unknown scheme or a malformed id, or uses `auth`
    /// before the client authenticated.
    #[error("invalid ACL")]
    InvalidAcl,
    /// The server cannot authenticate that scheme (only `digest`, `ip`, and `x509` over
    /// TLS with a client certificate).
    #[error("authentication failed")]
    AuthFailed,
    /// In a [`WatchStream`](crate::WatchStream): changes may have been missed here, while
    /// the client was away longer than the server's history of changes reaches back. The
    /// stream goes on with the changes after the gap; read the state again to catch up.
    #[error("changes may have been missed: the server's history no longer reaches back")]
    EventsMissed,
    /// `remove_watches`: there is no such watch.
    #[error("no such watch")]
    NoWatcher,
    /// A lock was asked for with another lock-delay than its directory has.
    #[error("lock-delay mismatch")]
    LockDelayMismatch,
    /// The client was closed.
    #[error("client closed")]
    Closed,
    /// No listed server could be reached at connect time.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The TLS settings cannot be used (a file unreadable or not PEM, a key that is not the
    /// certificate's).
    #[error("TLS: {0}")]
    Tls(String),
    /// The TLS handshake with `server` failed over a certificate, the server's or this
    /// client's: `problem` says what is wrong and what to do.
    #[error("TLS with {server}: {problem}")]
    Certificate { server: String, problem: crate::tls::CertificateProblem },
    /// The server sent something this client does not understand.
    #[error("protocol error: {0}")]
    Protocol(String),
}

impl From<ErrorCode> for Error {
    fn from(code: ErrorCode) -> Self {
        match code {
            ErrorCode::NoNode => Error::NoNode,
            ErrorCode::NodeExists => Error::NodeExists,
            ErrorCode::BadVersion => Error::BadVersion,
            ErrorCode::NotEmpty => Error::NotEmpty,
            ErrorCode::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
            ErrorCode::SessionExpired => Error::SessionExpired,
            ErrorCode::BadArguments => Error::BadArguments("refused by the server".into()),
            ErrorCode::Unimplemented => Error::Unimplemented,
            ErrorCode::RolledBack => Error::RolledBack,
            ErrorCode::Unavailable => Error::Unavailable,
            ErrorCode::ProtocolVersion => Error::ProtocolVersion("refused by the server".into()),
            ErrorCode::StaleFence => Error::StaleFence,
            ErrorCode::PermitsMismatch => Error::PermitsMismatch,
            ErrorCode::LockContended => Error::LockContended,
            // A resent write that was applied, with a reply no longer kept: as unknown as a
            // lost connection, which is where it came from.
            ErrorCode::OutcomeUnknown => Error::ConnectionLoss,
            // Only a connection the session already left hears this; the client is elsewhere.
            ErrorCode::SessionMoved => Error::ConnectionLoss,
            ErrorCode::ReplyTooLarge => Error::ReplyTooLarge,
            ErrorCode::NoAuth => Error::NoAuth,
            ErrorCode::InvalidAcl => Error::InvalidAcl,
            ErrorCode::AuthFailed => Error::AuthFailed,
            ErrorCode::NoWatcher => Error::NoWatcher,
            ErrorCode::LockDelayMismatch => Error::LockDelayMismatch,
            other => Error::Protocol(format!("unknown error code {other:?}")),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
