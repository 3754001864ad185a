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

/// The bytes of paths in one `SetWatches` a reconnecting client sends (ZooKeeper's client's
/// `SET_WATCHES_MAX_LENGTH`, 128 KiB), far under the server's request limit.
pub(crate) const SET_WATCHES_BATCH: usize = 128 << 10;

/// Splits `items` into batches of at most `limit` bytes as `len` counts them (an item
/// longer than that goes alone).
pub(crate) fn batches<T>(items: impl Iterator<Item = T>, len: impl Fn(&T) -> usize, limit: usize) -> Vec<Vec<T>> {
    let mut batches: Vec<Vec<T>> = Vec::new();
    let mut used = 0;
    for item in items {
        let n = len(&item);
        match batches.last_mut() {
            Some(batch) if used + n <= limit => batch.push(item),
            _ => {
                batches.push(vec![item]);
                used = 0;
            }
        }
        used += n;
    }
    batches
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

    /// What to re-arm on a new connection, in batches for one `SetWatches` each: at most
    /// `limit` bytes of paths a batch (a longer path goes alone). One request for them all
    /// could outgrow the server's request limit (8,000 paths of 200 bytes are 1.6 MB), and
    /// a refused frame would cost the connection, again on every reconnect. ZooKeeper's
    /// client splits the same way, at [`SET_WATCHES_BATCH`].
    pub(crate) fn batches(&mut self, limit: usize) -> Vec<Vec<(WatchKind, String)>> {
        // Waiters that dropped their `Watch` need not be re-armed.
        self.by_key.retain(|_, txs| {
            txs.retain(|tx| !tx.is_closed());
            !txs.is_empty()
        });
        // The kind and the path's length prefix take a few bytes more.
        batches(self.by_key.keys().cloned(), |key| key.1.len() + 8, limit)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rearming_is_split_into_batches_under_the_limit() {
        let mut table = LocalWatches::default();
        let mut waiters = Vec::new();
        for i in 0..100 {
            let (tx, watch) = Watch::new();
            table.add(WatchKind::Data, format!("/{i:0>91}"), tx);
            waiters.push(watch);
        }
        let (tx, watch) = Watch::new();
        table.add(WatchKind::Child, format!("/{}", "x".repeat(2_000)), tx);
        waiters.push(watch);
        // 100 keys of 100 bytes (path and overhead), 1,000 bytes a batch, and the long one
        // alone: 11 batches, or 12 where the long one splits a batch of short ones.
        let batches = table.batches(1_000);
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), 101);
        assert!((11..=12).contains(&batches.len()), "{} batches", batches.len());
        for batch in &batches {
            let bytes: usize = batch.iter().map(|(_, p)| p.len() + 8).sum();
            assert!(bytes <= 1_000 || batch.len() == 1, "a batch of {} keys, {bytes} bytes", batch.len());
        }
        drop(waiters);
        assert!(table.batches(1_000).is_empty(), "dropped watches are not re-armed");
    }
}
