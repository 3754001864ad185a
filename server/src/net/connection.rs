//! One client connection on Ward's protocol: the hello, then Ward's requests decoded for the
//! driver (`conn/driver.rs`, which orders them: G2, G6) and its replies and pushes encoded for
//! the writer (`conn/writer.rs`, [`WardWire`]). The frame reading both listeners share
//! (small buffers, given back while idle) is here too.

use super::handshake;
use crate::acl::Identity;
use crate::conn::counted::Counted;
use crate::conn::driver::{Decoded, Protocol};
use crate::conn::outbox::{Outbox, OutboxRx};
use crate::conn::park::Idle;
use crate::conn::session_conn::SessionConn;
use crate::conn::writer::{Shrink, Wire};
use crate::conn::{ConnId, Outbound};
use crate::metrics::{Failure, Listener, Op, Stamp};
use crate::read::Reader as ReadCtx;
use crate::state::StateMachine;
use crate::tls::stream::{Incoming, ReadHalf, WriteHalf};
use crate::Server;
use bytes::BytesMut;
use futures_util::{FutureExt, StreamExt};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;
use ward_proto::{
    ClientMessage, CodecError, ErrorCode, FrameCodec, Request, Response, ServerMessage, WatchEvent, Zxid,
    MAX_REPLY_FRAME,
};

/// Initial read and write buffer of a connection.
pub(crate) const FIRST_BUFFER: usize = 256;

/// Replies buffered before the writer flushes mid-batch. `FramedWrite::with_capacity` also
/// sets this to the small first buffer, which would cost a write per ~512 bytes of replies
/// on a busy connection; only connections that get that busy grow their buffer this far.
pub(crate) const FLUSH_AT: usize = 8 * 1024;

/// A buffer that grew past this for a large frame is given back once it is empty, so one
/// large write or read does not cost its session that much memory for as long as it lives.
const SHRINK_ABOVE: usize = 64 * 1024;

/// Swaps an empty buffer that has grown large for a small one. `capacity()` would not
/// tell: it counts only the room after the buffer's start, which moves forward as frames are
/// taken off the front or written out; `try_reclaim` asks about the allocation itself (and
/// says no while a frame split off it is still alive).
pub(crate) fn shrink_if_idle(buf: &mut BytesMut) {
    if buf.is_empty() && buf.try_reclaim(SHRINK_ABOVE) {
        *buf = BytesMut::with_capacity(FIRST_BUFFER);
    }
}

impl<T, E> Shrink for FramedWrite<T, E> {
    /// Called once everything queued is written: an idle connection keeps no write buffer
    /// (the next reply allocates one of its own size).
    fn shrink_if_idle(&mut self) {
        let buf = self.write_buffer_mut();
        if buf.is_empty() {
            *buf = BytesMut::new();
        }
    }
}

/// The next frame from `reader`. Between frames an idle connection holds no read buffer: an
/// empty one is given back, and a plain TCP connection waits for the socket to become
/// readable before it takes a new one, marked idle meanwhile (`conn/park.rs`). (A TLS
/// connection cannot wait so through tokio's `split`; it keeps a small buffer, beside the
/// TLS state's own much larger ones, and never parks.)
pub(crate) async fn next_frame<W, D>(
    reader: &mut FramedRead<Counted<ReadHalf, W>, D>,
    idle: &Idle,
) -> Option<Result<D::Item, D::Error>>
where
    W: Wire,
    D: Decoder,
{
    let plain = plain_socket(reader).is_some();
    if reader.read_buffer().is_empty() {
        *reader.read_buffer_mut() = BytesMut::new();
        if let Some(tcp) = plain_socket(reader) {
            let _idle = idle.reader();
            // An error here shows again on the read below, which reports it.
            let _ = tcp.readable().await;
        }
        reader.read_buffer_mut().reserve(FIRST_BUFFER);
    }
    // Readiness can outlive the bytes that set it (tokio clears it only after a read that
    // did not fill the buffer), so the read may find nothing: waiting then, with nothing
    // buffered, the reader is just as idle (both codecs keep a frame's length in the buffer
    // until the whole frame is in, so an empty buffer is between frames).
    let mark = idle.reader();
    std::future::poll_fn(|cx| {
        mark.set_to(false);
        let polled = reader.poll_next_unpin(cx);
        mark.set_to(polled.is_pending() && plain && reader.read_buffer().is_empty());
        polled
    })
    .await
}

