//! The writing half of a connection: replies in request order, with server-initiated
//! messages (watch events, lock grants, closes) placed before the replies that must follow
//! them.
//!
//! The writer is a thin loop: what may go out when is decided by the connection's
//! [`ConnOrder`](super::ordering::ConnOrder) (reached through [`OutboxRx`]); the writer takes
//! items in arrival order, awaits writes' outcomes, encodes and feeds the socket. It is
//! shared by both listeners: what differs between Ward's protocol and ZooKeeper's is only how
//! a reply or an event is encoded, which a [`Wire`] says.

use super::park::Idle;
use super::queue;
use crate::command::Outcome;
use crate::conn::outbox::OutboxRx;
use crate::conn::{CloseReason, Outbound};
use crate::metrics::{Failure, Listener, ListenerFigures, Stamp};
use crate::replication::Pending;
use crate::Server;
use futures_util::{Sink, SinkExt};
use std::fmt::Display;
use std::net::SocketAddr;
use std::ops::ControlFlow::{self, Break, Continue};
use std::sync::atomic::Ordering;
use tokio_util::sync::CancellationToken;
use ward_proto::{ErrorCode, Response, SessionId, WatchEvent, Zxid};

/// How one protocol encodes what the writer sends.
pub(crate) trait Wire: Send {
    /// The listener whose request metrics this protocol's replies count in.
    const LISTENER: Listener;
    /// What the reader attaches to each request so its reply can be encoded (Ward: the xid;
    /// ZooKeeper: the xid and the opcode).
    type Tag: Send;
    /// A read's answer, computed by the reader in its view of the state.
    type Answer: Send;
    /// One outgoing message.
    type Msg: Send;

    /// A server-initiated message; `None` if this protocol has no way to say it.
    fn outbound(&mut self, msg: Outbound) -> Option<Self::Msg>;
    fn read_reply(&mut self, tag: Self::Tag, zxid: Zxid, answer: Self::Answer) -> Self::Msg;
    fn write_reply(&mut self, tag: Self::Tag, zxid: Zxid, result: Result<Response, ErrorCode>) -> Self::Msg;
    /// The last message when the session ended under the connection, if the protocol has one.
    fn session_expired(&mut self) -> Option<Self::Msg>;
    /// About the memory a read's answer holds until it is written: it counts against the
    /// connection's bound on outbound bytes (`super::outbox`).
    fn answer_weight(answer: &Self::Answer) -> u64;
    /// How a read's answer failed, if it did (for the request metrics).
    fn read_failure(answer: &Self::Answer) -> Option<Failure>;
    /// How a write's result failed, if it did, as its reply will say.
    fn write_failure(_tag: &Self::Tag, result: &Result<Response, ErrorCode>) -> Option<Failure> {
        Failure::of_write(result)
    }
}

/// An item with its stamp: what the request was and when its frame was decoded.
pub(crate) struct Queued<W: Wire> {
    pub stamp: Stamp,
    pub item: Item<W>,
}

/// A request on its way to a reply, in arrival order.
pub(crate) enum Item<W: Wire> {
    /// Already answered by the reader; `events_before` messages had been queued on the
    /// connection when it looked, and go out first. `events` fired at once (re-armed watches).
    Read { tag: W::Tag, zxid: Zxid, events_before: u64, events: Vec<WatchEvent>, answer: W::Answer },
    /// The `number`th write of the connection, ordered in the log; its reply waits for apply.
    Write { tag: W::Tag, number: u64, pending: Pending, closes_session: bool },
    /// The `number`th write, refused before reaching the log.
    Refused { tag: W::Tag, number: u64, code: ErrorCode },
}

/// A sink that can give back a buffer grown large once it has nothing left to write.
pub(crate) trait Shrink {
    fn shrink_if_idle(&mut self);
}

/// The reader's end of the queue of items. Boxed, so a queue that has grown for a burst of
/// requests keeps pointers' worth of capacity afterwards, not items' worth.
pub(crate) type ItemTx<W> = queue::Sender<Box<Queued<W>>>;

/// What the writer does next: go on (with a close the server asked for, to act on once the
/// current item is done), or stop.
type Flow<T = ()> = ControlFlow<(), T>;

/// The writer's end of the queue of items: made afresh each time a parked connection wakes.
pub(crate) type ItemRx<W> = queue::Receiver<Box<Queued<W>>>;

/// What the writer keeps for the connection's whole life, parked or not; the queue of items
/// is [`serve`](WriterLoop::serve)'s.
pub(crate) struct WriterLoop<W: Wire, S> {
    pub wire: W,
    pub writer: S,
    /// The connection's messages, and its order: dropped by [`finish`](WriterLoop::finish),
    /// which tells the reader the writer is gone.
    pub out: OutboxRx,
}

