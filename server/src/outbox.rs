//! A connection's queue of server-initiated messages (watch events, lock grants, closes),
//! and its bound on the bytes queued for the client.
//!
//! The queue counts what was put in it. A read records the count while it holds the state
//! lock; since events are queued under the write lock by the apply that caused them, every
//! event for a change the read can see is within that count, and the connection writes at
//! least that many queued messages before the read's reply (guarantee G6).
//!
//! The queue itself is [`Queue`]: most connections never receive a message, and an empty
//! one allocates nothing (ward-bench f).
//!
//! # The bound (docs/security.md "Limits")
//!
//! What waits for the client counts against one budget of bytes: the messages here, from
//! the moment they are queued until the writer has handed them to the socket (those it
//! holds back included), and the read replies the reader has computed ([`Outbox::charge`]).
//! The two kinds are treated differently because of who produced them:
//!
//! * Replies answer the client's own requests, so the reader waits for room before it
//!   reads the next one ([`Outbox::room`]): back-pressure, as ZooKeeper stops reading a
//!   client that sends faster than it reads.
//! * Messages are queued by apply, under the state lock, and apply never waits for a
//!   connection. One that would pass the bound is not queued: the connection is marked
//!   overflowed and its token cancelled, so its writer stops even while stuck on a socket
//!   the client never reads, and it sends nothing more. (A reply sent after a dropped event
//!   could show a change whose event the client never got; closing keeps G6.) The session
//!   lives on, to be resumed on a new connection or to expire.

use crate::net::queue::{Queue, TryRecvError};
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::watch::Outbound;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use ward_proto::{StreamEvent, WatchEvent};

pub struct Outbox {
    queue: Queue<Outbound>,
    queued: AtomicU64,
    /// Bytes queued for the client and not yet written (see the bound above).
    bytes: AtomicU64,
    limit: u64,
    overflowed: AtomicBool,
    /// Wakes the reader waiting in [`Outbox::room`].
    room: Notify,
    /// The connection's own token.
    cancel: CancellationToken,
}

/// How the rest of the server reaches a connection.
pub type OutboundTx = Arc<Outbox>;

/// The connection's end of its outbox. The connection itself holds an [`OutboundTx`] for as
/// long as it reads from here, and the outbox's senders never close it, so `recv` only ever
/// ends with a message.
pub struct OutboxRx(Arc<Outbox>);

/// What a message costs while it waits: about the memory it holds (the enum and its path).
/// A close costs nothing, so it is never refused.
pub fn weight(msg: &Outbound) -> u64 {
    match msg {
        Outbound::Event(event) | Outbound::Streamed(StreamEvent { event, .. }) => event_weight(event),
        Outbound::LockGranted { path, .. } => (std::mem::size_of::<Outbound>() + path.len()) as u64,
        Outbound::Close(_) => 0,
    }
}

/// What an event costs while it waits, queued here or carried by a read's reply.
pub fn event_weight(event: &WatchEvent) -> u64 {
    (std::mem::size_of::<Outbound>() + event.path.len()) as u64
}

impl Outbox {
    /// The outbox of a connection that may have `limit` bytes queued for its client, and
    /// whose tasks stop when `cancel` (its own token) is cancelled.
    pub fn bounded(limit: usize, cancel: CancellationToken) -> (OutboundTx, OutboxRx) {
        let outbox = Arc::new(Outbox {
            queue: Queue::new(usize::MAX),
            queued: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            overflowed: AtomicBool::new(false),
            room: Notify::new(),
            cancel,
        });
        (outbox.clone(), OutboxRx(outbox))
    }

    /// An outbox without a bound, for models and tests.
    #[cfg(test)]
    pub fn channel() -> (OutboundTx, OutboxRx) {
        Outbox::bounded(usize::MAX, CancellationToken::new())
    }

    /// Queues `msg`; false if the connection is gone, or has just overflowed its bound.
    pub fn send(&self, msg: Outbound) -> bool {
        let weight = weight(&msg);
        if weight > 0 && !self.reserve(weight) {
            return false;
        }
        if self.queue.push_now(msg).is_err() {
            // The connection is gone: what it counts no longer matters.
            return false;
        }
        // After the push: a count read later covers only messages already in the queue.
        self.queued.fetch_add(1, Ordering::Release);
        true
    }

