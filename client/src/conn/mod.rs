//! The background task that owns the socket: requests out, replies and events in,
//! heartbeats, reconnects.

pub(crate) mod dial;
pub(crate) mod locks;
pub(crate) mod pending;
pub(crate) mod task;

use crate::error::Error;
use crate::watch::WatchSender;
use tokio::sync::oneshot;
use ward_proto::{Request, Response};

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
    /// Joins (or re-joins, after a lost reply) the lock queue in `dir` as attempt `tag`.
    Lock {
        dir: String,
        tag: u64,
        data: Vec<u8>,
        reply: oneshot::Sender<Result<Response, Error>>,
        granted: locks::GrantSender,
    },
    /// Leaves the queue in `dir` (a guard released, or an attempt abandoned); retried across
    /// reconnects until acknowledged.
    Release {
        dir: String,
        tag: u64,
        done: Option<oneshot::Sender<Result<(), Error>>>,
    },
}
