//! A submitted command's result, to come, and why there may be none.

use crate::command::Applied;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::oneshot;
use ward_proto::ErrorCode;

/// The future of [`Replication::barrier`](super::Replication::barrier).
pub type Barrier = Pin<Box<dyn Future<Output = Result<(), Rejected>> + Send>>;

/// Why a submitted command has no result. The difference decides what a client is told:
/// a command known not to be applied can be refused with an error, while one whose fate is
/// unknown must not be answered either way (the connection is closed instead, so the client
/// sees a connection loss, as ZooKeeper's clients do).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Certainly not applied (no leader, or the leader refused it before logging it); safe
    /// to send again.
    #[error("not applied: {0}")]
    NotApplied(String),
    /// Handed to the log, but whether it committed is not known (leadership lost, a
    /// timeout, a lost reply from the leader).
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// The log has stopped (shutdown, or a write or fsync failed).
    #[error("the log has stopped")]
    Stopped,
}

impl Rejected {
    /// The error a client may be given for a command that was not applied; `None` when
    /// nothing may be said (the outcome is unknown).
    pub(crate) fn as_reply(&self) -> Option<ErrorCode> {
        match self {
            Rejected::NotApplied(_) => Some(ErrorCode::Unavailable),
            Rejected::Unknown(_) | Rejected::Stopped => None,
        }
    }
}

/// What a [`Pending`] resolves to.
pub type Committed = Result<Applied, Rejected>;

/// A submitted command's result, to come.
pub struct Pending(oneshot::Receiver<Committed>);

impl Pending {
    /// A pending result and the sender that completes it.
    pub fn channel() -> (oneshot::Sender<Committed>, Pending) {
        let (tx, rx) = oneshot::channel();
        (tx, Pending(rx))
    }

    /// The result if it is already there: lets a connection flush before it waits.
    pub(crate) fn try_take(&mut self) -> Option<Committed> {
        match self.0.try_recv() {
            Ok(committed) => Some(committed),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => Some(Err(Rejected::Stopped)),
        }
    }
}

impl Future for Pending {
    /// [`Rejected::Stopped`] when the log dropped the command without a word (shutdown).
    type Output = Committed;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| r.unwrap_or(Err(Rejected::Stopped)))
    }
}
