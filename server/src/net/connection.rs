//! One client connection: a reader that turns frames into ordered work items, and a writer
//! that completes them in order and interleaves watch events.
//!
//! Order is the point of this file. Replies leave in request order (writes are awaited in
//! turn, and a read runs only when it reaches the head of the queue, so it sees the
//! session's earlier writes: G2). Before each reply the writer sends every event already
//! queued; for a read, it collects them while holding the same state view the read uses,
//! so an event for any change the read can see goes out first (G6).

use super::handshake;
use crate::command::{Command, Outcome};
use crate::log::Pending;
use crate::prep::prep;
use crate::read::Reader as ReadCtx;
use crate::watch::{CloseReason, ConnId, Outbound};
use crate::{now_ms, Server};
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use ward_proto::{ClientMessage, CodecError, ErrorCode, FrameCodec, Request, Response, ServerMessage, SessionId};

pub type Reader = FramedRead<OwnedReadHalf, FrameCodec<ClientMessage, ServerMessage>>;
pub type Writer = FramedWrite<OwnedWriteHalf, FrameCodec<ClientMessage, ServerMessage>>;

/// A request on its way to a reply, in arrival order.
enum Item {
    /// Runs when it reaches the head of the queue.
    Read { xid: u64, request: Request },
    /// Ordered in the log already; its reply waits for apply.
    Write { xid: u64, pending: Pending, closes_session: bool },
    /// Refused before reaching the log.
    Done { xid: u64, result: Result<Response, ErrorCode> },
}

pub async fn serve(server: Arc<Server>, stream: TcpStream, peer: SocketAddr, conn: ConnId, cancel: CancellationToken) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
    }
    let (r, w) = stream.into_split();
    let max = server.config.max_frame_len();
    let mut reader = FramedRead::new(r, FrameCodec::new(max));
    let mut writer = FramedWrite::new(w, FrameCodec::new(max));
    let (out_tx, out_rx) = mpsc::unbounded_channel();

    let hello = handshake::run(&server, &mut reader, &mut writer, peer, conn, &out_tx);
    let session = tokio::select! {
        _ = cancel.cancelled() => return,
        r = tokio::time::timeout(server.config.handshake_timeout, hello) => match r {
            Ok(Some(session)) => session,
            Ok(None) => return,
            Err(_) => {
                tracing::info!(%peer, "closing connection: no hello in time");
                return;
            }
        },
    };
    server.core.watches.add_conn(conn, out_tx);
    let (queue_tx, queue_rx) = mpsc::channel(server.config.max_inflight_per_conn);
    let conn_cancel = cancel.child_token();
    let ctx = Conn { server: server.clone(), peer, conn, session };
    tokio::join!(
        ctx.read_loop(reader, queue_tx, conn_cancel.clone()),
        ctx.write_loop(writer, queue_rx, out_rx, conn_cancel),
    );
    server.core.watches.remove_conn(conn);
    server.core.sessions.detach(session, conn);
    tracing::debug!(%peer, %session, "connection closed");
}

struct Conn {
    server: Arc<Server>,
    peer: SocketAddr,
    conn: ConnId,
    session: SessionId,
}

impl Conn {
    async fn read_loop(&self, mut reader: Reader, queue: mpsc::Sender<Item>, cancel: CancellationToken) {
        loop {
            let frame = tokio::select! {
                _ = cancel.cancelled() => return,
                frame = reader.next() => frame,
            };
            let (xid, request) = match frame {
                None => return,
                Some(Ok(ClientMessage::Request { xid, request })) => (xid, request),
                Some(Ok(ClientMessage::Hello(_))) => return self.drop_peer("a second hello"),
                Some(Err(CodecError::Io(error))) => {
                    tracing::debug!(peer = %self.peer, %error, "connection read failed");
                    return;
                }
                Some(Err(error)) => return self.drop_peer(&error.to_string()),
            };
            self.server.core.sessions.touch(self.session);
            let closes_session = matches!(request, Request::CloseSession);
            if queue.send(self.dispatch(xid, request, closes_session)).await.is_err() || closes_session {
                return;
            }
        }
    }

    fn drop_peer(&self, why: &str) {
        tracing::warn!(peer = %self.peer, session = %self.session, reason = why, "closing connection: bad input");
    }

    fn dispatch(&self, xid: u64, request: Request, closes_session: bool) -> Item {
        if !request.is_write() {
            return Item::Read { xid, request };
        }
        if !self.server.core.sessions.is_owner(self.session, self.conn) {
            // The session moved to a newer connection (or ended): a late frame on this one
            // must not be ordered after what the new connection sends.
            return Item::Done { xid, result: Err(ErrorCode::SessionExpired) };
        }
        match prep(request, self.server.config.max_data_len) {
            Ok(op) => {
                let cmd = Command { time_ms: now_ms(), session: self.session, xid, op };
                Item::Write { xid, pending: self.server.log.submit(cmd), closes_session }
            }
            Err(code) => Item::Done { xid, result: Err(code) },
        }
    }

