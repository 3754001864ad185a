//! Ward's headline: take a lock, write under its fencing token, release it.
//!
//! Run a server (`cargo run --release --bin ward-server`), then several of these at once:
//! `cargo run -p ward-client --example lock -- /locks/demo` — they take turns. The server's
//! address is `$WARD_SERVER` (default 127.0.0.1:7181).

mod common;

use std::process::ExitCode;
use std::time::Duration;
use ward_client::{Client, CreateMode, Error};

#[tokio::main]
async fn main() -> ExitCode {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/locks/demo".to_string());
    let server = common::server();
    common::exit(&server, run(&server, &dir).await)
}

async fn run(server: &str, dir: &str) -> Result<(), Error> {
    let client = Client::connect(server).await?;
    match client.create("/demo-data", b"", CreateMode::Persistent).await {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(e) => return Err(e),
    }

    let guard = client.lock(dir).await?;
    println!("holding {dir} with fencing token {}", guard.fencing_token());
    tokio::select! {
        // Stop working the moment the lock can no longer be trusted.
        _ = guard.lost() => {
            eprintln!("lock lost; stopping");
            return Err(Error::SessionExpired);
        }
        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
    }
    // A write that lands only while we still hold the lock: had this process stalled past
    // its session and someone else taken the lock, it would fail with `StaleFence`.
    client.set_data_fenced(&guard.fence(), "/demo-data", b"written under the lock", None).await?;
    guard.unlock().await?;
    println!("released");
    client.close().await
}
