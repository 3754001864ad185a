//! A connection's shared state: the order of what it sends ([`ConnOrder`], with its queue of
//! server-initiated messages: watch events, lock grants, closes) and its bound on the bytes
//! queued for the client. The reader, the writer and the rest of the server (apply firing
//! watches, the session table) reach the connection through it.
//!
//! The ordering rules are `conn/ordering.rs`'s; this file only shares its [`ConnOrder`]
//! between tasks (a mutex) and wakes whoever waits on it (a `Notify` each way). A read
//! takes its fence ([`Outbox::fence`]) while it holds the state lock; since events are
//! queued under the write lock by the apply that caused them, every event for a change the
//! read can see is within it, and the writer sends those before the read's reply (G6).
//!
//! Most connections never receive a message, and an empty queue allocates nothing
//! (ward-bench f).
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

use crate::conn::ordering::{ConnOrder, Reads};
use crate::conn::Outbound;
use crate::core::Core;
use crate::state::StateMachine;
use crate::sync::{AtomicBool, AtomicU64, AtomicWaker, Mutex, MutexGuard, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use ward_proto::{StreamEvent, WatchEvent, Zxid};

pub(crate) struct Outbox {
    /// The connection's order ([`ConnOrder`]): its messages, the fences of its reads in
    /// flight, its writes submitted and applied. A mutex of `crate::sync`, so the loom models
    /// run through it; every critical section is one call of a method that neither waits nor
    /// allocates more than a queue slot.
    order: Mutex<ConnOrder<Outbound>>,
    /// Wakes the writer: a message was queued.
    to_writer: Notify,
    /// Wakes the connection's task while it is parked (`conn/park.rs`): a waker, not a
    /// `Notify`, so that the wait keeps no waiter of its own in every idle connection.
    parked: AtomicWaker,
    /// Wakes the reader, waiting in [`room`](Outbox::room) or [`caught_up`](Outbox::caught_up).
    /// One `Notify` serves both: the reader waits in one place at a time and checks its
    /// condition before every wait, so a wake-up meant for the other wait costs it a look,
    /// and `notify_one` keeps a permit when it is not waiting yet.
    to_reader: Notify,
    /// Bytes queued for the client and not yet written (see the bound above).
    bytes: AtomicU64,
    limit: u64,
    overflowed: AtomicBool,
    /// Set when the connection was cut [`LAST_WRITES`] after the server closed it.
    cut: AtomicBool,
    /// The connection's own token.
    cancel: CancellationToken,
}

/// How long a connection the server closes may take to write what it still owes its client
/// (replies to requests read before the close, the last message): a client that reads
/// nothing would otherwise keep it, and what is buffered for it, for as long as it lives.
pub(crate) const LAST_WRITES: Duration = Duration::from_secs(10);

/// How the rest of the server reaches a connection.
pub(crate) type OutboundTx = Arc<Outbox>;

/// The writer's end of its connection's outbox. Dropping it ends the connection's order:
/// messages are refused and a reader waiting for writes is told (rule 7 of
/// `conn/ordering.rs`).
pub(crate) struct OutboxRx(Arc<Outbox>);

/// What a message costs while it waits: about the memory it holds (the enum and its path).
/// A close costs nothing, so it is never refused.
pub(crate) fn weight(msg: &Outbound) -> u64 {
    match msg {
        Outbound::Event(event) | Outbound::Streamed(StreamEvent { event, .. }) => event_weight(event),
        Outbound::LockGranted { path, .. } => (std::mem::size_of::<Outbound>() + path.len()) as u64,
        Outbound::Close(_) => 0,
    }
}

/// What an event costs while it waits, queued here or carried by a read's reply.
pub(crate) fn event_weight(event: &WatchEvent) -> u64 {
    (std::mem::size_of::<Outbound>() + event.path.len()) as u64
}

impl Outbox {
    /// The outbox of a connection that may have `limit` bytes queued for its client, and
    /// whose tasks stop when `cancel` (its own token) is cancelled.
    pub(crate) fn bounded(limit: usize, cancel: CancellationToken) -> (OutboundTx, OutboxRx) {
        let outbox = Arc::new(Outbox {
            order: Mutex::new(ConnOrder::default()),
            to_writer: Notify::new(),
            parked: AtomicWaker::default(),
            to_reader: Notify::new(),
            bytes: AtomicU64::new(0),
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            overflowed: AtomicBool::new(false),
            cut: AtomicBool::new(false),
            cancel,
        });
        (outbox.clone(), OutboxRx(outbox))
    }

    /// An outbox without a bound, for models and tests.
    #[cfg(test)]
    pub(crate) fn channel() -> (OutboundTx, OutboxRx) {
        Outbox::bounded(usize::MAX, CancellationToken::new())
    }

    fn order(&self) -> MutexGuard<'_, ConnOrder<Outbound>> {
        // Every method of `ConnOrder` leaves it whole: a panic cannot cut one in half.
        self.order.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `msg`; false if the connection is gone, or has just overflowed its bound.
    pub(crate) fn send(self: &Arc<Self>, msg: Outbound) -> bool {
        let weight = weight(&msg);
        if weight > 0 && !self.reserve(weight) {
            return false;
        }
        let closes = matches!(msg, Outbound::Close(_));
        // Refused once the writer is gone: what it counts no longer matters.
        let queued = self.order().push(msg);
        if queued {
            self.to_writer.notify_one();
            self.parked.wake();
            if closes {
                self.cut_after(LAST_WRITES);
            }
        }
        queued
    }

    /// Cancels the connection `grace` from now unless it has ended by then. A task of its
    /// own rather than a timer in every connection: closes are rare, connections many.
    fn cut_after(self: &Arc<Self>, grace: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let outbox = Arc::downgrade(self);
        runtime.spawn(async move {
            tokio::time::sleep(grace).await;
            if let Some(outbox) = outbox.upgrade().filter(|o| !o.cancel.is_cancelled()) {
                outbox.cut.store(true, Ordering::Release);
                outbox.cancel.cancel();
                outbox.wake_parked();
            }
        });
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
            self.cancel.cancel();
            self.wake_parked();
        }
        false
    }

    /// The connection's own token.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Wakes the connection if it is parked, to see that its token was cancelled: a parked
    /// connection waits on its socket and its outbox, not on its token (`conn/park.rs`).
    /// Whoever cancels a connection's token calls this after; the server's shutdown calls
    /// it on every connection (`WatchRegistry::wake_parked`).
    pub(crate) fn wake_parked(&self) {
        self.parked.wake();
    }

    /// Counts a read reply of `weight` bytes the reader has computed. Never refused: the
    /// reader then waits in [`room`](Self::room) before it reads more.
    pub(crate) fn charge(&self, weight: u64) {
        self.bytes.fetch_add(weight, Ordering::AcqRel);
    }

    /// Waits while the bytes queued for the client are at the bound (or until the connection
    /// is cancelled).
    pub(crate) async fn room(&self) {
        while self.bytes.load(Ordering::Acquire) >= self.limit {
            tokio::select! {
                _ = self.cancel.cancelled() => return,
                _ = self.to_reader.notified() => {}
            }
        }
    }

    /// How many messages have been queued so far.
    #[cfg(all(test, not(ward_loom)))]
    fn queued(&self) -> u64 {
        self.order().queued()
    }

    /// A read looks at the state: its fence (`ConnOrder::fence`). Call it under the state
    /// lock, and queue the read's reply after it.
    pub(crate) fn fence(&self) -> u64 {
        self.order().fence()
    }

    /// A read on behalf of this connection: runs `f` in a consistent view of `core`'s state,
    /// and returns the last zxid of that view and the read's fence, how many messages were
    /// queued here when `f` looked. Since apply queues events under the write lock, every
    /// event for a change `f` can see is within that count, and the connection writes them
    /// before the read's reply (G6), and no later one (`conn/ordering.rs`). The read's reply
    /// must then be queued on the connection.
    pub(crate) fn view<R>(&self, core: &Core, f: impl FnOnce(&StateMachine) -> R) -> (Zxid, u64, R) {
        core.read(|state| {
            let events_before = self.fence();
            (state.last_zxid(), events_before, f(state))
        })
    }

    /// Numbers the next write the reader submits.
    pub(crate) fn submit_write(&self) -> u64 {
        self.order().submit_write()
    }

    /// Waits until every write submitted so far is applied; false if the writer is gone.
    pub(crate) async fn caught_up(&self) -> bool {
        loop {
            let reads = self.order().reads_may_run();
            match reads {
                Reads::MayRun => return true,
                Reads::WriterGone => return false,
                Reads::Wait => self.to_reader.notified().await,
            }
        }
    }
}

