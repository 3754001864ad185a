//! One ZooKeeper connection: four-letter words, the connect handshake, then requests through
//! the same ordering machinery as Ward's own connections (`conn::ordering`, `conn::writer`): a
//! session's requests are answered in the order sent, reads see the session's earlier
//! writes, and a notification goes out before any reply that could show its change.

use super::frames::Frames;
use super::jute::In;
use super::ops::{self, Action, ReadOp, Render};
use super::records::{connect_response, err, ConnectRequest};
use super::reply::{ZkAnswer, ZkTag, ZkWire};
use super::stats::{ConnStats, Shared};
use super::{fourlw, MAX_PACKET, MAX_REPLY};
use crate::acl::Identity;
use crate::command::CommandOp;
use crate::conn::counted::Counted;
use crate::conn::outbox::{OutboundTx, Outbox, OutboxRx};
use crate::conn::park::Idle;
use crate::conn::session_conn::{ReadSide, SessionConn};
use crate::conn::writer::{Item, ItemTx};
use crate::conn::Attached;
use crate::conn::ConnId;
use crate::metrics::Stamp;
use crate::net::handshake;
use crate::tls::stream::{Incoming, ReadHalf, WriteHalf};
use crate::Server;
use bytes::Bytes;
use futures_util::{FutureExt, SinkExt, StreamExt};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;
use ward_proto::{ErrorCode, Request, SessionId, SessionSecret};

type Reader = FramedRead<Counted<ReadHalf, ZkWire>, Frames>;
type Writer = FramedWrite<Counted<WriteHalf, ZkWire>, Frames>;

pub fn serve(
    server: Arc<Server>,
    shared: Arc<Shared>,
    incoming: Incoming,
    peer: SocketAddr,
    conn: ConnId,
    cancel: CancellationToken,
) -> impl Future<Output = ()> {
    let stats = shared.open(conn, peer);
    // Combinators, not an async fn, which would keep its arguments beside the futures it
    // awaits; the handshake is boxed, so that its state is not part of the connection's
    // task for as long as the session stays connected.
    let opened = Box::pin(open(server, shared.clone(), stats, incoming, peer, conn, cancel));
    let served = opened.then(|opened| match opened {
        Some((ctx, reader, writer, out_rx, wire)) => Either::Left(ctx.run(out_rx, wire, writer, reader)),
        None => Either::Right(std::future::ready(())),
    });
    served.map(move |()| shared.close(conn))
}

/// What a connection is made of once its session is attached.
type Opened = (SessionConn, ZkReader, Writer, OutboxRx, ZkWire);

/// Four-letter words (answered, then `None`), the TLS handshake if any, and the connect
/// request, which share the handshake timeout.
async fn open(
    server: Arc<Server>,
    shared: Arc<Shared>,
    stats: Arc<ConnStats>,
    incoming: Incoming,
    peer: SocketAddr,
    conn: ConnId,
    cancel: CancellationToken,
) -> Option<Opened> {
    // The TLS handshake (secure client port), the first bytes and the connect request share
    // the handshake timeout.
    let deadline = Instant::now() + server.config.handshake_timeout;
    let stream = incoming.open(peer, deadline, &cancel).await?;
    let (r, w, cert_subject) = stream.into_parts();
    let metrics = &server.local.metrics;
    let (mut r, mut w) = (Counted::<_, ZkWire>::new(r, metrics.clone()), Counted::<_, ZkWire>::new(w, metrics.clone()));
    // ZooKeeper reads the first four bytes as a length, unless they spell a command.
    let mut head = [0u8; 4];
    let first = tokio::time::timeout_at(deadline, r.read_exact(&mut head));
    tokio::select! {
        _ = cancel.cancelled() => return None,
        read = first => if !matches!(read, Ok(Ok(_))) { return None },
    }
    if let Some(word) = fourlw::Word::parse(&head) {
        let text = fourlw::answer(word, &server, &shared);
        let _ = w.write_all(text.as_bytes()).await;
        let _ = w.shutdown().await;
        return None;
    }
    // The length is judged now: the framed reader would first wait for more bytes.
    if u32::from_be_bytes(head) as usize > MAX_PACKET {
        tracing::warn!(%peer, len = u32::from_be_bytes(head), "closing ZooKeeper connection: packet too large");
        return None;
    }
    let mut reader = FramedRead::with_capacity(r, Frames::new(MAX_PACKET), crate::net::connection::FIRST_BUFFER);
    reader.read_buffer_mut().extend_from_slice(&head);
    let mut writer = FramedWrite::with_capacity(w, Frames::new(MAX_REPLY), 0);
    writer.set_backpressure_boundary(crate::net::connection::FLUSH_AT);
    let (outbox, out_rx) = Outbox::bounded(server.config.max_outbound_bytes, cancel.clone());
    let connect = connect(&server, &mut reader, &mut writer, peer, conn, &outbox);
    let attached = tokio::select! {
        _ = cancel.cancelled() => return None,
        r = tokio::time::timeout_at(deadline, connect) => match r {
            Ok(attached) => attached?,
            Err(_) => {
                tracing::info!(%peer, "closing ZooKeeper connection: no connect request in time");
                return None;
            }
        },
    };
    let session = attached.session;
    stats.session.store(session.0, Ordering::Relaxed);
    let timeout = server.core.read(|s| s.session(session).map_or(0, |r| r.timeout_ms));
    stats.timeout_ms.store(timeout, Ordering::Relaxed);
    let identity = Identity::for_connection(peer.ip(), cert_subject);
    let ctx = SessionConn::new(server, peer, conn, attached, outbox, identity);
    let wire = ZkWire { stats: stats.clone() };
    Some((ctx, ZkReader { reader, stats }, writer, out_rx, wire))
}

