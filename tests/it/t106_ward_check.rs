//! `ward check` through the binary (docs/operations.md "Checking an ensemble with
//! `ward check`"): against a running server without faults, and against a local ensemble it
//! starts and faults itself; both must pass, print a verdict per checker with counts, and
//! leave the history as JSON lines. Then servers that break one promise on purpose
//! (`ward-server --unsafe-break`, docs/operations.md "Proving that the checkers catch a
//! fault"): each must be caught by the checker that guards that promise.

use crate::harness::*;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use ward_testkit::{locate, run::try_run, serial, TempDir};

/// Lets a server break a promise on purpose (`ward_server::unsafe_break`).
const ALLOW_UNSAFE_BREAK: (&str, &str) = ("WARD_ALLOW_UNSAFE_BREAK", "1");

/// Every checker a run of every workload reports, the members' convergence included.
const ALL_CHECKERS: [&str; 7] =
    ["linearizability", "lock safety", "sessions", "watches", "sequential", "durability", "convergence"];

/// Runs `ward check ARGS --out OUT` to completion (bounded by `limit`); `envs` are added to
/// its environment (and so to the members it starts).
async fn ward_check(args: &[&str], envs: &[(&str, &str)], out: &Path, limit: Duration) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ward"));
    cmd.arg("check").args(args).arg("--out").arg(out);
    // The members run the test build's ward-server, built if needed.
    cmd.env("WARD_SERVER_BIN", locate::server_binary()).env_remove("WARD_SERVER");
    cmd.env_remove(ALLOW_UNSAFE_BREAK.0).envs(envs.iter().copied());
    tokio::task::spawn_blocking(move || try_run(&mut cmd, b"", limit))
        .await
        .expect("join")
        .unwrap_or_else(|why| panic!("ward check: {why}"))
}

/// The run's report (stdout), printed with its progress lines (stderr).
fn report(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    println!("{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    stdout
}

/// Asserts the run passed every checker, with operations counted, and wrote its history.
fn passed(output: &Output, out: &Path, checkers: &[&str]) -> String {
    let stdout = report(output);
    assert!(output.status.success(), "ward check failed ({}):\n{stdout}", output.status);
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

/// Asserts the run failed (exit status 1), `checker` among the checkers that failed, with a
/// violation and the slice of history that shows it.
fn caught(output: &Output, checker: &str) -> String {
    let stdout = report(output);
    assert_eq!(output.status.code(), Some(1), "ward check should fail:\n{stdout}");
    assert!(stdout.contains("verdict: FAILED"), "{stdout}");
    let at =
        stdout.find(&format!("{checker}: FAILED (")).unwrap_or_else(|| panic!("{checker} did not fail:\n{stdout}"));
    let violation = stdout[at..].lines().nth(1).unwrap_or_default();
    assert!(violation.trim_start().starts_with("violation: "), "{checker}'s first violation:\n{stdout}");
    let shown = stdout[at..].lines().nth(2).unwrap_or_default();
    assert!(shown.starts_with("    "), "the violation comes with a slice of history:\n{stdout}");
    stdout
}

/// The faults line of a report (`faults: 2 kill, 3 pause`).
fn faults(stdout: &str) -> String {
    let line = stdout.lines().find(|l| l.trim_start().starts_with("faults: "));
    line.unwrap_or_else(|| panic!("no faults:\n{stdout}")).to_owned()
}

// Every guarantee `ward check` knows (G4, G5, G6, G11, G12, G17), on one server: registers
// stay linearizable, the lock and its fence keep the counter right, ephemerals live exactly
// as long as their sessions, watches fire once and in order before the data that shows
// them, sequential names are unique and increasing, everything acknowledged is there at the
// end, and the member's digest is read (convergence of one). The timeline is drawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_passes_against_a_running_server() {
    bounded(async {
        let server = ServerProcess::builder().admin().start();
        let out = TempDir::new("check-single");
        let svg = out.path().join("timeline.svg");
        let (addr, admin) = (server.addr_str(), server.admin_addr().to_string());
        let args = ["--servers", &addr, "--admin", &admin, "--duration", "8", "--seed", "7", "--svg"];
        let mut args: Vec<&str> = args.to_vec();
        let svg_arg = svg.to_string_lossy().into_owned();
        args.push(&svg_arg);
        let output = ward_check(&args, &[], out.path(), DEADLINE * 3).await;
        let stdout = passed(&output, out.path(), &ALL_CHECKERS);
        assert!(stdout.contains("0 faults"), "{stdout}");
        let drawn = std::fs::read_to_string(&svg).expect("the timeline");
        assert!(drawn.starts_with("<svg") && drawn.contains(">registers p1</text>"), "{drawn}");
    })
    .await
}

// The same promises on a three-member ensemble that `ward check` starts itself, through
// kill -9, SIGSTOP and partitions of its members (the leader among them), and every
// member's state digest the same at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_passes_on_an_ensemble_through_kills_pauses_and_partitions() {
    let _serial = serial().await;
    bounded(async {
        let out = TempDir::new("check-ensemble");
        let args = ["--ensemble", "3", "--duration", "20", "--seed", "1"];
        let output = ward_check(&args, &[], out.path(), Duration::from_secs(170)).await;
        let stdout = passed(&output, out.path(), &ALL_CHECKERS);
        let faults = faults(&stdout);
        for kind in ["kill", "pause", "partition"] {
            assert!(faults.contains(kind), "no {kind} fault: {faults}");
        }
    })
    .await
}

