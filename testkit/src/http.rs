//! Plain HTTP/1.1 requests to the admin listener (`/metrics`, `/healthz`, `/readyz`, the
//! console's `/api/`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// `GET path` with `Connection: close`: the status code and the body. Panics if the server
/// does not answer within a generous bound.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    request(addr, "GET", path, &[])
}

/// `method path` with `headers` (`("Authorization", "Bearer ...")`), no body, and
/// `Connection: close`: the status code and the body.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let limit = Some(Duration::from_secs(30));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("connect to {addr} for {method} {path}: {e}"));
    let _ = (stream.set_read_timeout(limit), stream.set_write_timeout(limit));
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let request =
        format!("{method} {path} HTTP/1.1\r\nHost: ward\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("send {method} {path} to {addr}: {e}"));
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .unwrap_or_else(|e| panic!("read the answer to {method} {path} from {addr}: {e}"));
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_string();
    (status, body)
}
