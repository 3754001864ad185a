//! `ward check` through the binary (docs/operations.md "Checking an ensemble with
//! `ward check`"): against a running server without faults, and against a local ensemble it
//! starts and faults itself; both must pass, print a verdict per checker with counts, and
//! leave the history as JSON lines.

use crate::harness::*;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use ward_testkit::{locate, run::try_run, serial, TempDir};

/// Runs `ward check ARGS --out OUT` to completion (bounded by `limit`).
async fn ward_check(args: &[&str], out: &Path, limit: Duration) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ward"));
    cmd.arg("check").args(args).arg("--out").arg(out);
    // The members run the test build's ward-server, built if needed.
    cmd.env("WARD_SERVER_BIN", locate::server_binary()).env_remove("WARD_SERVER");
    tokio::task::spawn_blocking(move || try_run(&mut cmd, b"", limit))
        .await
        .expect("join")
        .unwrap_or_else(|why| panic!("ward check: {why}"))
}

/// Asserts the run passed every checker, with operations counted, and wrote its history.
fn passed(output: &Output, out: &Path, checkers: &[&str]) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stderr}\n{stdout}");
    assert!(output.status.success(), "ward check failed ({}):\n{stderr}\n{stdout}", output.status);
    assert!(stdout.contains("verdict: PASSED"), "{stdout}");
    for checker in checkers {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{checker}: passed (")))
            .unwrap_or_else(|| panic!("no {checker} verdict:\n{stdout}"));
        assert!(!line.contains("(0 operations"), "{line}");
    }
    let history = std::fs::read_to_string(out.join("history.jsonl")).expect("the history");
    for line in history.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert!(event["type"].is_string(), "{line}");
    }
    stdout
}

// G12, G17 and durability, on one server: the registers stay linearizable, the lock and its
// fence keep the counter right, and everything acknowledged is there at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_passes_against_a_running_server() {
    bounded(async {
        let server = ServerProcess::start();
        let out = TempDir::new("check-single");
        let output =
            ward_check(&["--servers", &server.addr_str(), "--duration", "3", "--seed", "7"], out.path(), DEADLINE * 2)
                .await;
        let stdout = passed(&output, out.path(), &["linearizability", "lock safety", "durability"]);
        assert!(stdout.contains("0 faults"), "{stdout}");
    })
    .await
}

// The same promises on a three-member ensemble that `ward check` starts itself, through
// kill -9, SIGSTOP and partitions of its members (the leader among them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_passes_on_an_ensemble_through_kills_pauses_and_partitions() {
    let _serial = serial().await;
    bounded(async {
        let out = TempDir::new("check-ensemble");
        let args = ["--ensemble", "3", "--duration", "20", "--seed", "1"];
        let output = ward_check(&args, out.path(), Duration::from_secs(150)).await;
        let stdout = passed(&output, out.path(), &["linearizability", "lock safety", "durability"]);
        let faults = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("faults: "))
            .unwrap_or_else(|| panic!("no faults:\n{stdout}"));
        for kind in ["kill", "pause", "partition"] {
            assert!(faults.contains(kind), "no {kind} fault: {faults}");
        }
    })
    .await
}