impl<W, S> WriterLoop<W, S>
where
    W: Wire,
    S: Sink<W::Msg> + Shrink + Unpin + Send,
    S::Error: Display,
{
    /// Completes the items `queue` brings, and sends the connection's messages, until the
    /// connection ends; then cancels it, which ends the reader too. Given up (dropped) while
    /// it waits with nothing to do, when the connection parks (`conn/park.rs`).
    pub(crate) async fn serve(&mut self, who: Who<'_>, queue: ItemRx<W>, cancel: &CancellationToken, idle: &Idle) {
        let mut phase = Phase { w: self, who, queue };
        // Cancelled from outside too when the connection overflows its outbound bound: the
        // writer may be stuck on a client that does not read.
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {}
            _ = phase.serve_and_flush(idle) => {}
        }
        // Whatever ends the writer ends the reader too, and the connection's order: nothing
        // more is queued for it.
        self.out.end();
        cancel.cancel();
    }

    /// After the connection's end: says why the server cut it, if it did, and ends its order
    /// (rule 7 of `conn/ordering.rs`).
    pub(crate) fn finish(self, who: Who<'_>) {
        if self.out.cut() {
            tracing::info!(
                peer = %who.peer,
                session = %who.session,
                "closing connection: the server closed it and its client took none of what was still owed it in {:?}",
                crate::conn::outbox::LAST_WRITES
            );
        }
        if self.out.overflowed() {
            who.server.local.metrics.count_outbound_overflow();
            tracing::warn!(
                peer = %who.peer,
                session = %who.session,
                limit = self.out.limit(),
                "closing connection: its client does not read what is queued for it (outbound bytes past the \
                 limit); the session stays, to be resumed or to expire"
            );
        }
    }
}

/// Who the connection is, for the writer's replies and logs: lent by the connection to
/// each of its active parts rather than kept twice.
pub(crate) struct Who<'a> {
    pub server: &'a Server,
    pub peer: SocketAddr,
    pub session: SessionId,
}

/// One active part of the writer (`conn/park.rs`): the connection's writer, who it is, and
/// this part's queue of items.
struct Phase<'a, W: Wire, S> {
    w: &'a mut WriterLoop<W, S>,
    who: Who<'a>,
    queue: ItemRx<W>,
}

