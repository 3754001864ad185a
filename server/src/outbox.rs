//! A connection's queue of server-initiated messages (watch events, lock grants, closes).
//!
//! The queue counts what was put in it. A read records the count while it holds the state
//! lock; since events are queued under the write lock by the apply that caused them, every
//! event for a change the read can see is within that count, and the connection writes at
//! least that many queued messages before the read's reply (guarantee G6).

use crate::sync::{AtomicU64, Ordering};
use crate::watch::Outbound;
use std::sync::Arc;
use tokio::sync::mpsc;

pub struct Outbox {
    tx: mpsc::UnboundedSender<Box<Outbound>>,
    queued: AtomicU64,
}

/// The connection's end of its outbox. Messages travel boxed: the channel allocates its
/// first block of 32 slots up front, for every connection, and most connections never
/// receive a message at all.
pub struct OutboxRx(mpsc::UnboundedReceiver<Box<Outbound>>);

impl OutboxRx {
    pub async fn recv(&mut self) -> Option<Outbound> {
        self.0.recv().await.map(|msg| *msg)
    }

    pub fn try_recv(&mut self) -> Result<Outbound, mpsc::error::TryRecvError> {
        self.0.try_recv().map(|msg| *msg)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// How the rest of the server reaches a connection.
pub type OutboundTx = Arc<Outbox>;

impl Outbox {
    pub fn channel() -> (OutboundTx, OutboxRx) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Arc::new(Outbox { tx, queued: AtomicU64::new(0) }), OutboxRx(rx))
    }

    /// Queues `msg`; false if the connection is gone.
    pub fn send(&self, msg: Outbound) -> bool {
        let sent = self.tx.send(Box::new(msg)).is_ok();
        if sent {
            // After the send: a count read later covers only messages already in the queue.
            self.queued.fetch_add(1, Ordering::Release);
        }
        sent
    }

    /// How many messages have been queued so far.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Acquire)
    }
}
