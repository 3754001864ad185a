//! The background task that owns the socket: requests out, replies and events in,
//! heartbeats, reconnects.

pub(crate) mod dial;
pub(crate) mod pending;
pub(crate) mod task;

use crate::error::Error;
use crate::watch::WatchSender;
use tokio::sync::oneshot;
use ward_proto::{Request, Response};

/// What the application asks of the connection task.
pub(crate) enum Cmd {
    Request { request: Request, watch: Option<WatchSender>, reply: oneshot::Sender<Result<Response, Error>> },
    Close { reply: oneshot::Sender<Result<(), Error>> },
}
