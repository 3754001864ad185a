//! A connection's queue of server-initiated messages (watch events, lock grants, closes).
//!
//! The queue counts what was put in it. A read records the count while it holds the state
//! lock; since events are queued under the write lock by the apply that caused them, every
//! event for a change the read can see is within that count, and the connection writes at
//! least that many queued messages before the read's reply (guarantee G6).
//!
//! The queue itself is [`Queue`], unbounded: most connections never receive a message, and
//! an empty one allocates nothing (ward-bench f).

use crate::net::queue::{Queue, TryRecvError};
use crate::sync::{AtomicU64, Ordering};
use crate::watch::Outbound;
use std::sync::Arc;

pub struct Outbox {
    queue: Queue<Outbound>,
    queued: AtomicU64,
}

/// How the rest of the server reaches a connection.
pub type OutboundTx = Arc<Outbox>;

/// The connection's end of its outbox. The connection itself holds an [`OutboundTx`] for as
/// long as it reads from here, and the outbox's senders never close it, so `recv` only ever
/// ends with a message.
pub struct OutboxRx(Arc<Outbox>);

impl Outbox {
    pub fn channel() -> (OutboundTx, OutboxRx) {
        let outbox = Arc::new(Outbox { queue: Queue::new(usize::MAX), queued: AtomicU64::new(0) });
        (outbox.clone(), OutboxRx(outbox))
    }

    /// Queues `msg`; false if the connection is gone.
    pub fn send(&self, msg: Outbound) -> bool {
        if self.queue.push_now(msg).is_err() {
            return false;
        }
        // After the push: a count read later covers only messages already in the queue.
        self.queued.fetch_add(1, Ordering::Release);
        true
    }

    /// How many messages have been queued so far.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Acquire)
    }
}

impl OutboxRx {
    /// The next message, waiting for one; cancel-safe (see [`Queue::pop`]).
    pub async fn recv(&mut self) -> Option<Outbound> {
        self.0.queue.pop().await
    }

    pub fn try_recv(&mut self) -> Result<Outbound, TryRecvError> {
        self.0.queue.try_pop()
    }

    pub fn is_empty(&self) -> bool {
        self.0.queue.is_empty()
    }
}

impl Drop for OutboxRx {
    fn drop(&mut self) {
        self.0.queue.close_receiver();
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
        assert!(matches!(rx.recv().await, Some(Outbound::Close(CloseReason::SessionEnded))));
        assert!(matches!(rx.try_recv(), Ok(Outbound::Close(CloseReason::SessionMoved))));
        assert_eq!(rx.try_recv().err(), Some(TryRecvError::Empty));
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
        assert!(matches!(got, Ok(Some(Outbound::Close(CloseReason::SessionEnded)))));
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
        assert!(tx.queue.is_empty());
    }
}
