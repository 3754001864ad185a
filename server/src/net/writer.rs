//! The writing half of a connection: replies in request order, with server-initiated
//! messages (watch events, lock grants, closes) placed before the replies that must follow
//! them.

use super::connection::Writer;
use crate::command::Outcome;
use crate::log::Pending;
use crate::watch::{CloseReason, Outbound};
use crate::Server;
use futures_util::SinkExt;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use ward_proto::{ErrorCode, Response, ServerMessage, SessionId, WatchEvent, Zxid};

/// A request on its way to a reply, in arrival order.
pub enum Item {
    /// Already answered by the reader; `events_before` messages had been queued on the
    /// connection when it looked, and go out first. `events` fired at once (re-armed watches).
    Read { xid: u64, zxid: Zxid, events_before: u64, events: Vec<WatchEvent>, result: Result<Response, ErrorCode> },
    /// The `number`th write of the connection, ordered in the log; its reply waits for apply.
    Write { xid: u64, number: u64, pending: Pending, closes_session: bool },
    /// The `number`th write, refused before reaching the log.
    Refused { xid: u64, number: u64, code: ErrorCode },
}

enum Step {
    Continue,
    /// The server closes the connection once the replies already due are out.
    Close(CloseReason),
    Stop,
}

pub struct WriterLoop {
    pub server: Arc<Server>,
    pub peer: SocketAddr,
    pub session: SessionId,
    pub writer: Writer,
    pub queue: mpsc::Receiver<Item>,
    pub out: mpsc::UnboundedReceiver<Outbound>,
    /// Messages taken from `out` so far; compared with the outbox's count of those queued.
    pub taken: u64,
}

impl WriterLoop {
    pub async fn run(mut self, applied: watch::Sender<u64>, cancel: CancellationToken) {
        // Whatever ends the writer ends the reader too.
        let _stop_reader = cancel.clone().drop_guard();
        loop {
            let step = tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                msg = self.out.recv() => match msg {
                    Some(msg) => {
                        self.taken += 1;
                        match msg {
                            Outbound::Close(reason) => Step::Close(reason),
                            msg => self.send_outbound(msg).await,
                        }
                    }
                    None => Step::Stop,
                },
                item = self.queue.recv() => match item {
                    Some(item) => self.complete(item, &applied).await,
                    None => Step::Stop,
                },
            };
            let step = match step {
                Step::Close(reason) => self.close(reason, &applied).await,
                step => step,
            };
            let step = match step {
                Step::Continue if self.out.is_empty() && self.queue.is_empty() => match self.writer.flush().await {
                    Ok(()) => Step::Continue,
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
    async fn close(&mut self, reason: CloseReason, applied: &watch::Sender<u64>) -> Step {
        while let Ok(item) = self.queue.try_recv() {
            if let Step::Stop = self.complete(item, applied).await {
                return Step::Stop;
            }
        }
        tracing::debug!(peer = %self.peer, session = %self.session, ?reason, "server closes connection");
        if reason == CloseReason::SessionEnded {
            let _ = self.feed(ServerMessage::SessionExpired).await;
        }
        Step::Stop
    }

    async fn send_outbound(&mut self, msg: Outbound) -> Step {
        match msg {
            Outbound::Event(event) => self.feed(ServerMessage::Event(event)).await,
            Outbound::LockGranted { path, token } => self.feed(ServerMessage::LockGranted { path, token }).await,
            Outbound::Close(_) => Step::Stop,
        }
    }

    /// Completes the item at the head of the queue: the messages that must precede its
    /// reply, then the reply.
    async fn complete(&mut self, item: Item, applied: &watch::Sender<u64>) -> Step {
        let mut close = None;
        let (xid, zxid, result, closes_session) = match item {
            Item::Read { xid, zxid, events_before, events, result } => {
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
                    if let Step::Stop = self.feed(ServerMessage::Event(event)).await {
                        return Step::Stop;
                    }
                }
                (xid, zxid, result, false)
            }
            Item::Write { xid, number, mut pending, closes_session } => {
                let outcome = match pending.try_take() {
                    Some(outcome) => outcome,
                    None => {
                        if self.writer.flush().await.is_err() {
                            return Step::Stop;
                        }
                        pending.await
                    }
                };
                applied.send_replace(number);
                // Everything queued by now is at least as old as this write's apply.
                while let Ok(msg) = self.out.try_recv() {
                    self.taken += 1;
                    match msg {
                        Outbound::Close(reason) => close = close.or(Some(reason)),
                        msg => {
                            if let Step::Stop = self.send_outbound(msg).await {
                                return Step::Stop;
                            }
                        }
                    }
                }
                match outcome {
                    Ok(applied) => {
                        let result = match applied.outcome {
                            Outcome::Reply(result) => result,
                            Outcome::SessionCreated(_) => Err(ErrorCode::BadArguments),
                        };
                        (xid, applied.zxid, result, closes_session)
                    }
                    Err(code) => (xid, self.last_zxid(), Err(code), false),
                }
            }
            Item::Refused { xid, number, code } => {
                applied.send_replace(number);
                (xid, self.last_zxid(), Err(code), false)
            }
        };
        if let Step::Stop = self.feed(ServerMessage::Reply { xid, zxid, result }).await {
            return Step::Stop;
        }
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

    async fn feed(&mut self, msg: ServerMessage) -> Step {
        match self.writer.feed(msg).await {
            Ok(()) => Step::Continue,
            Err(error) => {
                tracing::debug!(%error, "connection write failed");
                Step::Stop
            }
        }
    }
}