    /// Counts `weight` bytes for a message about to be queued; false if that would pass the
    /// bound, which overflows the connection (once: counted, and its token cancelled).
    fn reserve(&self, weight: u64) -> bool {
        if self.overflowed.load(Ordering::Acquire) {
            return false;
        }
        let before = self.bytes.fetch_add(weight, Ordering::AcqRel);
        if before.saturating_add(weight) <= self.limit {
            return true;
        }
        self.bytes.fetch_sub(weight, Ordering::AcqRel);
        if !self.overflowed.swap(true, Ordering::AcqRel) {
            crate::metrics::count_outbound_overflow();
            self.cancel.cancel();
        }
        false
    }

    /// Counts a read reply of `weight` bytes the reader has computed. Never refused: the
    /// reader then waits in [`room`](Self::room) before it reads more.
    pub fn charge(&self, weight: u64) {
        self.bytes.fetch_add(weight, Ordering::AcqRel);
    }

    /// Waits while the bytes queued for the client are at the bound (or until the connection
    /// is cancelled).
    pub async fn room(&self) {
        while self.bytes.load(Ordering::Acquire) >= self.limit {
            // `notify_one` keeps a permit: a release between the check and the wait is not lost.
            tokio::select! {
                _ = self.cancel.cancelled() => return,
                _ = self.room.notified() => {}
            }
        }
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

    /// `weight` bytes were handed to the socket (or dropped): they no longer count.
    pub fn release(&self, weight: u64) {
        if weight == 0 {
            return;
        }
        let before = self.0.bytes.fetch_sub(weight, Ordering::AcqRel);
        if before >= self.0.limit && before - weight < self.0.limit {
            self.0.room.notify_one();
        }
    }

    /// True once a message was refused for passing the bound: nothing more may be sent.
    pub fn overflowed(&self) -> bool {
        self.0.overflowed.load(Ordering::Acquire)
    }

    /// The bound, for messages.
    pub fn limit(&self) -> u64 {
        self.0.limit
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

    fn event(path: &str) -> Outbound {
        Outbound::Event(WatchEvent { kind: ward_proto::EventKind::NodeDataChanged, path: path.into(), zxid: 1 })
    }

    #[test]
    fn an_event_past_the_bound_overflows_the_connection_once_and_cancels_it() {
        let cancel = CancellationToken::new();
        let one = weight(&event("/a"));
        let (tx, rx) = Outbox::bounded(2 * one as usize, cancel.clone());
        let overflows = crate::metrics::outbound_overflows();
        assert!(tx.send(event("/a")) && tx.send(event("/b")), "two fit");
        assert!(!rx.overflowed() && !cancel.is_cancelled());
        assert!(!tx.send(event("/c")), "the third does not");
        assert!(rx.overflowed() && cancel.is_cancelled());
        assert!(crate::metrics::outbound_overflows() > overflows);
        rx.release(one);
        assert!(!tx.send(event("/d")), "an overflowed connection takes nothing more");
        assert!(tx.send(close(0)), "but a close still goes in");
        assert_eq!(tx.queued(), 3, "refused events are not counted: no read waits for them");
    }

    #[tokio::test]
    async fn replies_past_the_bound_wait_for_the_writer_and_never_overflow() {
        let cancel = CancellationToken::new();
        let (tx, rx) = Outbox::bounded(1000, cancel.clone());
        tx.charge(600);
        tx.room().await;
        tx.charge(600);
        assert!(!rx.overflowed(), "replies are held back, not refused");
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.room().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "at the bound the reader waits");
        rx.release(600);
        tokio::time::timeout(Duration::from_secs(30), waiting).await.expect("woken by the writer").expect("task");
        // A cancelled connection stops waiting too.
        tx.charge(1000);
        cancel.cancel();
        tokio::time::timeout(Duration::from_secs(30), tx.room()).await.expect("cancelled");
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
