//! The `ward-server` binary: prints its address, serves, and exits cleanly on SIGTERM.

use std::process::Command;
use ward_client::{Client, CreateMode};
use ward_testkit::ServerProcess;

#[tokio::test]
async fn serves_and_stops_on_sigterm() {
    let mut server = ServerProcess::start();
    let client = Client::connect(&server.addr_str()).await.expect("connect");
    client.create("/up", b"", CreateMode::Persistent).await.expect("create");

    let exit = tokio::task::spawn_blocking(move || {
        let exit = server.terminate();
        assert!(server.data_dir().join("LOCK").exists(), "the data directory was used");
        exit
    });
    let exit = exit.await.expect("join");
    assert!(exit.success(), "exit status {exit}");
}

#[test]
fn bad_arguments_exit_with_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_ward-server")).arg("--bogus").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: ward-server"));
}

// A promise broken on purpose is for tests only (docs/operations.md, "Proving that the
// checkers catch a fault"): without the test environment's permission the server refuses to
// start, naming what is missing.
#[test]
fn unsafe_break_is_refused_outside_a_test_environment() {
    let out = Command::new(env!("CARGO_BIN_EXE_ward-server"))
        .args(["--unsafe-break", "grant-before-commit", "--in-memory", "--listen", "127.0.0.1:0"])
        .env_remove(ward_server::unsafe_break::ALLOW_VAR)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("WARD_ALLOW_UNSAFE_BREAK=1"), "{stderr}");
}