/// Gives back a parked reader's empty read buffer (`next_frame` may have taken one for a
/// read that found nothing), and the plain TCP socket to wait on, if it is not TLS.
pub(crate) fn park<W: Wire, D>(reader: &mut FramedRead<Counted<ReadHalf, W>, D>) -> Option<&TcpStream> {
    if reader.read_buffer().is_empty() {
        *reader.read_buffer_mut() = BytesMut::new();
    }
    plain_socket(reader)
}

/// The plain TCP socket under `reader`, if it is not TLS.
pub(crate) fn plain_socket<W: Wire, D>(reader: &FramedRead<Counted<ReadHalf, W>, D>) -> Option<&TcpStream> {
    match reader.get_ref().get_ref() {
        Either::Left(tcp) => Some(tcp.as_ref()),
        Either::Right(_) => None,
    }
}

pub(crate) type Reader = FramedRead<Counted<ReadHalf, WardWire>, FrameCodec<ClientMessage, ServerMessage>>;
pub(crate) type Writer = FramedWrite<Counted<WriteHalf, WardWire>, FrameCodec<ClientMessage, ServerMessage>>;

/// Serves one connection on Ward's listener: the handshake (boxed, so that its state is
/// not part of the connection's task for as long as the session stays connected), then the
/// session.
pub(crate) fn serve(
    server: Arc<Server>,
    incoming: Incoming,
    peer: SocketAddr,
    conn: ConnId,
    cancel: CancellationToken,
) -> impl Future<Output = ()> {
    Box::pin(open(server, incoming, peer, conn, cancel)).then(|opened| match opened {
        Some((ctx, reader, writer, out_rx)) => Either::Left(ctx.run(out_rx, WardWire, writer, reader)),
        None => Either::Right(std::future::ready(())),
    })
}

/// What a connection is made of once its session is attached.
type Opened = (SessionConn, WardReader, Writer, OutboxRx);

/// The TLS handshake (if any) and the hello, which share the handshake timeout.
async fn open(
    server: Arc<Server>,
    incoming: Incoming,
    peer: SocketAddr,
    conn: ConnId,
    cancel: CancellationToken,
) -> Option<Opened> {
    let deadline = Instant::now() + server.config.handshake_timeout;
    let stream = incoming.open(peer, deadline, &cancel).await?;
    let (r, w, cert_subject) = stream.into_parts();
    let metrics = &server.local.metrics;
    let (r, w) = (Counted::new(r, metrics.clone()), Counted::new(w, metrics.clone()));
    let max = server.config.max_frame_len();
    // A small first read buffer: most connections carry small frames, and tokio-util's 8 KiB
    // defaults were most of a session's memory. It grows when a large frame comes. The
    // write buffer starts empty: the first reply allocates it.
    let mut reader = FramedRead::with_capacity(r, FrameCodec::new(max), FIRST_BUFFER);
    let mut writer = FramedWrite::with_capacity(w, FrameCodec::new(max), 0);
    writer.set_backpressure_boundary(FLUSH_AT);
    let (outbox, out_rx) = Outbox::bounded(server.config.max_outbound_bytes, cancel.clone());
    let hello = handshake::run(&server, &mut reader, &mut writer, peer, conn, &outbox);
    let attached = tokio::select! {
        _ = cancel.cancelled() => return None,
        r = tokio::time::timeout_at(deadline, hello) => match r {
            Ok(attached) => attached?,
            Err(_) => {
                tracing::info!(%peer, "closing connection: no hello in time");
                return None;
            }
        },
    };
    let identity = Identity::for_connection(peer.ip(), cert_subject);
    let ctx = SessionConn::new(server, peer, conn, attached, outbox, identity);
    Some((ctx, WardReader(reader), writer, out_rx))
}

/// Ward's own requests, as the driver takes them.
pub(crate) struct WardReader(Reader);

impl Protocol for WardReader {
    type Wire = WardWire;
    type Read = Request;