/// Reads ZooKeeper's frames.
pub struct ZkReader {
    reader: Reader,
    stats: Arc<ConnStats>,
}

impl ReadSide<ZkWire> for ZkReader {
    fn read_loop<'a>(
        &'a mut self,
        ctx: &'a SessionConn,
        queue: ItemTx<ZkWire>,
        cancel: &'a CancellationToken,
        idle: &'a Idle,
    ) -> impl Future<Output = ()> + Send + 'a {
        read_loop(ctx, &self.stats, &mut self.reader, queue, cancel, idle)
    }

    fn park(&mut self) -> Option<&TcpStream> {
        crate::net::connection::park(&mut self.reader)
    }
}

/// The connect handshake: a new session, or a resumed one shown with its password.
async fn connect(
    server: &Server,
    reader: &mut Reader,
    writer: &mut Writer,
    peer: SocketAddr,
    conn: ConnId,
    tx: &OutboundTx,
) -> Option<Attached> {
    let frame = match reader.next().await? {
        Ok(frame) => frame,
        Err(error) => {
            tracing::warn!(%peer, %error, "closing ZooKeeper connection: bad connect frame");
            return None;
        }
    };
    let req = match ConnectRequest::decode(&frame) {
        Ok(req) => req,
        Err(error) => {
            tracing::warn!(%peer, %error, "closing ZooKeeper connection: malformed connect request");
            return None;
        }
    };
    let session = SessionId(u64::try_from(req.session_id).unwrap_or(0));
    let last_zxid = server.core.read(|s| s.last_zxid());
    let known = session.0 != 0 && server.core.read(|s| s.session(session).is_some());
    if known && u64::try_from(req.last_zxid_seen).unwrap_or(0) > last_zxid {
        // ZooKeeper's answer too: close, so the client tries a server that has caught up.
        tracing::info!(%peer, seen = req.last_zxid_seen, last_zxid, "refusing ZooKeeper client ahead of this server");
        return None;
    }
    let result = if session.0 == 0 {
        let timeout = u32::try_from(req.timeout_ms).unwrap_or(0);
        handshake::create(server, timeout, None, conn, tx).await
    } else {
        match <[u8; 16]>::try_from(req.passwd.as_slice()) {
            Ok(secret) => handshake::resume(server, session, SessionSecret(secret), conn, tx).await,
            Err(_) => Err((ErrorCode::SessionExpired, "password of the wrong length".into())),
        }
    };
    match result {
        Ok((welcome, epoch)) => {
            tracing::debug!(%peer, session = %welcome.session_id, read_only = req.read_only, "ZooKeeper session attached");
            let body = connect_response(welcome.timeout_ms, welcome.session_id, &welcome.secret.0);
            writer.send(Bytes::from(body)).await.ok()?;
            Some(Attached { session: welcome.session_id, epoch })
        }
        Err((ErrorCode::SessionExpired, why)) => {
            // A zero timeout is how ZooKeeper tells a client its session is gone.
            tracing::info!(%peer, %why, "ZooKeeper session expired");
            let _ = writer.send(Bytes::from(connect_response(0, SessionId(0), &[0; 16]))).await;
            None
        }
        Err((code, why)) => {
            tracing::info!(%peer, ?code, %why, "closing ZooKeeper connection");
            None
        }
    }
}