impl<W, S> Phase<'_, W, S>
where
    W: Wire,
    S: Sink<W::Msg> + Shrink + Unpin + Send,
    S::Error: Display,
{
    async fn serve_and_flush(&mut self, idle: &Idle) {
        let _ = self.serve_until_stop(idle).await;
        // A client that has stopped sending may never read either.
        let _ = Box::pin(tokio::time::timeout(crate::conn::outbox::LAST_WRITES, self.w.writer.flush())).await;
    }

    async fn serve_until_stop(&mut self, idle: &Idle) -> Flow {
        loop {
            // Nothing to send and nothing queued means everything was written and flushed
            // (below): the connection may park while the writer waits here.
            let waits_idle = (!self.w.out.has_sendable() && self.queue.is_empty()).then(|| idle.writer());
            // Messages first: those the fences allow are older than the next item's reply.
            let next = tokio::select! {
                biased;
                msg = self.w.out.next() => Ok(msg),
                item = self.queue.recv() => Err(item),
            };
            drop(waits_idle);
            let close = match next {
                Ok(Outbound::Close(reason)) => Some(reason),
                // Boxed here and below: the futures awaited in this loop would otherwise be
                // most of every connection's task (ward-bench f).
                Ok(msg) => {
                    Box::pin(self.send_outbound(msg)).await?;
                    None
                }
                Err(Some(queued)) => Box::pin(self.complete(*queued)).await?,
                Err(None) => return Break(()),
            };
            if let Some(reason) = close {
                Box::pin(self.close(reason)).await;
                return Break(());
            }
            if !self.w.out.has_sendable() && self.queue.is_empty() {
                if self.w.writer.flush().await.is_err() {
                    return Break(());
                }
                self.w.writer.shrink_if_idle();
            }
        }
    }

    /// The server closes the connection. Requests ordered before the close still get their
    /// replies; if one is the session's own CloseSession, its reply ends the connection.
    ///
    /// Except when this member lost contact with the leader: its writes in flight may wait
    /// seconds for a leader, and the client must move to another member now (R6); their
    /// outcome is unknown to this connection either way.
    async fn close(&mut self, reason: CloseReason) {
        if reason == CloseReason::OutOfContact {
            tracing::debug!(peer = %self.who.peer, session = %self.who.session, "out of contact: closing at once");
            return;
        }
        while let Ok(queued) = self.queue.try_recv() {
            if self.complete(*queued).await.is_break() {
                return;
            }
        }
        tracing::debug!(peer = %self.who.peer, session = %self.who.session, ?reason, "server closes connection");
        if reason == CloseReason::SessionEnded {
            if let Some(msg) = self.w.wire.session_expired() {
                if self.feed(msg).await.is_continue() {
                    self.figures().pushed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Sends every message the fences allow now (`ConnOrder::next_to_send`); the first close
    /// among them is kept in `close`, to act on after the current reply.
    async fn send_free(&mut self, close: &mut Option<CloseReason>) -> Flow {
        while let Some(msg) = self.w.out.try_next() {
            match msg {
                Outbound::Close(reason) => {
                    close.get_or_insert(reason);
                }
                msg => self.send_outbound(msg).await?,
            }
        }
        Continue(())
    }

    async fn send_outbound(&mut self, msg: Outbound) -> Flow {
        let weight = crate::conn::outbox::weight(&msg);
        let flow = match self.w.wire.outbound(msg) {
            Some(msg) => self.feed(msg).await,
            None => Continue(()),
        };
        self.w.out.release(weight);
        flow?;
        self.figures().pushed.fetch_add(1, Ordering::Relaxed);
        Continue(())
    }

    fn figures(&self) -> &ListenerFigures {
        self.who.server.local.metrics.listener(W::LISTENER)
    }

    /// Completes the item at the head of the queue: the messages that must precede its
    /// reply, then the reply; counts the reply in the request metrics once it is queued.
    /// Continues with the close the server asked for meanwhile, if it did.
    async fn complete(&mut self, queued: Queued<W>) -> Flow<Option<CloseReason>> {
        let Queued { stamp, item } = queued;
        let mut close = None;
        let (msg, failure, closes_session) = match item {
            Item::Read { tag, zxid, events_before, events, answer } => {
                // The messages its view could show (G6): those queued when it looked.
                while let Some(msg) = self.w.out.due_before_reply(events_before) {
                    match msg {
                        Outbound::Close(reason) => {
                            close.get_or_insert(reason);
                        }
                        msg => self.send_outbound(msg).await?,
                    }
                }
                for event in events {
                    self.send_outbound(Outbound::Event(event)).await?;
                }
                let weight = W::answer_weight(&answer);
                let failure = W::read_failure(&answer);
                let reply = self.w.wire.read_reply(tag, zxid, answer);
                self.feed(reply).await?;
                self.w.out.release(weight);
                self.figures().answered(stamp, failure);
                // Its fence no longer holds later messages back.
                self.w.out.replied();
                self.send_free(&mut close).await?;
                return Continue(close);
            }
            Item::Write { tag, number, mut pending, closes_session } => {
                let outcome = match pending.try_take() {
                    Some(outcome) => outcome,
                    None => {
                        if self.w.writer.flush().await.is_err() {
                            return Break(());
                        }
                        pending.await
                    }
                };
                self.w.out.applied(number);
                // Everything queued by now is at least as old as this write's apply.
                self.send_free(&mut close).await?;
                match outcome {
                    Ok(applied) => {
                        let result = match applied.outcome {
                            Outcome::Reply(result) => result,
                            Outcome::SessionCreated(_) | Outcome::Attached => Err(ErrorCode::BadArguments),
                        };
                        let failure = W::write_failure(&tag, &result);
                        (self.w.wire.write_reply(tag, applied.zxid, result), failure, closes_session)
                    }
                    Err(rejected) => match rejected.as_reply() {
                        Some(code) => {
                            (self.w.wire.write_reply(tag, self.last_zxid(), Err(code)), Some(code.into()), false)
                        }
                        None => {
                            // Neither success nor failure may be claimed: the client must
                            // see a lost connection (and resume, or learn its session ended).
                            tracing::info!(session = %self.who.session, %rejected, "closing connection: a write's outcome is unknown");
                            return Break(());
                        }
                    },
                }
            }
            Item::Refused { tag, number, code } => {
                self.w.out.applied(number);
                (self.w.wire.write_reply(tag, self.last_zxid(), Err(code)), Some(code.into()), false)
            }
        };
        self.feed(msg).await?;
        self.figures().answered(stamp, failure);
        if closes_session {
            // Our own CloseSession ends the session too; its reply already says so.
            return Break(());
        }
        Continue(close)
    }

    fn last_zxid(&self) -> Zxid {
        self.who.server.core.read(|s| s.last_zxid())
    }

    async fn feed(&mut self, msg: W::Msg) -> Flow {
        if self.w.out.overflowed() {
            // An event was dropped: a reply now could show its change without it (G6).
            return Break(());
        }
        match self.w.writer.feed(msg).await {
            Ok(()) => Continue(()),
            Err(error) => {
                tracing::debug!(%error, "connection write failed");
                Break(())
            }
        }
    }
}