    fn next<'a>(
        &'a mut self,
        ctx: &'a SessionConn,
        idle: &'a Idle,
    ) -> impl Future<Output = Option<(Stamp, Decoded<Self>)>> + Send + 'a {
        next_request(ctx, &mut self.0, idle)
    }

    /// Every read asks: `prepare` answers the few that wait (a sync, a fence check, a ping)
    /// and the membership requests, and lets the others through at once.
    fn waits_for(op: &Request) -> Option<&Request> {
        Some(op)
    }

    fn prepared(
        _: &SessionConn,
        _: &Request,
        answer: Result<Response, ErrorCode>,
    ) -> Option<Result<Response, ErrorCode>> {
        Some(answer)
    }

    fn read(
        ctx: &SessionConn,
        state: &StateMachine,
        request: Request,
        events: &mut Vec<WatchEvent>,
    ) -> Result<Response, ErrorCode> {
        let (local, identity) = (&ctx.server.local, ctx.identity());
        let answer = ReadCtx { local, conn: ctx.conn, session: ctx.session, ids: identity.ids() }
            .execute(state, request, events);
        match oversized(&answer, MAX_REPLY_FRAME) {
            Some(bytes) => {
                tracing::warn!(peer = %ctx.peer, session = %ctx.session, bytes, limit = MAX_REPLY_FRAME,
                    "reply over the reply limit: answered with ReplyTooLarge");
                Err(ErrorCode::ReplyTooLarge)
            }
            None => answer,
        }
    }

    fn authed(result: Result<(), ErrorCode>) -> (Result<Response, ErrorCode>, bool) {
        (result.map(|()| Response::AuthAdded), false)
    }

    fn park(&mut self) -> Option<&TcpStream> {
        park(&mut self.0)
    }
}

/// Ward's own encoding of replies and server-initiated messages.
pub(crate) struct WardWire;

impl Wire for WardWire {
    const LISTENER: Listener = Listener::Ward;
    type Tag = u64;
    type Answer = Result<Response, ErrorCode>;
    type Msg = ServerMessage;

    fn outbound(&mut self, msg: Outbound) -> Option<ServerMessage> {
        match msg {
            Outbound::Event(event) => Some(ServerMessage::Event(event)),
            Outbound::Streamed(event) => Some(ServerMessage::Streamed(event)),
            Outbound::LockGranted { path, token } => Some(ServerMessage::LockGranted { path, token }),
            Outbound::Close(_) => None,
        }
    }

    fn read_reply(&mut self, xid: u64, zxid: Zxid, result: Self::Answer) -> ServerMessage {
        ServerMessage::Reply { xid, zxid, result }
    }

    fn write_reply(&mut self, xid: u64, zxid: Zxid, result: Result<Response, ErrorCode>) -> ServerMessage {
        ServerMessage::Reply { xid, zxid, result }
    }

    fn session_expired(&mut self) -> Option<ServerMessage> {
        Some(ServerMessage::SessionExpired)
    }

    fn answer_weight(answer: &Self::Answer) -> u64 {
        let heap = match answer {
            Ok(Response::Data { data, .. }) => data.len(),
            Ok(Response::Children { children, .. }) => {
                children.iter().map(|c| std::mem::size_of::<String>() + c.len()).sum()
            }
            Ok(Response::WatchesAdded { replay, .. }) => {
                replay.iter().map(|s| crate::conn::outbox::event_weight(&s.event) as usize).sum()
            }
            _ => 0,
        };
        (std::mem::size_of::<Self::Answer>() + heap) as u64
    }

    fn read_failure(answer: &Self::Answer) -> Option<Failure> {
        answer.as_ref().err().map(|code| Failure::from(*code))
    }
}

/// Room a reply frame takes around its response: the message and result tags, xid and zxid.
const REPLY_ENVELOPE: usize = 32;

/// The size of a reply that would exceed `limit` (the client's [`MAX_REPLY_FRAME`]): such a
/// read is answered `ReplyTooLarge`, as the client would refuse the frame and drop the
/// connection, and each retry would do the same. Only listings are measured; every other
/// reply is bounded by what the server accepts (node data by `max_data_len`, which the
/// config keeps under the limit).
pub(crate) fn oversized(answer: &Result<Response, ErrorCode>, limit: usize) -> Option<usize> {
    let Ok(response @ Response::Children { .. }) = answer else { return None };
    let len =
        postcard::experimental::serialized_size(response).map_or(usize::MAX, |n| n.saturating_add(REPLY_ENVELOPE));
    (len > limit).then_some(len)
}

