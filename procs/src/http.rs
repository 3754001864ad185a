//! Plain HTTP/1.1 requests to the admin listener (`/metrics`, `/healthz`, `/readyz`,
//! `/digest`, the console's `/api/`).

use crate::error::HarnessError;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// `GET path` with `Connection: close`: the status code and the body. Panics if the server
/// does not answer within a generous bound.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    request(addr, "GET", path, &[])
}

/// Like [`get`], each step bounded by `limit`, `Err` instead of a panic (blocking).
pub fn try_get(addr: SocketAddr, path: &str, limit: Duration) -> Result<(u16, String), HarnessError> {
    try_request(addr, "GET", path, &[], limit)
}

/// `method path` with `headers` (`("Authorization", "Bearer ...")`), no body, and
/// `Connection: close`: the status code and the body. Panics if the server does not answer
/// within a generous bound.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    try_request(addr, method, path, headers, Duration::from_secs(30)).unwrap_or_else(|e| panic!("{e}"))
}

/// Like [`request`], each step bounded by `limit`, `Err` instead of a panic (blocking).
pub fn try_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    limit: Duration,
) -> Result<(u16, String), HarnessError> {
    let failed = |step: &str, e| HarnessError::io(format!("{step} {method} {path} on {addr}"), e);
    let mut stream = TcpStream::connect_timeout(&addr, limit).map_err(|e| failed("connect for", e))?;
    let _ = (stream.set_read_timeout(Some(limit)), stream.set_write_timeout(Some(limit)));
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let request =
        format!("{method} {path} HTTP/1.1\r\nHost: ward\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| failed("send", e))?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(|e| failed("read the answer to", e))?;
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_string();
    Ok((status, body))
}