    async fn write_loop(
        &self,
        mut writer: Writer,
        mut queue: mpsc::Receiver<Item>,
        mut out: mpsc::UnboundedReceiver<Outbound>,
        cancel: CancellationToken,
    ) {
        // Whatever ends the writer ends the reader too.
        let _stop_reader = cancel.clone().drop_guard();
        let mut out_buf = Vec::new();
        loop {
            let step = tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                msg = out.recv() => self.outbound(&mut writer, msg, &mut queue, &mut out, &mut out_buf).await,
                item = queue.recv() => match item {
                    Some(item) => self.complete(&mut writer, item, &mut out, &mut out_buf).await,
                    None => Step::Stop,
                },
            };
            let step = match step {
                Step::Continue if out.is_empty() && queue.is_empty() => match writer.flush().await {
                    Ok(()) => Step::Continue,
                    Err(_) => Step::Stop,
                },
                step => step,
            };
            if let Step::Stop = step {
                let _ = writer.flush().await;
                return;
            }
        }
    }

    async fn outbound(
        &self,
        writer: &mut Writer,
        msg: Option<Outbound>,
        queue: &mut mpsc::Receiver<Item>,
        out: &mut mpsc::UnboundedReceiver<Outbound>,
        buf: &mut Vec<Outbound>,
    ) -> Step {
        match msg {
            Some(Outbound::Event(event)) => feed(writer, ServerMessage::Event(event)).await,
            Some(Outbound::LockGranted { path, token }) => {
                feed(writer, ServerMessage::LockGranted { path, token }).await
            }
            Some(Outbound::Close(reason)) => {
                // Requests ordered before the close still get their replies; if one of them
                // is this session's own CloseSession, its reply ends the connection.
                while let Ok(item) = queue.try_recv() {
                    if let Step::Stop = self.complete(writer, item, out, buf).await {
                        return Step::Stop;
                    }
                }
                self.close(writer, reason).await
            }
            None => Step::Stop,
        }
    }

    async fn close(&self, writer: &mut Writer, reason: CloseReason) -> Step {
        tracing::debug!(peer = %self.peer, session = %self.session, ?reason, "server closes connection");
        if reason == CloseReason::SessionEnded {
            let _ = feed(writer, ServerMessage::SessionExpired).await;
        }
        Step::Stop
    }

    /// Completes the item at the head of the queue: its events first, then its reply.
    async fn complete(
        &self,
        writer: &mut Writer,
        item: Item,
        out: &mut mpsc::UnboundedReceiver<Outbound>,
        buf: &mut Vec<Outbound>,
    ) -> Step {
        let (xid, zxid, result, closes_session) = match item {
            Item::Read { xid, request } => {
                let mut events = Vec::new();
                let ctx = ReadCtx { core: &self.server.core, conn: self.conn, session: self.session };
                let (zxid, result) = self.server.core.read(|state| {
                    drain(out, buf);
                    (state.last_zxid(), ctx.execute(state, request, &mut events))
                });
                buf.extend(events.into_iter().map(Outbound::Event));
                (xid, zxid, result, false)
            }
            Item::Write { xid, mut pending, closes_session } => {
                let applied = match pending.try_take() {
                    Some(applied) => applied,
                    None => {
                        if writer.flush().await.is_err() {
                            return Step::Stop;
                        }
                        pending.await
                    }
                };
                drain(out, buf);
                match applied {
                    Ok(applied) => {
                        let result = match applied.outcome {
                            Outcome::Reply(result) => result,
                            Outcome::SessionCreated(_) => Err(ErrorCode::BadArguments),
                        };
                        (xid, applied.zxid, result, closes_session)
                    }
                    Err(code) => (xid, self.server.core.read(|s| s.last_zxid()), Err(code), false),
                }
            }
            Item::Done { xid, result } => {
                drain(out, buf);
                (xid, self.server.core.read(|s| s.last_zxid()), result, false)
            }
        };
        let mut close = None;
        for msg in buf.drain(..) {
            match msg {
                Outbound::Event(event) => {
                    if let Step::Stop = feed(writer, ServerMessage::Event(event)).await {
                        return Step::Stop;
                    }
                }
                Outbound::LockGranted { path, token } => {
                    if let Step::Stop = feed(writer, ServerMessage::LockGranted { path, token }).await {
                        return Step::Stop;
                    }
                }
                Outbound::Close(reason) => close = close.or(Some(reason)),
            }
        }
        if let Step::Stop = feed(writer, ServerMessage::Reply { xid, zxid, result }).await {
            return Step::Stop;
        }
        match close {
            // Our own CloseSession ends the session too; the reply already says so.
            Some(_) if closes_session => Step::Stop,
            Some(reason) => self.close(writer, reason).await,
            None if closes_session => Step::Stop,
            None => Step::Continue,
        }
    }
}

enum Step {
    Continue,
    Stop,
}

fn drain(out: &mut mpsc::UnboundedReceiver<Outbound>, buf: &mut Vec<Outbound>) {
    while let Ok(msg) = out.try_recv() {
        buf.push(msg);
    }
}

async fn feed(writer: &mut Writer, msg: ServerMessage) -> Step {
    match writer.feed(msg).await {
        Ok(()) => Step::Continue,
        Err(error) => {
            tracing::debug!(%error, "connection write failed");
            Step::Stop
        }
    }
}