/// The next request on Ward's protocol; `None` at the end of the stream, on a read error, or
/// on bad input (a second hello, a frame that does not decode).
async fn next_request(ctx: &SessionConn, reader: &mut Reader, idle: &Idle) -> Option<(Stamp, Decoded<WardReader>)> {
    let frame = next_frame(reader, idle).await;
    shrink_if_idle(reader.read_buffer_mut());
    let (xid, request) = match frame? {
        Ok(ClientMessage::Request { xid, request }) => (xid, request),
        Ok(ClientMessage::Hello(_)) => return drop_peer(ctx, "a second hello"),
        Err(CodecError::Io(error)) => {
            tracing::debug!(peer = %ctx.peer, %error, "connection read failed");
            return None;
        }
        Err(error) => return drop_peer(ctx, &error.to_string()),
    };
    let stamp = ctx.server.local.metrics.ward.stamp(Op::of(&request));
    let decoded = match request {
        Request::AddAuth { scheme, credentials } => Decoded::Auth { tag: xid, scheme, credentials: credentials.0 },
        request if request.is_write() => {
            let closes_session = matches!(request, Request::CloseSession);
            Decoded::Write { tag: xid, request, dedup_xid: xid, nulls: Vec::new(), closes_session }
        }
        request => Decoded::Read { tag: xid, op: request },
    };
    Some((stamp, decoded))
}

fn drop_peer<T>(ctx: &SessionConn, why: &str) -> Option<T> {
    tracing::warn!(peer = %ctx.peer, session = %ctx.session, reason = why, "closing connection: bad input");
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_is_given_back_only_when_empty() {
        use bytes::Buf;
        // As the reader leaves it: a large frame split off the front, then a partial one.
        let mut buf = BytesMut::with_capacity(FIRST_BUFFER);
        buf.extend_from_slice(&vec![7u8; 1 << 20]);
        let frame = buf.split_to(1 << 20);
        buf.extend_from_slice(b"part of the next frame");
        shrink_if_idle(&mut buf);
        assert_eq!(&buf[..], b"part of the next frame", "a partial frame is kept");
        buf.advance(buf.len());
        // Still shared with the frame: not swapped, and nothing to reclaim yet.
        shrink_if_idle(&mut buf);
        drop(frame);
        shrink_if_idle(&mut buf);
        assert!(!buf.try_reclaim(SHRINK_ABOVE), "once the frame is gone the large allocation goes too");
        // As the writer leaves it: everything written out from the front.
        let mut buf = BytesMut::with_capacity(FIRST_BUFFER);
        buf.extend_from_slice(&vec![7u8; 1 << 20]);
        buf.advance(1 << 20);
        assert!(buf.capacity() < SHRINK_ABOVE, "capacity() alone would not see the large allocation");
        shrink_if_idle(&mut buf);
        assert!(!buf.try_reclaim(SHRINK_ABOVE), "the large allocation is gone");
        let mut small = BytesMut::with_capacity(FIRST_BUFFER);
        let before = small.capacity();
        shrink_if_idle(&mut small);
        assert_eq!(small.capacity(), before);
    }

    /// The reply limit (docs/protocol.md): a listing whose reply would exceed it is
    /// answered with `ReplyTooLarge`, one that fits goes out; other replies are not measured.
    #[test]
    fn a_listing_over_the_reply_limit_is_oversized() {
        use postcard::experimental::serialized_size;
        let stat = ward_proto::Stat::default();
        let children = |n: usize| Response::Children { children: (0..n).map(|i| format!("{i:0>10}")).collect(), stat };
        let len = |n: usize| serialized_size(&children(n)).expect("size");
        // The envelope covers the largest frame around a response.
        let frame = ServerMessage::Reply { xid: u64::MAX, zxid: u64::MAX, result: Ok(children(100)) };
        assert!(serialized_size(&frame).expect("size") <= len(100) + REPLY_ENVELOPE);
        let limit = len(100) + REPLY_ENVELOPE;
        assert_eq!(oversized(&Ok(children(100)), limit), None);
        assert_eq!(oversized(&Ok(children(101)), limit), Some(len(101) + REPLY_ENVELOPE));
        let data = Ok(Response::Data { data: vec![0; 2 * limit], stat });
        assert_eq!(oversized(&data, limit), None);
    }
}
