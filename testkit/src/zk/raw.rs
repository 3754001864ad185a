//! A bare jute client: just enough to drive a ZooKeeper port frame by frame, below any
//! client library (frame order, a client that stops reading, malformed input).

use crate::wait::DEADLINE;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bound on every read of a frame or an answer.
pub const LIMIT: Duration = Duration::from_secs(30);

/// One connection, with the session its connect request got.
pub struct Raw {
    pub stream: TcpStream,
    xid: i32,
    pub session: i64,
    pub passwd: Vec<u8>,
}

/// ZooKeeper's opcodes used here.
pub mod op {
    pub const CREATE: i32 = 1;
    pub const EXISTS: i32 = 3;
    pub const GET_DATA: i32 = 4;
    pub const SET_DATA: i32 = 5;
    pub const CLOSE_SESSION: i32 = -11;
    pub const ADD_WATCH: i32 = 106;
}

/// `addWatch` modes.
pub const PERSISTENT: i32 = 0;
pub const PERSISTENT_RECURSIVE: i32 = 1;

/// A jute buffer or string: its length, then its bytes.
pub fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as i32).to_be_bytes());
    out.extend_from_slice(s);
}

impl Raw {
    /// Connects and sends a connect request (10 s timeout; session 0 asks for a new one);
    /// returns the connection and the timeout granted (0: the session is expired).
    pub async fn connect(addr: &str, session: i64, passwd: &[u8]) -> (Raw, i32) {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Raw::handshake(stream, session, passwd, 10_000).await
    }

    /// [`connect`](Self::connect) over a stream the caller opened, asking for a timeout of
    /// `timeout_ms`.
    pub async fn handshake(stream: TcpStream, session: i64, passwd: &[u8], timeout_ms: i32) -> (Raw, i32) {
        let mut raw = Raw { stream, xid: 0, session: 0, passwd: Vec::new() };
        raw.stream.write_all(&connect_request(session, passwd, timeout_ms)).await.expect("write");
        let resp = raw.frame().await.expect("connect response");
        let timeout = i32::from_be_bytes(resp[4..8].try_into().expect("4 bytes"));
        raw.session = i64::from_be_bytes(resp[8..16].try_into().expect("8 bytes"));
        raw.passwd = resp[20..36].to_vec();
        (raw, timeout)
    }

    pub async fn send(&mut self, body: &[u8]) {
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        self.stream.write_all(&frame).await.expect("write");
    }

    /// One frame, or `None` at end of stream (within [`DEADLINE`]).
    pub async fn frame(&mut self) -> Option<Vec<u8>> {
        let mut len = [0u8; 4];
        tokio::time::timeout(DEADLINE, self.stream.read_exact(&mut len)).await.expect("frame in time").ok()?;
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        tokio::time::timeout(DEADLINE, self.stream.read_exact(&mut body)).await.expect("frame in time").ok()?;
        Some(body)
    }

    /// Sends request `op` with `payload`; returns its xid.
    pub async fn request(&mut self, op: i32, payload: &[u8]) -> i32 {
        self.xid += 1;
        let mut body = self.xid.to_be_bytes().to_vec();
        body.extend_from_slice(&op.to_be_bytes());
        body.extend_from_slice(payload);
        self.send(&body).await;
        self.xid
    }

    /// (xid, err) of the next frame.
    pub async fn header(&mut self) -> (i32, i32) {
        let f = self.frame().await.expect("a frame");
        (i32::from_be_bytes(f[0..4].try_into().expect("xid")), i32::from_be_bytes(f[12..16].try_into().expect("err")))
    }
}

/// A connect request as a whole frame (`session` 0 asks for a new one).
pub fn connect_request(session: i64, passwd: &[u8], timeout_ms: i32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0i32.to_be_bytes());
    body.extend_from_slice(&0i64.to_be_bytes());
    body.extend_from_slice(&timeout_ms.to_be_bytes());
    body.extend_from_slice(&session.to_be_bytes());
    string(&mut body, passwd);
    body.push(0);
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// The payload of a request that names a path and a watch flag (exists, getData...).
pub fn path_watch(path: &str, watch: bool) -> Vec<u8> {
    let mut p = Vec::new();
    string(&mut p, path.as_bytes());
    p.push(u8::from(watch));
    p
}

/// A create of `path` with empty data, open to all, persistent.
pub fn create(path: &str) -> Vec<u8> {
    let mut p = Vec::new();
    string(&mut p, path.as_bytes());
    string(&mut p, b"");
    p.extend_from_slice(&1i32.to_be_bytes()); // one ACL: world:anyone, all perms
    p.extend_from_slice(&31i32.to_be_bytes());
    string(&mut p, b"world");
    string(&mut p, b"anyone");
    p.extend_from_slice(&0i32.to_be_bytes());
    p
}

/// A set of `path`'s data to "new", whatever its version.
pub fn set_data(path: &str) -> Vec<u8> {
    let mut p = Vec::new();
    string(&mut p, path.as_bytes());
    string(&mut p, b"new");
    p.extend_from_slice(&(-1i32).to_be_bytes());
    p
}

/// An `addWatch` of `path` in `mode` ([`PERSISTENT`] or [`PERSISTENT_RECURSIVE`]).
pub fn add_watch(path: &str, mode: i32) -> Vec<u8> {
    let mut p = Vec::new();
    string(&mut p, path.as_bytes());
    p.extend_from_slice(&mode.to_be_bytes());
    p
}

/// Asks a four-letter word and returns the whole answer.
pub async fn four_letters(addr: &str, word: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(word).await.expect("write");
    let mut out = String::new();
    tokio::time::timeout(LIMIT, s.read_to_string(&mut out)).await.expect("answer in time").expect("read");
    out
}
