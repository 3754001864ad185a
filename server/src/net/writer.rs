//! The writing half of a connection: replies in request order, with server-initiated
//! messages (watch events, lock grants, closes) placed before the replies that must follow
//! them.
//!
//! The ordering logic is shared by both listeners: what differs between Ward's protocol and
//! ZooKeeper's is only how a reply or an event is encoded, which a [`Wire`] says.

use super::order::{AppliedTx, Fences};
use super::queue;
use crate::command::Outcome;
use crate::log::Pending;
use crate::metrics::{Failure, Listener, ListenerFigures, Stamp};
use crate::outbox::OutboxRx;
use crate::watch::{CloseReason, Outbound};
use crate::Server;
use futures_util::{Sink, SinkExt};
use std::collections::VecDeque;
use std::fmt::Display;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use ward_proto::{ErrorCode, Response, SessionId, WatchEvent, Zxid};

/// How one protocol encodes what the writer sends.
pub trait Wire: Send {
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
    /// connection's bound on outbound bytes (`crate::outbox`).
    fn answer_weight(answer: &Self::Answer) -> u64;
    /// How a read's answer failed, if it did (for the request metrics).
    fn read_failure(answer: &Self::Answer) -> Option<Failure>;
    /// How a write's result failed, if it did, as its reply will say.
    fn write_failure(_tag: &Self::Tag, result: &Result<Response, ErrorCode>) -> Option<Failure> {
        Failure::of_write(result)
    }
}

/// An item with its stamp: what the request was and when its frame was decoded.
pub struct Queued<W: Wire> {
    pub stamp: Stamp,
    pub item: Item<W>,
}

/// A request on its way to a reply, in arrival order.
pub enum Item<W: Wire> {
    /// Already answered by the reader; `events_before` messages had been queued on the
    /// connection when it looked, and go out first. `events` fired at once (re-armed watches).
    Read { tag: W::Tag, zxid: Zxid, events_before: u64, events: Vec<WatchEvent>, answer: W::Answer },
    /// The `number`th write of the connection, ordered in the log; its reply waits for apply.
    Write { tag: W::Tag, number: u64, pending: Pending, closes_session: bool },
    /// The `number`th write, refused before reaching the log.
    Refused { tag: W::Tag, number: u64, code: ErrorCode },
}

/// A sink that can give back a buffer grown large once it has nothing left to write.
pub trait Shrink {
    fn shrink_if_idle(&mut self);
}

/// The reader's end of the queue of items. Boxed, so a queue that has grown for a burst of
/// requests keeps pointers' worth of capacity afterwards, not items' worth.
pub type ItemTx<W> = queue::Sender<Box<Queued<W>>>;

enum Step {
    Continue,
    /// The server closes the connection once the replies already due are out.
    Close(CloseReason),
    Stop,
}

pub struct WriterLoop<W: Wire, S> {
    pub server: Arc<Server>,
    pub peer: SocketAddr,
    pub session: SessionId,
    pub wire: W,
    pub writer: S,
    pub queue: queue::Receiver<Box<Queued<W>>>,
    pub out: OutboxRx,
    /// Messages taken from `out` so far; compared with the outbox's count of those queued.
    pub taken: u64,
    /// Messages taken but held back by a fence (the last `held.len()` of those taken).
    pub held: VecDeque<Outbound>,
    pub fences: Fences,
}

