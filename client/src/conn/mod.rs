//! The background task that owns the socket: requests out, replies and events in,
//! heartbeats, reconnects.

pub(crate) mod dial;
pub(crate) mod locks;
pub(crate) mod pending;
pub(crate) mod task;

use crate::error::Error;
use crate::stream::WatchStream;
use crate::sync::oneshot;
use crate::watch::WatchSender;
use ward_proto::{LockKind, Request, Response, WatchMode};

/// What the application asks of the connection task.
pub(crate) enum Cmd {
    Request {
        request: Request,
        watch: Option<WatchSender>,
        reply: oneshot::Sender<Result<Response, Error>>,
    },
    Close {
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// Joins (or re-joins, after a lost reply) the lock queues of `dirs` as attempt `tag`.
    Lock {
        dirs: Vec<String>,
        tag: u64,
        kind: LockKind,
        data: Vec<u8>,
        /// The lock-delay asked for (`LockAcquireDelayed`), if any.
        lock_delay_ms: Option<u64>,
        reply: oneshot::Sender<Result<Response, Error>>,
        granted: locks::GrantSender,
    },
    /// Arms a persistent watch; the stream is handed over once the server has armed it.
    Watch {
        path: String,
        mode: WatchMode,
        reply: oneshot::Sender<Result<WatchStream, Error>>,
    },
    /// Removes a persistent watch; its streams end.
    RemoveWatch {
        path: String,
        mode: WatchMode,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// Leaves the queues of `dirs` (a guard released, or an attempt abandoned); retried across
    /// reconnects until acknowledged.
    Release {
        dirs: Vec<String>,
        tag: u64,
        done: Option<oneshot::Sender<Result<(), Error>>>,
    },
}
