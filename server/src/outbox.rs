//! A connection's queue of server-initiated messages (watch events, lock grants, closes).
//!
//! The queue counts what was put in it. A read records the count while it holds the state
//! lock; since events are queued under the write lock by the apply that caused them, every
//! event for a change the read can see is within that count, and the connection writes at
//! least that many queued messages before the read's reply (guarantee G6).
//!
//! It is a `VecDeque` under a mutex plus a `Notify`, not a tokio channel: a channel's
//! cache-padded state and first block of 32 slots cost about 800 bytes on every connection,
//! and most connections never receive a single message. An empty `VecDeque` allocates
//! nothing (ward-bench f measures the difference).

use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use crate::watch::Outbound;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::Notify;

pub struct Outbox {
    queue: Mutex<Queue>,
    /// Wakes the connection's writer; `notify_one` keeps a permit when the writer is not
    /// waiting, so a message queued between its check and its wait is not missed.
    ready: Notify,
    queued: AtomicU64,
}

#[derive(Default)]
struct Queue {
    msgs: VecDeque<Outbound>,
    /// The connection's end is gone: nothing queued from now on would be read.
    closed: bool,
}

/// How the rest of the server reaches a connection.
pub type OutboundTx = Arc<Outbox>;

/// The connection's end of its outbox. The connection itself holds an [`OutboundTx`] for as
/// long as it reads from here, so the queue cannot end under it.
pub struct OutboxRx(Arc<Outbox>);

/// `try_recv` found nothing queued.
#[derive(Debug, PartialEq, Eq)]
pub struct Empty;

impl Outbox {
    pub fn channel() -> (OutboundTx, OutboxRx) {
        let outbox =
            Arc::new(Outbox { queue: Mutex::new(Queue::default()), ready: Notify::new(), queued: AtomicU64::new(0) });
        (outbox.clone(), OutboxRx(outbox))
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A push or pop cannot leave the queue half-changed, so a panic elsewhere while it was
        // held does not make it unusable.
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `msg`; false if the connection is gone.
    pub fn send(&self, msg: Outbound) -> bool {
        {
            let mut queue = self.lock();
            if queue.closed {
                return false;
            }
            queue.msgs.push_back(msg);
        }
        // After the push: a count read later covers only messages already in the queue.
        self.queued.fetch_add(1, Ordering::Release);
        self.ready.notify_one();
        true
    }

    /// How many messages have been queued so far.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Acquire)
    }
}

impl OutboxRx {
    /// The next message, waiting for one. Cancel-safe: a message is only taken by the call
    /// that returns it.
    pub async fn recv(&mut self) -> Outbound {
        loop {
            if let Ok(msg) = self.try_recv() {
                return msg;
            }
            self.0.ready.notified().await;
        }
    }

    pub fn try_recv(&mut self) -> Result<Outbound, Empty> {
        self.0.lock().msgs.pop_front().ok_or(Empty)
    }

    pub fn is_empty(&self) -> bool {
        self.0.lock().msgs.is_empty()
    }
}

impl Drop for OutboxRx {
    fn drop(&mut self) {
        let mut queue = self.0.lock();
        queue.closed = true;
        // What was queued and never sent goes now, not when the last sender lets go.
        queue.msgs = VecDeque::new();
    }
}

#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;
    use crate::watch::CloseReason;
    use std::time::Duration;

    fn close(n: u8) -> Outbound {
        Outbound::Close(if n == 0 { CloseReason::SessionEnded } else { CloseReason::SessionMoved })
    }

    #[tokio::test]
    async fn messages_come_out_in_order_and_are_counted() {
        let (tx, mut rx) = Outbox::channel();
        assert!(rx.is_empty());
        assert!(tx.send(close(0)) && tx.send(close(1)));
        assert_eq!(tx.queued(), 2);
        assert!(matches!(rx.recv().await, Outbound::Close(CloseReason::SessionEnded)));
        assert!(matches!(rx.try_recv(), Ok(Outbound::Close(CloseReason::SessionMoved))));
        assert_eq!(rx.try_recv().err(), Some(Empty));
    }

    #[tokio::test]
    async fn a_waiting_receiver_wakes_and_a_cancelled_wait_loses_nothing() {
        let (tx, mut rx) = Outbox::channel();
        // A wait given up before anything arrives takes nothing with it.
        assert!(tokio::time::timeout(Duration::from_millis(10), rx.recv()).await.is_err());
        let sender = tokio::spawn(async move {
            tokio::task::yield_now().await;
            tx.send(close(0));
            tx
        });
        let got = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
        assert!(matches!(got, Ok(Outbound::Close(CloseReason::SessionEnded))));
        let tx = sender.await.expect("sender");
        assert_eq!(tx.queued(), 1);
    }

    #[test]
    fn sending_to_a_closed_connection_fails_and_drops_what_was_queued() {
        let (tx, rx) = Outbox::channel();
        assert!(tx.send(close(0)));
        drop(rx);
        assert!(!tx.send(close(1)), "the connection is gone");
        assert_eq!(tx.queued(), 1);
        assert!(tx.lock().msgs.is_empty());
    }
}