impl OutboxRx {
    fn order(&self) -> MutexGuard<'_, ConnOrder<Outbound>> {
        self.0.order()
    }

    /// The next message the fences allow, waiting for one (`ConnOrder::next_to_send`). The
    /// outbox's senders never close it, so it only ever ends with a message. Cancel-safe: a
    /// message is only taken by the call that returns it.
    pub(crate) async fn next(&mut self) -> Outbound {
        loop {
            let next = self.order().next_to_send();
            match next {
                Some(msg) => return msg,
                None => self.0.to_writer.notified().await,
            }
        }
    }

    /// Ready once a message could be sent ([`has_sendable`](Self::has_sendable)) or the
    /// connection's token is cancelled: a parked connection's wait (`conn/park.rs`). Takes
    /// nothing.
    pub(crate) fn poll_wake(&self, cx: &mut Context<'_>) -> Poll<()> {
        // Registered before the look: a message queued, or a cancel, after it wakes this
        // waker (`Outbox::wake_parked`).
        self.0.parked.register(cx.waker());
        if self.0.cancel.is_cancelled() || self.has_sendable() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// The next message the fences allow, if one is queued.
    pub(crate) fn try_next(&mut self) -> Option<Outbound> {
        self.order().next_to_send()
    }

    /// True if a message could be sent now.
    pub(crate) fn has_sendable(&self) -> bool {
        self.order().has_sendable()
    }

    /// The next message a read's reply must follow (`ConnOrder::due_before_reply`).
    pub(crate) fn due_before_reply(&mut self, fence: u64) -> Option<Outbound> {
        self.order().due_before_reply(fence)
    }

    /// The head read's reply is out (`ConnOrder::replied`).
    pub(crate) fn replied(&mut self) {
        self.order().replied();
    }

    /// Write `number` of the connection has its outcome: wakes a read waiting for it.
    pub(crate) fn applied(&self, number: u64) {
        self.order().applied(number);
        self.0.to_reader.notify_one();
    }

    /// Every message queued, fences or not: for models and tests that look at what apply
    /// queued without playing the writer.
    #[cfg(all(test, ward_loom))]
    pub(crate) fn take_all(&mut self) -> Vec<Outbound> {
        let mut order = self.order();
        std::iter::from_fn(|| order.due_before_reply(u64::MAX)).collect()
    }

    /// `weight` bytes were handed to the socket (or dropped): they no longer count.
    pub(crate) fn release(&self, weight: u64) {
        if weight == 0 {
            return;
        }
        let before = self.0.bytes.fetch_sub(weight, Ordering::AcqRel);
        if before >= self.0.limit && before - weight < self.0.limit {
            self.0.to_reader.notify_one();
        }
    }

    /// True once a message was refused for passing the bound: nothing more may be sent.
    pub(crate) fn overflowed(&self) -> bool {
        self.0.overflowed.load(Ordering::Acquire)
    }

    /// The bound, for messages.
    pub(crate) fn limit(&self) -> u64 {
        self.0.limit
    }

    /// True once the connection was cut for not finishing its last writes in time.
    pub(crate) fn cut(&self) -> bool {
        self.0.cut.load(Ordering::Acquire)
    }
}

