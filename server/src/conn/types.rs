//! A client connection's own types: who it is, why the server closes it, what besides
//! replies is pushed onto it, how it takes watch events, and the session bound to it. A
//! leaf: it names nothing else of the server's.

use ward_proto::{SessionId, StreamEvent, WatchEvent, Zxid};

/// Identifies one client connection on this server.
pub(crate) type ConnId = u64;

/// Why the server is closing a connection on its own initiative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The session ended (expired, or closed by another connection).
    SessionEnded,
    /// The session was resumed on a newer connection.
    SessionMoved,
    /// This member lost contact with the ensemble's leader: the client should move on.
    OutOfContact,
    /// This member replaced its state with a snapshot (it had fallen behind): the changes in
    /// between fired no watch and pushed no lock grant. On its next connection the client
    /// re-arms its watches from the last zxid it saw and asks again after its lock waits,
    /// which finds what it missed, as a ZooKeeper follower's clients do after a SNAP sync.
    StateReplaced,
}

/// What the rest of the server can push onto a connection besides replies.
#[derive(Debug)]
pub enum Outbound {
    Event(WatchEvent),
    /// An event of a persistent watch of a Ward connection, with its position.
    Streamed(StreamEvent),
    /// A lock contender of the connection's session now holds its lock.
    LockGranted {
        path: String,
        token: Zxid,
    },
    Close(CloseReason),
}

/// A session bound to a connection. `epoch` is the zxid of that binding in the log, which
/// the connection's writes carry so that apply refuses them once the session has moved on
/// (`CommandOp::Fenced`); 0 where nothing is fenced (a single server).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attached {
    pub session: SessionId,
    pub epoch: Zxid,
}

/// How a connection is told of changes its watches match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// ZooKeeper's: one notification per change, whichever watches (one-shot or persistent)
    /// it matched.
    OneEvent,
    /// Ward's: one-shot watches get an [`Outbound::Event`], persistent ones an
    /// [`Outbound::Streamed`] with the change's position, each at most once per change, so
    /// that the client can route the two apart and resume a stream where it stopped.
    Streams,
}
