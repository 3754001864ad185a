//! One-shot watches as futures, and the table that routes server events to them.

use crate::error::Error;
use crate::sync::oneshot;
use crate::sync::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use ward_proto::{EventKind, WatchEvent, WatchKind};

/// A one-shot watch: resolves with the event that fired it, or with an error if the session
/// ended first. Dropping it just ignores the event.
#[derive(Debug)]
pub struct Watch {
    rx: oneshot::Receiver<Result<WatchEvent, Error>>,
}

pub(crate) type WatchSender = oneshot::Sender<Result<WatchEvent, Error>>;

impl Watch {
    pub(crate) fn new() -> (WatchSender, Watch) {
        let (tx, rx) = oneshot::channel();
        (tx, Watch { rx })
    }

    /// The event if the watch has fired, without waiting.
    pub fn try_recv(&mut self) -> Option<Result<WatchEvent, Error>> {
        match self.rx.try_recv() {
            Ok(result) => Some(result),
            Err(oneshot::TryRecvError::Empty) => None,
            Err(oneshot::TryRecvError::Closed) => Some(Err(Error::Closed)),
        }
    }
}

impl Future for Watch {
    type Output = Result<WatchEvent, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|r| r.unwrap_or(Err(Error::Closed)))
    }
}

/// The application's armed watches. The server holds one watch per (kind, path) for this
/// connection; here each may have several waiters.
#[derive(Default)]
pub(crate) struct LocalWatches {
    by_key: HashMap<(WatchKind, String), Vec<WatchSender>>,
}

impl LocalWatches {
    pub(crate) fn add(&mut self, kind: WatchKind, path: String, tx: WatchSender) {
        self.by_key.entry((kind, path)).or_default().push(tx);
    }

    /// What to re-arm on a new connection.
    pub(crate) fn keys(&mut self) -> Vec<(WatchKind, String)> {
        // Waiters that dropped their `Watch` need not be re-armed.
        self.by_key.retain(|_, txs| {
            txs.retain(|tx| !tx.is_closed());
            !txs.is_empty()
        });
        self.by_key.keys().cloned().collect()
    }

    /// Resolves every watch the event fires (ZooKeeper's fan-out: a delete fires data, exists
    /// and child watches alike).
    pub(crate) fn fire(&mut self, event: &WatchEvent) {
        let kinds: &[WatchKind] = match event.kind {
            EventKind::NodeCreated => &[WatchKind::Exists, WatchKind::Data],
            EventKind::NodeDataChanged => &[WatchKind::Data, WatchKind::Exists],
            EventKind::NodeDeleted => &[WatchKind::Data, WatchKind::Exists, WatchKind::Child],
            EventKind::NodeChildrenChanged => &[WatchKind::Child],
        };
        for &kind in kinds {
            for tx in self.by_key.remove(&(kind, event.path.clone())).into_iter().flatten() {
                let _ = tx.send(Ok(event.clone()));
            }
        }
    }

    /// The session is over: every waiter learns why.
    pub(crate) fn fail_all(&mut self, error: &Error) {
        for (_, txs) in self.by_key.drain() {
            for tx in txs {
                let _ = tx.send(Err(error.clone()));
            }
        }
    }
}
