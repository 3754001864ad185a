//! One ZooKeeper connection: four-letter words, the connect handshake, then ZooKeeper's
//! requests decoded for the same driver as Ward's own connections (`conn/driver.rs`): a
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
use crate::conn::counted::Counted;
use crate::conn::driver::{Decoded, Protocol};
use crate::conn::outbox::{OutboundTx, Outbox, OutboxRx};
use crate::conn::park::Idle;
use crate::conn::session_conn::SessionConn;
use crate::conn::Attached;
use crate::conn::ConnId;
use crate::metrics::Stamp;
use crate::net::handshake;
use crate::state::StateMachine;
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
use ward_proto::{ErrorCode, Request, Response, SessionId, SessionSecret, WatchEvent};

type Reader = FramedRead<Counted<ReadHalf, ZkWire>, Frames>;
type Writer = FramedWrite<Counted<WriteHalf, ZkWire>, Frames>;

pub(crate) fn serve(
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

/// ZooKeeper's requests, as the driver takes them.
pub(crate) struct ZkReader {
    reader: Reader,
    stats: Arc<ConnStats>,
}

/// The request a ZooKeeper ping waits as (a confirmed contact with the leader).
const PING: &Request = &Request::Ping;

impl Protocol for ZkReader {
    type Wire = ZkWire;
    type Read = ReadOp;

    fn next<'a>(
        &'a mut self,
        ctx: &'a SessionConn,
        idle: &'a Idle,
    ) -> impl Future<Output = Option<(Stamp, Decoded<Self>)>> + Send + 'a {
        next_request(ctx, &self.stats, &mut self.reader, idle)
    }

    /// Only a sync and a ping wait; other reads go on at once.
    fn waits_for(op: &ReadOp) -> Option<&Request> {
        match op {
            ReadOp::Ward(request @ Request::Sync { .. }) => Some(request),
            ReadOp::Ping => Some(PING),
            _ => None,
        }
    }

    /// A refused ping (the leader is ending the session) closes the connection: ZooKeeper's
    /// clients take any reply to a ping as a heartbeat; the client's resume elsewhere is
    /// refused likewise until the session's end is applied and it is told. ZooKeeper has no
    /// membership requests here, so otherwise only a failed sync comes back, and a ZooKeeper
    /// client is told its connection is lost.
    fn prepared(ctx: &SessionConn, op: &ReadOp, _: Result<Response, ErrorCode>) -> Option<ZkAnswer> {
        if matches!(op, ReadOp::Ping) {
            tracing::debug!(peer = %ctx.peer, session = %ctx.session, "ping refused: closing the ZooKeeper connection");
            return None;
        }
        Some(ZkAnswer::fail(err::CONNECTION_LOSS))
    }

    fn read(ctx: &SessionConn, state: &StateMachine, op: ReadOp, events: &mut Vec<WatchEvent>) -> ZkAnswer {
        let answer = super::read::execute(ctx, &ctx.server.local, state, op, events);
        match answer.oversized(MAX_REPLY) {
            Some(bytes) => {
                tracing::warn!(peer = %ctx.peer, session = %ctx.session, bytes, limit = MAX_REPLY,
                    "ZooKeeper reply over the reply limit: answered with MARSHALLINGERROR");
                ZkAnswer::fail(err::MARSHALLING_ERROR)
            }
            None => answer,
        }
    }

    /// ZooKeeper answers AUTHFAILED and then closes the connection, so that the client can
    /// try another server; its session lives on.
    fn authed(result: Result<(), ErrorCode>) -> (ZkAnswer, bool) {
        let failed = result.is_err();
        (ZkAnswer::fail(if failed { err::AUTH_FAILED } else { err::OK }), failed)
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

/// The next request on ZooKeeper's protocol; `None` at the end of the stream or on bad
/// input (a frame too short for its header, an opcode that does not parse).
async fn next_request(
    ctx: &SessionConn,
    stats: &ConnStats,
    reader: &mut Reader,
    idle: &Idle,
) -> Option<(Stamp, Decoded<ZkReader>)> {
    let frame = crate::net::connection::next_frame(reader, idle).await;
    crate::net::connection::shrink_if_idle(reader.read_buffer_mut());
    let frame = match frame? {
        Ok(frame) => frame,
        Err(error) => return drop_peer(ctx, &error.to_string()),
    };
    let mut r = In::new(&frame);
    let (xid, code) = match (r.int(), r.int()) {
        (Ok(xid), Ok(code)) => (xid, code),
        _ => return drop_peer(ctx, "request header ends early"),
    };
    let stamp = ctx.server.local.metrics.zookeeper.stamp(ops::metric_op(code));
    stats.received(xid);
    let action = match ops::parse(code, &mut r) {
        Ok(action) => action,
        Err(error) => return drop_peer(ctx, &format!("opcode {code}: {error}")),
    };
    let plain = |render| ZkTag { xid, render };
    let decoded = match action {
        Action::Write { request, render, nulls } => {
            let closes_session = matches!(render, Render::CloseSession);
            // dedup 0: ZooKeeper clients never resend, so their writes need no dedup record.
            Decoded::Write { tag: plain(render), request, dedup_xid: 0, nulls, closes_session }
        }
        Action::Read(op) => Decoded::Read { tag: plain(Render::None), op },
        Action::Fail(code) => Decoded::Answer { tag: plain(Render::None), answer: ZkAnswer::fail(code) },
        Action::Auth { scheme, credentials } => {
            Decoded::Auth { tag: plain(Render::Auth), scheme, credentials: credentials.0 }
        }
    };
    Some((stamp, decoded))
}

fn drop_peer<T>(ctx: &SessionConn, why: &str) -> Option<T> {
    tracing::warn!(peer = %ctx.peer, session = %ctx.session, reason = why, "closing ZooKeeper connection: bad input");
    None
}
