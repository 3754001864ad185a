//! The seam between accepting a command and applying it.
//!
//! Everything that changes state goes through [`CommandLog::submit`]. The in-memory log here
//! applies at once; the durable, replicated log puts openraft behind the same trait.

use crate::command::{Applied, Command};
use crate::core::Core;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::oneshot;
use ward_proto::ErrorCode;

/// Orders commands and applies them.
pub trait CommandLog: Send + Sync + 'static {
    /// Orders `cmd` after every command submitted before it returns. The returned future
    /// resolves once the command is applied (and, for a durable log, durable).
    fn submit(&self, cmd: Command) -> Pending;
}

/// A submitted command's result, to come.
pub struct Pending(oneshot::Receiver<Applied>);

impl Pending {
    /// A pending result and the sender that completes it.
    pub fn channel() -> (oneshot::Sender<Applied>, Pending) {
        let (tx, rx) = oneshot::channel();
        (tx, Pending(rx))
    }

    /// The result if it is already there: lets a connection flush before it waits.
    pub fn try_take(&mut self) -> Option<Result<Applied, ErrorCode>> {
        match self.0.try_recv() {
            Ok(applied) => Some(Ok(applied)),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => Some(Err(ErrorCode::Unavailable)),
        }
    }
}

impl Future for Pending {
    /// `Unavailable` when the log dropped the command (shutdown, lost leadership).
    type Output = Result<Applied, ErrorCode>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| r.map_err(|_| ErrorCode::Unavailable))
    }
}

/// Single-server, in-memory log: the state machine's write lock is the order.
pub struct MemoryLog {
    core: Arc<Core>,
}

impl MemoryLog {
    pub fn new(core: Arc<Core>) -> Self {
        MemoryLog { core }
    }
}

impl CommandLog for MemoryLog {
    fn submit(&self, cmd: Command) -> Pending {
        let (tx, pending) = Pending::channel();
        let _ = tx.send(self.core.apply(&cmd));
        pending
    }
}