// G13, G14, G15, G18: one-way partitions, a bridge between two members that cannot reach
// each other, clean restarts, and a member removed and added back as a newcomer, each while
// the workloads run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_passes_through_one_way_and_bridge_partitions_restarts_and_membership_changes() {
    let _serial = serial().await;
    bounded(async {
        let out = TempDir::new("check-ensemble-more");
        let args = ["--ensemble", "3", "--duration", "25", "--seed", "2", "--nemesis", "one-way,bridge,restart,member"];
        let output = ward_check(&args, &[], out.path(), Duration::from_secs(170)).await;
        let stdout = passed(&output, out.path(), &ALL_CHECKERS);
        let faults = faults(&stdout);
        for kind in ["one-way", "bridge", "restart", "member"] {
            assert!(faults.contains(kind), "no {kind} fault: {faults}");
        }
    })
    .await
}

// G12 broken on purpose: a lock attempt answered "held" without waiting for the commits
// that remove the contenders ahead of it. Lock safety must see two holders at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_catches_a_lock_granted_before_commit() {
    bounded(async {
        let server = ServerProcess::builder()
            .envs(&[ALLOW_UNSAFE_BREAK])
            .flags(&["--unsafe-break", "grant-before-commit"])
            .start();
        let out = TempDir::new("check-grant-before-commit");
        let args = ["--servers", &server.addr_str(), "--workload", "locks", "--duration", "4", "--seed", "3"];
        let output = ward_check(&args, &[], out.path(), DEADLINE * 3).await;
        let stdout = caught(&output, "lock safety");
        assert!(stdout.contains("two holds overlap"), "{stdout}");
    })
    .await
}

// G11 broken on purpose: log appends acknowledged before they are written, on a one-member
// group killed with -9 now and then. Durability must find acknowledged writes gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_catches_an_ack_before_fsync() {
    let _serial = serial().await;
    bounded(async {
        let out = TempDir::new("check-ack-before-fsync");
        let args = [
            "--ensemble",
            "1",
            "--workload",
            "registers",
            "--nemesis",
            "kill",
            "--duration",
            "10",
            "--seed",
            "4",
            "--server-arg=--unsafe-break=ack-before-fsync",
            // No snapshot: it would keep what the log lost.
            "--server-arg=--snapshot-every=1000000",
        ];
        let output = ward_check(&args, &[ALLOW_UNSAFE_BREAK], out.path(), Duration::from_secs(170)).await;
        caught(&output, "durability");
    })
    .await
}

// G17 broken on purpose: `sync` answered from the member's own state, without the leader's
// read index. Linearizability must find a read that returned a value already overwritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_check_catches_a_stale_follower_read() {
    let _serial = serial().await;
    bounded(async {
        let out = TempDir::new("check-stale-follower-read");
        let args = [
            "--ensemble",
            "3",
            "--workload",
            "registers",
            "--nemesis",
            "partition",
            "--duration",
            "15",
            "--seed",
            "5",
            "--server-arg=--unsafe-break=stale-follower-read",
        ];
        let output = ward_check(&args, &[ALLOW_UNSAFE_BREAK], out.path(), Duration::from_secs(170)).await;
        let stdout = caught(&output, "linearizability");
        assert!(stdout.contains("on their own") || stdout.contains("on its own"), "{stdout}");
    })
    .await
}