impl OutboxRx {
    /// The writer has ended (rule 7 of `conn/ordering.rs`): later messages are refused, what
    /// waited is dropped, and a reader waiting for writes is told. Also on drop.
    pub(crate) fn end(&mut self) {
        let dropped = self.order().writer_gone();
        // Dropped outside the lock.
        drop(dropped);
        self.0.to_reader.notify_one();
    }
}

impl Drop for OutboxRx {
    fn drop(&mut self) {
        self.end();
        // The connection's task is gone, however it went (a panic included): whatever
        // still waits on its token stops.
        self.0.cancel.cancel();
    }
}

#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;
    use crate::conn::CloseReason;
    use std::time::Duration;

    fn close(n: u8) -> Outbound {
        Outbound::Close(if n == 0 { CloseReason::SessionEnded } else { CloseReason::SessionMoved })
    }

    #[tokio::test]
    async fn messages_come_out_in_order_and_are_counted() {
        let (tx, mut rx) = Outbox::channel();
        assert!(!rx.has_sendable());
        assert!(tx.send(close(0)) && tx.send(close(1)));
        assert_eq!(tx.queued(), 2);
        assert!(matches!(rx.next().await, Outbound::Close(CloseReason::SessionEnded)));
        assert!(matches!(rx.try_next(), Some(Outbound::Close(CloseReason::SessionMoved))));
        assert!(rx.try_next().is_none());
    }

    #[tokio::test]
    async fn a_waiting_writer_wakes_and_a_cancelled_wait_loses_nothing() {
        let (tx, mut rx) = Outbox::channel();
        // A wait given up before anything arrives takes nothing with it.
        assert!(tokio::time::timeout(Duration::from_millis(10), rx.next()).await.is_err());
        let sender = tokio::spawn(async move {
            tokio::task::yield_now().await;
            tx.send(close(0));
            tx
        });
        let got = tokio::time::timeout(Duration::from_secs(30), rx.next()).await;
        assert!(matches!(got, Ok(Outbound::Close(CloseReason::SessionEnded))));
        let tx = sender.await.expect("sender");
        assert_eq!(tx.queued(), 1);
    }

    /// Rule 2 of `conn/ordering.rs` across tasks: the reader waiting for its writes is woken
    /// by the writer's report, and by the writer's end.
    #[tokio::test]
    async fn a_waiting_read_is_woken_by_the_writes_applied_and_by_the_writers_end() {
        let (tx, rx) = Outbox::channel();
        assert!(tx.caught_up().await, "nothing submitted yet");
        let (first, second) = (tx.submit_write(), tx.submit_write());
        rx.applied(first);
        assert!(tokio::time::timeout(Duration::from_millis(20), tx.caught_up()).await.is_err());
        let writer = tokio::spawn(async move {
            tokio::task::yield_now().await;
            rx.applied(second);
            rx
        });
        assert_eq!(tokio::time::timeout(Duration::from_secs(30), tx.caught_up()).await, Ok(true));
        let rx = writer.await.expect("writer");
        tx.submit_write();
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.caught_up().await }
        });
        tokio::task::yield_now().await;
        drop(rx);
        let result = tokio::time::timeout(Duration::from_secs(30), waiting).await.expect("in time");
        assert!(!result.expect("reader"), "the writer is gone: the read would wait forever");
    }

    /// Rule 4 of `conn/ordering.rs` through the outbox: a message queued after a read's fence
    /// is not given to the writer until the read is answered.
    #[tokio::test]
    async fn a_message_past_a_fence_waits_for_the_reply() {
        let (tx, mut rx) = Outbox::channel();
        let fence = tx.fence();
        assert!(tx.send(close(0)));
        assert!(!rx.has_sendable());
        assert!(tokio::time::timeout(Duration::from_millis(10), rx.next()).await.is_err());
        assert!(rx.due_before_reply(fence).is_none(), "nothing the read saw");
        rx.replied();
        assert!(matches!(rx.try_next(), Some(Outbound::Close(CloseReason::SessionEnded))));
    }

    fn event(path: &str) -> Outbound {
        Outbound::Event(WatchEvent { kind: ward_proto::EventKind::NodeDataChanged, path: path.into(), zxid: 1 })
    }

    #[test]
    fn an_event_past_the_bound_overflows_the_connection_once_and_cancels_it() {
        let cancel = CancellationToken::new();
        let one = weight(&event("/a"));
        let (tx, rx) = Outbox::bounded(2 * one as usize, cancel.clone());
        assert!(tx.send(event("/a")) && tx.send(event("/b")), "two fit");
        assert!(!rx.overflowed() && !cancel.is_cancelled());
        assert!(!tx.send(event("/c")), "the third does not");
        assert!(rx.overflowed() && cancel.is_cancelled());
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
        assert_eq!(tx.queued(), 0, "what waited was dropped with the writer");
    }
}