async fn read_loop(
    ctx: &SessionConn,
    stats: &ConnStats,
    reader: &mut Reader,
    queue: ItemTx<ZkWire>,
    cancel: &CancellationToken,
    idle: &Idle,
) {
    loop {
        let frame = tokio::select! {
            _ = cancel.cancelled() => return,
            frame = crate::net::connection::next_frame(reader, idle) => frame,
        };
        crate::net::connection::shrink_if_idle(reader.read_buffer_mut());
        let frame = match frame {
            None => return,
            Some(Ok(frame)) => frame,
            Some(Err(error)) => return drop_peer(ctx, &error.to_string()),
        };
        let mut r = In::new(&frame);
        let (xid, code) = match (r.int(), r.int()) {
            (Ok(xid), Ok(code)) => (xid, code),
            _ => return drop_peer(ctx, "request header ends early"),
        };
        let stamp = Stamp::now(ops::metric_op(code));
        stats.received(xid);
        ctx.server.local.sessions.touch(ctx.session);
        let action = match ops::parse(code, &mut r) {
            Ok(action) => action,
            Err(error) => return drop_peer(ctx, &format!("opcode {code}: {error}")),
        };
        let mut closes_session = false;
        let item = match action {
            Action::Write { request, render, nulls } => {
                closes_session = matches!(render, Render::CloseSession);
                let number = ctx.next_write();
                let tag = ZkTag { xid, render };
                let wrap = |op| match nulls.is_empty() {
                    true => op,
                    false => CommandOp::NullData { nulls, op: Box::new(op) },
                };
                // xid 0: ZooKeeper clients never resend, so their writes need no dedup record.
                match ctx.submit_with(0, request, wrap) {
                    Ok(pending) => Item::Write { tag, number, pending, closes_session },
                    Err(code) => Item::Refused { tag, number, code },
                }
            }
            Action::Read(op) => {
                // FIFO per session: the writes sent before this read are applied first.
                if !ctx.caught_up(cancel).await {
                    return;
                }
                let needs = match &op {
                    // Only these wait: other reads go on without a copy of the request.
                    ReadOp::Ward(request @ Request::Sync { .. }) => Some(request.clone()),
                    ReadOp::Ping => Some(Request::Ping),
                    _ => None,
                };
                let prepared = match needs {
                    Some(request) => tokio::select! {
                        _ = cancel.cancelled() => return,
                        r = ctx.prepare(&request) => r,
                    },
                    None => None,
                };
                // A refused ping (the leader is ending the session): ZooKeeper's clients take
                // any reply to a ping as a heartbeat, so the connection is closed instead; the
                // client's resume elsewhere is refused likewise until the session's end is
                // applied and it is told.
                if matches!(op, ReadOp::Ping) && prepared.is_some() {
                    tracing::debug!(peer = %ctx.peer, session = %ctx.session, "ping refused: closing the ZooKeeper connection");
                    return;
                }
                // ZooKeeper has no membership requests here: only a failed sync comes back,
                // and a ZooKeeper client is told its connection is lost.
                if prepared.is_some() {
                    let (zxid, events_before, answer) = ctx.view(|_, _| ZkAnswer::fail(err::CONNECTION_LOSS));
                    let tag = ZkTag { xid, render: Render::None };
                    let item = Item::Read { tag, zxid, events_before, events: Vec::new(), answer };
                    if ctx.queue(&queue, stamp, item).await.is_err() {
                        return;
                    }
                    continue;
                }
                let mut events = Vec::new();
                let (zxid, events_before, answer) =
                    ctx.view(|local, state| super::read::execute(ctx, local, state, op, &mut events));
                let answer = match answer.oversized(MAX_REPLY) {
                    Some(bytes) => {
                        tracing::warn!(peer = %ctx.peer, session = %ctx.session, xid, bytes, limit = MAX_REPLY,
                            "ZooKeeper reply over the reply limit: answered with MARSHALLINGERROR");
                        ZkAnswer::fail(err::MARSHALLING_ERROR)
                    }
                    None => answer,
                };
                Item::Read { tag: ZkTag { xid, render: Render::None }, zxid, events_before, events, answer }
            }
            Action::Fail(code) => {
                // Answered as a read: after the session's earlier writes (G2, G6).
                if !ctx.caught_up(cancel).await {
                    return;
                }
                let (zxid, events_before, answer) = ctx.view(|_, _| ZkAnswer::fail(code));
                Item::Read { tag: ZkTag { xid, render: Render::None }, zxid, events_before, events: Vec::new(), answer }
            }
            Action::Auth { scheme, credentials } => {
                // ZooKeeper answers AUTHFAILED and then closes the connection, so that the
                // client can try another server; its session lives on. Answered as a read:
                // after the session's earlier writes.
                if !ctx.caught_up(cancel).await {
                    return;
                }
                let failed = ctx.add_auth(&scheme, &credentials.0).is_err();
                closes_session = failed;
                let answer = ZkAnswer::fail(if failed { err::AUTH_FAILED } else { err::OK });
                let (zxid, events_before, answer) = ctx.view(|_, _| answer);
                Item::Read { tag: ZkTag { xid, render: Render::Auth }, zxid, events_before, events: Vec::new(), answer }
            }
        };
        if ctx.queue(&queue, stamp, item).await.is_err() || closes_session {
            return;
        }
    }
}

fn drop_peer(ctx: &SessionConn, why: &str) {
    tracing::warn!(peer = %ctx.peer, session = %ctx.session, reason = why, "closing ZooKeeper connection: bad input");
}
