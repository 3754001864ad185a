//! An in-process server for the client's tests: in memory, on 127.0.0.1 port 0.

use std::time::Duration;

/// Starts a server in this runtime and returns its address; it runs until the test ends.
pub async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let config = ward_server::Config { min_session_timeout: Duration::from_millis(300), ..Default::default() };
    tokio::spawn(ward_server::serve(listener, config, std::future::pending()));
    addr
}
