//! Opening a connection: TCP, then the hello.

use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_util::codec::{FramedRead, FramedWrite};
use ward_proto::{ClientMessage, ErrorCode, FrameCodec, Hello, ServerMessage, Welcome, MAX_REPLY_FRAME};

pub(crate) type Reader = FramedRead<OwnedReadHalf, FrameCodec<ServerMessage, ClientMessage>>;
pub(crate) type Writer = FramedWrite<OwnedWriteHalf, FrameCodec<ServerMessage, ClientMessage>>;

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
}

/// Connects to `addr` and completes the handshake, all within `limit`.
pub(crate) async fn dial(addr: &str, hello: Hello, limit: Duration) -> Result<Connection, DialError> {
    match tokio::time::timeout(limit, dial_inner(addr, hello)).await {
        Ok(result) => result,
        Err(_) => Err(DialError::Unreachable(format!("{addr}: timed out after {limit:?}"))),
    }
}

async fn dial_inner(addr: &str, hello: Hello) -> Result<Connection, DialError> {
    let unreachable = |e: &dyn std::fmt::Display| DialError::Unreachable(format!("{addr}: {e}"));
    let stream = TcpStream::connect(addr).await.map_err(|e| unreachable(&e))?;
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let mut reader = FramedRead::new(r, FrameCodec::new(MAX_REPLY_FRAME));
    let mut writer = FramedWrite::new(w, FrameCodec::new(MAX_REPLY_FRAME));
    writer.send(ClientMessage::Hello(hello)).await.map_err(|e| unreachable(&e))?;
    match reader.next().await {
        // Heartbeats run at a third of the timeout: a zero timeout is a broken server.
        Some(Ok(ServerMessage::Welcome(welcome))) if welcome.timeout_ms < 3 => {
            Err(unreachable(&format!("unusable session timeout {} ms", welcome.timeout_ms)))
        }
        Some(Ok(ServerMessage::Welcome(welcome))) => Ok(Connection { reader, writer, welcome }),
        Some(Ok(ServerMessage::Refused { code, reason })) => Err(DialError::Refused(code, reason)),
        Some(Ok(other)) => Err(unreachable(&format!("unexpected answer to hello: {other:?}"))),
        Some(Err(e)) => Err(unreachable(&e)),
        None => Err(unreachable(&"closed during the handshake")),
    }
}
