//! The `ward-server` binary: prints its address, serves, and exits cleanly on SIGTERM.
//! (This test also makes `cargo test --workspace` build the binary that the root package's
//! integration tests start.)

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use ward_client::{Client, CreateMode};

#[tokio::test]
async fn serves_and_stops_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("ward-binary-test-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_ward-server"))
        .args(["--listen", "127.0.0.1:0", "--segment-mb", "1", "--data-dir"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ward-server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("read address");
    let addr = line.trim().strip_prefix("ward-server listening on ").expect("address line").to_string();

    let client = Client::connect(&addr).await.expect("connect");
    client.create("/up", b"", CreateMode::Persistent).await.expect("create");

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            break exit;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ward-server did not stop on SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "exit status {exit}");
    assert!(dir.join("LOCK").exists(), "the data directory was used");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_exit_with_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_ward-server")).arg("--bogus").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: ward-server"));
}
