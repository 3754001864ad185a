//! Opening a connection: TCP, TLS if configured, then the hello.

use crate::tls::{CertificateProblem, Handshake, Tls};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::either::Either;
use ward_proto::{ClientMessage, CodecError, ErrorCode, FrameCodec, Hello, ServerMessage, Welcome, MAX_REPLY_FRAME};

/// A plain connection splits without a lock; a TLS one (one rustls state for both
/// directions) through tokio's `split`.
type ReadHalf = Either<OwnedReadHalf, tokio::io::ReadHalf<TlsStream<TcpStream>>>;
type WriteHalf = Either<OwnedWriteHalf, tokio::io::WriteHalf<TlsStream<TcpStream>>>;

pub(crate) type Reader = FramedRead<ReadHalf, FrameCodec<ServerMessage, ClientMessage>>;
pub(crate) type Writer = FramedWrite<WriteHalf, FrameCodec<ServerMessage, ClientMessage>>;

/// An open, welcomed connection.
pub(crate) struct Connection {
    pub reader: Reader,
    pub writer: Writer,
    pub welcome: Welcome,
}

pub(crate) enum DialError {
    /// Could not reach or talk to this server; try another.
    Unreachable(String),
    /// The server answered and said no.
    Refused(ErrorCode, String),
    /// The TLS handshake with this server (`addr`) failed over a certificate: the server's,
    /// which this client does not accept, or this client's, which the server does not.
    Certificate(String, CertificateProblem),
}

/// Connects to `addr` (with `tls`, if given) and completes the handshake, all within `limit`.
pub(crate) async fn dial(
    addr: &str,
    hello: Hello,
    limit: Duration,
    tls: Option<&Tls>,
) -> Result<Connection, DialError> {
    match tokio::time::timeout(limit, dial_inner(addr, hello, tls)).await {
        Ok(result) => result,
        Err(_) => Err(DialError::Unreachable(format!("{addr}: timed out after {limit:?}"))),
    }
}

async fn dial_inner(addr: &str, hello: Hello, tls: Option<&Tls>) -> Result<Connection, DialError> {
    let unreachable = |e: &dyn std::fmt::Display| DialError::Unreachable(format!("{addr}: {e}"));
    let stream = TcpStream::connect(addr).await.map_err(|e| unreachable(&e))?;
    let _ = stream.set_nodelay(true);
    let (r, w) = match tls {
        None => {
            let (r, w) = stream.into_split();
            (Either::Left(r), Either::Left(w))
        }
        Some(tls) => {
            // A server that speaks no TLS is unreachable, like any server we cannot talk
            // to; a certificate refused is said in words.
            let stream = tls.connect(addr, stream).await.map_err(|e| match e {
                Handshake::Certificate(problem) => DialError::Certificate(addr.to_string(), problem),
                Handshake::Failed(e) => unreachable(&format!("TLS: {e}")),
            })?;
            let (r, w) = tokio::io::split(stream);
            (Either::Right(r), Either::Right(w))
        }
    };
    let mut reader = FramedRead::new(r, FrameCodec::new(MAX_REPLY_FRAME));
    let mut writer = FramedWrite::new(w, FrameCodec::new(MAX_REPLY_FRAME));
    let failed = |e: CodecError| match &e {
        CodecError::Io(io) => match CertificateProblem::refused_by_server(io) {
            Some(problem) => DialError::Certificate(addr.to_string(), problem),
            None => unreachable(&e),
        },
        _ => unreachable(&e),
    };
    writer.send(ClientMessage::Hello(hello)).await.map_err(failed)?;
    match reader.next().await {
        // Heartbeats run at a third of the timeout: a zero timeout is a broken server.
        Some(Ok(ServerMessage::Welcome(welcome))) if welcome.timeout_ms < 3 => {
            Err(unreachable(&format!("unusable session timeout {} ms", welcome.timeout_ms)))
        }
        Some(Ok(ServerMessage::Welcome(welcome))) => Ok(Connection { reader, writer, welcome }),
        Some(Ok(ServerMessage::Refused { code, reason })) => Err(DialError::Refused(code, reason)),
        Some(Ok(other)) => Err(unreachable(&format!("unexpected answer to hello: {other:?}"))),
        Some(Err(e)) => Err(failed(e)),
        None => Err(unreachable(&"closed during the handshake")),
    }
}
