//! Raw sockets speaking (or deliberately mangling) the wire protocol, below the client.

use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::codec::Framed;
use ward_proto::{ClientMessage, FrameCodec, Hello, Request, Response, ServerMessage, Welcome, MAX_REPLY_FRAME};
use ward_testkit::DEADLINE;

pub type RawConn = Framed<TcpStream, FrameCodec<ServerMessage, ClientMessage>>;

pub async fn raw_connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.expect("raw connect")
}

pub fn frame(stream: TcpStream) -> RawConn {
    Framed::new(stream, FrameCodec::new(MAX_REPLY_FRAME))
}

/// Sends `msg` as one frame.
pub async fn send(conn: &mut RawConn, msg: ClientMessage) {
    conn.send(msg).await.expect("send frame");
}

/// The next frame from the server; `None` if the connection ended (EOF or reset) first.
pub async fn recv(conn: &mut RawConn) -> Option<ServerMessage> {
    match tokio::time::timeout(DEADLINE, conn.next()).await {
        Ok(Some(Ok(msg))) => Some(msg),
        Ok(Some(Err(ward_proto::CodecError::Io(_)))) | Ok(None) => None,
        Ok(Some(Err(e))) => panic!("server sent an undecodable frame: {e}"),
        Err(_) => panic!("no frame from the server within {DEADLINE:?}"),
    }
}

/// Opens a session by hand; returns the connection and the server's welcome.
pub async fn raw_session(addr: SocketAddr, timeout_ms: u32) -> (RawConn, Welcome) {
    let mut conn = frame(raw_connect(addr).await);
    send(&mut conn, ClientMessage::Hello(Hello::new(None, timeout_ms, 0))).await;
    match recv(&mut conn).await {
        Some(ServerMessage::Welcome(welcome)) => (conn, welcome),
        other => panic!("expected Welcome, got {other:?}"),
    }
}

/// Sends `request` and returns its reply, skipping any watch events before it.
pub async fn call(conn: &mut RawConn, xid: u64, request: Request) -> Result<Response, ward_proto::ErrorCode> {
    send(conn, ClientMessage::Request { xid, request }).await;
    loop {
        match recv(conn).await {
            Some(ServerMessage::Reply { xid: got, result, .. }) if got == xid => return result,
            Some(ServerMessage::Event(_)) => continue,
            other => panic!("expected the reply to xid {xid}, got {other:?}"),
        }
    }
}

/// How the server ended a connection we expect it to drop.
#[derive(Debug)]
pub struct Dropped {
    /// Bytes the server sent before closing (a refusal frame, say).
    pub bytes_before_close: usize,
}

/// Reads until the server closes the connection (EOF or reset); panics if it is still
/// open after `limit`. Whatever we have not sent stays unsent: the server must close on
/// what it already has.
pub async fn expect_dropped(stream: &mut TcpStream, limit: Duration) -> Dropped {
    let mut buf = [0u8; 4096];
    let mut bytes_before_close = 0;
    let read_all = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => bytes_before_close += n,
            }
        }
    };
    if tokio::time::timeout(limit, read_all).await.is_err() {
        panic!("the server kept the connection open for {limit:?}");
    }
    Dropped { bytes_before_close }
}