impl<W, S> WriterLoop<W, S>
where
    W: Wire,
    S: Sink<W::Msg> + Shrink + Unpin + Send,
    S::Error: Display,
{
    pub async fn run(mut self, applied: AppliedTx, cancel: CancellationToken) {
        // Whatever ends the writer ends the reader too.
        let _stop_reader = cancel.clone().drop_guard();
        // Cancelled from outside too when the connection overflows its outbound bound: the
        // writer may be stuck on a client that does not read.
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {}
            _ = self.serve(&applied) => {}
        }
        if self.out.overflowed() {
            tracing::warn!(
                peer = %self.peer,
                session = %self.session,
                limit = self.out.limit(),
                "closing connection: its client does not read what is queued for it (outbound bytes past the \
                 limit); the session stays, to be resumed or to expire"
            );
        }
    }

    async fn serve(&mut self, applied: &AppliedTx) {
        loop {
            let step = tokio::select! {
                biased;
                msg = self.out.recv() => match msg {
                    Some(msg) => {
                        self.taken += 1;
                        match msg {
                            Outbound::Close(reason) => Step::Close(reason),
                            msg => Box::pin(self.send_or_hold(msg)).await,
                        }
                    }
                    None => Step::Stop,
                },
                item = self.queue.recv() => match item {
                    // Boxed here and below: the futures awaited in this loop would otherwise
                    // be most of every connection's task, idle or not (ward-bench f).
                    Some(queued) => Box::pin(self.complete(*queued, applied)).await,
                    None => Step::Stop,
                },
            };
            let step = match step {
                Step::Close(reason) => Box::pin(self.close(reason, applied)).await,
                step => step,
            };
            let step = match step {
                Step::Continue if self.out.is_empty() && self.queue.is_empty() => match self.writer.flush().await {
                    Ok(()) => {
                        self.writer.shrink_if_idle();
                        Step::Continue
                    }
                    Err(_) => Step::Stop,
                },
                step => step,
            };
            if let Step::Stop = step {
                let _ = self.writer.flush().await;
                return;
            }
        }
    }

    /// The server closes the connection. Requests ordered before the close still get their
    /// replies; if one is the session's own CloseSession, its reply ends the connection.
    ///
    /// Except when this member lost contact with the leader: its writes in flight may wait
    /// seconds for a leader, and the client must move to another member now (R6); their
    /// outcome is unknown to this connection either way.
    async fn close(&mut self, reason: CloseReason, applied: &AppliedTx) -> Step {
        if reason == CloseReason::OutOfContact {
            tracing::debug!(peer = %self.peer, session = %self.session, "out of contact: closing at once");
            return Step::Stop;
        }
        while let Ok(queued) = self.queue.try_recv() {
            if let Step::Stop = self.complete(*queued, applied).await {
                return Step::Stop;
            }
        }
        tracing::debug!(peer = %self.peer, session = %self.session, ?reason, "server closes connection");
        if reason == CloseReason::SessionEnded {
            if let Some(msg) = self.wire.session_expired() {
                if let Step::Continue = self.feed(msg).await {
                    self.figures().pushed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Step::Stop
    }

    /// Sends a message just taken, unless a read that has not seen its change is still to
    /// be answered (or older messages are held): then it waits for that reply.
    async fn send_or_hold(&mut self, msg: Outbound) -> Step {
        if self.held.is_empty() && self.fences.allows(self.taken) {
            self.send_outbound(msg).await
        } else {
            self.held.push_back(msg);
            Step::Continue
        }
    }

    /// Sends the held messages the fences now allow.
    async fn release_held(&mut self) -> Step {
        while !self.held.is_empty() {
            let index = self.taken - self.held.len() as u64 + 1;
            if !self.fences.allows(index) {
                break;
            }
            if let Some(msg) = self.held.pop_front() {
                if let Step::Stop = self.send_outbound(msg).await {
                    return Step::Stop;
                }
            }
        }
        Step::Continue
    }

    async fn send_outbound(&mut self, msg: Outbound) -> Step {
        let weight = crate::outbox::weight(&msg);
        let step = match self.wire.outbound(msg) {
            Some(msg) => self.feed(msg).await,
            None => Step::Continue,
        };
        self.out.release(weight);
        if let Step::Continue = step {
            self.figures().pushed.fetch_add(1, Ordering::Relaxed);
        }
        step
    }

    fn figures(&self) -> &ListenerFigures {
        W::LISTENER.figures()
    }

    /// Completes the item at the head of the queue: the messages that must precede its
    /// reply, then the reply; counts the reply in the request metrics once it is queued.
    async fn complete(&mut self, queued: Queued<W>, applied: &AppliedTx) -> Step {
        let Queued { stamp, item } = queued;
        let mut close = None;
        let (msg, failure, closes_session) = match item {
            Item::Read { tag, zxid, events_before, events, answer } => {
                // Held messages come first: they are older than any still in `out`.
                while self.taken - (self.held.len() as u64) < events_before {
                    let Some(msg) = self.held.pop_front() else { break };
                    if let Step::Stop = self.send_outbound(msg).await {
                        return Step::Stop;
                    }
                }
                while self.taken < events_before {
                    let msg = self.out.recv().await;
                    self.taken += 1;
                    match msg {
                        Some(Outbound::Close(reason)) => close = close.or(Some(reason)),
                        Some(msg) => {
                            if let Step::Stop = self.send_outbound(msg).await {
                                return Step::Stop;
                            }
                        }
                        None => return Step::Stop,
                    }
                }
                for event in events {
                    if let Step::Stop = self.send_outbound(Outbound::Event(event)).await {
                        return Step::Stop;
                    }
                }
                let weight = W::answer_weight(&answer);
                let failure = W::read_failure(&answer);
                let reply = self.wire.read_reply(tag, zxid, answer);
                if let Step::Stop = self.feed(reply).await {
                    return Step::Stop;
                }
                self.out.release(weight);
                self.figures().answered(stamp, failure);
                self.fences.pop();
                if let Step::Stop = self.release_held().await {
                    return Step::Stop;
                }
                return match close {
                    Some(reason) => Step::Close(reason),
                    None => Step::Continue,
                };
            }
            Item::Write { tag, number, mut pending, closes_session } => {
                let outcome = match pending.try_take() {
                    Some(outcome) => outcome,
                    None => {
                        if self.writer.flush().await.is_err() {
                            return Step::Stop;
                        }
                        pending.await
                    }
                };
                applied.set(number);
                // Everything queued by now is at least as old as this write's apply.
                while let Ok(msg) = self.out.try_recv() {
                    self.taken += 1;
                    match msg {
                        Outbound::Close(reason) => close = close.or(Some(reason)),
                        msg => {
                            if let Step::Stop = self.send_or_hold(msg).await {
                                return Step::Stop;
                            }
                        }
                    }
                }
                match outcome {
                    Ok(applied) => {
                        let result = match applied.outcome {
                            Outcome::Reply(result) => result,
                            Outcome::SessionCreated(_) | Outcome::Attached => Err(ErrorCode::BadArguments),
                        };
                        let failure = W::write_failure(&tag, &result);
                        (self.wire.write_reply(tag, applied.zxid, result), failure, closes_session)
                    }
                    Err(rejected) => match rejected.as_reply() {
                        Some(code) => {
                            (self.wire.write_reply(tag, self.last_zxid(), Err(code)), Some(code.into()), false)
                        }
                        None => {
                            // Neither success nor failure may be claimed: the client must
                            // see a lost connection (and resume, or learn its session ended).
                            tracing::info!(session = %self.session, %rejected, "closing connection: a write's outcome is unknown");
                            return Step::Stop;
                        }
                    },
                }
            }
            Item::Refused { tag, number, code } => {
                applied.set(number);
                (self.wire.write_reply(tag, self.last_zxid(), Err(code)), Some(code.into()), false)
            }
        };
        if let Step::Stop = self.feed(msg).await {
            return Step::Stop;
        }
        self.figures().answered(stamp, failure);
        match close {
            // Our own CloseSession ends the session too; its reply already says so.
            Some(_) | None if closes_session => Step::Stop,
            Some(reason) => Step::Close(reason),
            None => Step::Continue,
        }
    }

    fn last_zxid(&self) -> Zxid {
        self.server.core.read(|s| s.last_zxid())
    }

    async fn feed(&mut self, msg: W::Msg) -> Step {
        if self.out.overflowed() {
            // An event was dropped: a reply now could show its change without it (G6).
            return Step::Stop;
        }
        match self.writer.feed(msg).await {
            Ok(()) => Step::Continue,
            Err(error) => {
                tracing::debug!(%error, "connection write failed");
                Step::Stop
            }
        }
    }
}
