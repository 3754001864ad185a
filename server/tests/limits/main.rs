//! Protection from slow and hostile clients, through the real binary on both client
//! listeners (docs/security.md "Limits", guarantee G21): a client that never reads costs
//! the server at most its bound on outbound bytes, one that pipelines requests is held at
//! its cap of requests in flight, and connections past the per-address and total limits are
//! refused at once, while every other client keeps being answered.

mod connections;
mod in_flight;
mod parked;
mod slow_readers;

use futures_util::{SinkExt, StreamExt};
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio_util::codec::Framed;
use ward_proto::{ClientMessage, FrameCodec, Hello, Request, ServerMessage, Welcome, MAX_REPLY_FRAME};
use ward_testkit::{within, DEADLINE};

pub type Native = Framed<TcpStream, FrameCodec<ServerMessage, ClientMessage>>;

/// A field of `/proc/PID/status` in bytes: `VmRSS` (resident now) or `VmHWM` (the peak).
pub fn memory(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    let line = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'));
    let kib = line.and_then(|l| l.trim().strip_suffix("kB")?.trim().parse::<u64>().ok());
    kib.unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status:\n{status}")) * 1024
}

/// A connection to `addr` from the local address `from` (on Linux every 127.x.y.z is
/// loopback, so one test machine can be several client hosts), with a receive buffer of
/// about `recv_buffer` bytes if given: a client that does not read then holds little in
/// its own kernel buffers, and what the server queues stays in the server.
pub async fn connect_from(from: IpAddr, addr: SocketAddr, recv_buffer: Option<u32>) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    if let Some(size) = recv_buffer {
        socket.set_recv_buffer_size(size)?;
    }
    socket.connect(addr).await
}

/// Opens a Ward session by hand on `stream` (docs/protocol.md): `hello`, then the welcome.
pub async fn native_hello(stream: TcpStream, hello: Hello) -> (Native, Welcome) {
    let mut conn = Framed::new(stream, FrameCodec::new(MAX_REPLY_FRAME));
    conn.send(ClientMessage::Hello(hello)).await.expect("send hello");
    match within("the welcome", DEADLINE, conn.next()).await {
        Some(Ok(ServerMessage::Welcome(welcome))) => (conn, welcome),
        other => panic!("expected a welcome, got {other:?}"),
    }
}

/// A new Ward session on `stream`, with a timeout of `timeout_ms`.
pub async fn native_session(stream: TcpStream, timeout_ms: u32) -> (Native, Welcome) {
    native_hello(stream, Hello::new(None, timeout_ms, 0)).await
}

/// Sends `request` on a native connection and waits for its reply, skipping events.
pub async fn native_call(conn: &mut Native, xid: u64, request: Request) {
    conn.send(ClientMessage::Request { xid, request }).await.expect("send request");
    loop {
        match within("a reply", DEADLINE, conn.next()).await {
            Some(Ok(ServerMessage::Reply { xid: got, result, .. })) if got == xid => {
                result.unwrap_or_else(|e| panic!("request {xid} failed: {e:?}"));
                return;
            }
            Some(Ok(ServerMessage::Event(_))) => continue,
            other => panic!("expected the reply to {xid}, got {other:?}"),
        }
    }
}

/// Reads what the server still sends on `stream` until it closes it (end of stream, or a
/// reset); returns how many bytes came first. Panics if the server keeps it open.
pub async fn drain_until_closed(stream: &mut TcpStream) -> u64 {
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0u64;
    // Bounded: what the kernel buffers of a connection can hold, many times over.
    for _ in 0..100_000 {
        match within("the server closes the connection", DEADLINE, stream.read(&mut buf)).await {
            Ok(0) => return total,
            Ok(n) => total += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => return total,
            Err(e) => panic!("reading a connection the server should close: {e}"),
        }
    }
    panic!("the server kept sending: {total} bytes and no end");
}

/// `ward_NAME` from the admin listener's `/metrics`.
pub fn metric(admin: SocketAddr, name: &str) -> u64 {
    let (status, text) = ward_testkit::http::get(admin, "/metrics");
    assert_eq!(status, 200, "/metrics: {text}");
    let value = text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok());
    value.unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
}
