//! Writes go on while a snapshot of a large tree is written (docs/storage.md, "Snapshots and
//! log size"): the snapshot copies the state in an instant and serializes the copy while the
//! log keeps applying and acknowledging writes. In a file of its own, because the snapshot
//! figures it watches are process-wide.
//!
//! The tree here is a million znodes (about 30 s and 700 MB in a debug build);
//! `ward-bench --snapshots` measures what such a snapshot costs the writers
//! (docs/benchmarks.md).

use openraft::async_runtime::WatchReceiver;
use std::time::{Duration, Instant};
use ward_proto::{CreateMode, Op, SessionId, SessionSecret};
use ward_server::command::{Command, CommandOp, Outcome};
use ward_server::local::Local;
use ward_server::raft::{self as durable, RaftOptions};
use ward_server::replication::Replication;
use ward_testkit::TempDir;

const NODES: usize = 1_000_000;
/// Writes to see acknowledged within one snapshot's build, at least.
const WRITES_DURING: usize = 20;
const DEADLINE: Duration = Duration::from_secs(120);

fn cmd(session: SessionId, xid: u64, op: CommandOp) -> Command {
    Command { time_ms: 1_000, session, xid, op }
}

/// Between a snapshot's `begun` (the state captured) and its `finished` (the file in place),
/// writes are applied and acknowledged while the snapshot is still being serialized: each
/// write counted saw the same snapshot in progress, and its file partly written
/// (`snapshot.tmp` grows as the copy is serialized into it), both before it was submitted
/// and after its reply. The snapshot holds the state from before them.
#[test]
fn writes_are_acknowledged_while_a_snapshot_of_a_large_tree_is_written() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async {
        let dir = TempDir::new("snapshot-writes");
        // Snapshots only when this test asks for one.
        let options = RaftOptions { snapshot_log_percent: 0, snapshot_every: None, ..RaftOptions::default() };
        let (core, local) = Local::serving();
        let snapshots = local.metrics.snapshots.clone();
        let log = durable::open(dir.path(), core.clone(), local, options).await.expect("open");
        let open = CommandOp::CreateSession { timeout_ms: 600_000, secret: SessionSecret([5; 16]), owner: None };
        let session = match log.submit(cmd(SessionId(0), 0, open)).await.expect("applied").outcome {
            Outcome::SessionCreated(id) => id,
            other => panic!("{other:?}"),
        };
        let mut xid = 0;
        let mut next_xid = || {
            xid += 1;
            xid
        };
        // The tree, a thousand creates per multi.
        let create = |path: String| Op::Create { path, data: vec![7; 32], mode: CreateMode::Persistent };
        log.submit(cmd(session, next_xid(), CommandOp::Op(create("/big".into())))).await.expect("applied");
        for chunk in 0..NODES / 1000 {
            let ops = (0..1000).map(|i| create(format!("/big/n{:07}", chunk * 1000 + i))).collect();
            let applied = log.submit(cmd(session, next_xid(), CommandOp::Multi(ops))).await.expect("applied");
            assert!(matches!(applied.outcome, Outcome::Reply(Ok(_))), "{:?}", applied.outcome);
        }
        log.submit(cmd(session, next_xid(), CommandOp::Op(create("/w".into())))).await.expect("applied");
        assert_eq!(core.read(|s| s.tree().len()), NODES + 3);

        let file_len = |name: &str| std::fs::metadata(dir.path().join(name)).map_or(0, |m| m.len());
        let deadline = Instant::now() + DEADLINE;
        let mut best = 0;
        // A snapshot can finish before the writes get going on a fast machine: try again.
        for _attempt in 0..5 {
            let before = snapshots.progress();
            let in_progress = (before.0 + 1, before.1);
            let applied = log.raft().metrics().borrow_watched().last_applied;
            log.raft().trigger().snapshot().await.expect("ask for a snapshot");
            // Per write: the snapshot file's length before and after, if in progress throughout.
            let mut seen = Vec::new();
            while snapshots.progress().1 == before.1 {
                assert!(Instant::now() < deadline, "the snapshot did not finish in {DEADLINE:?}");
                let (progress, len) = (snapshots.progress(), file_len("snapshot.tmp"));
                let set = Op::SetData { path: "/w".into(), data: vec![1; 8], version: None };
                let applied = log.submit(cmd(session, next_xid(), CommandOp::Op(set))).await.expect("applied");
                assert!(matches!(applied.outcome, Outcome::Reply(Ok(_))), "{:?}", applied.outcome);
                if progress == in_progress && snapshots.progress() == in_progress {
                    seen.push((len, file_len("snapshot.tmp")));
                }
            }
            // openraft takes note of the snapshot after it is written; until then it would
            // ignore a request for the next.
            let noted = log.raft().wait(Some(DEADLINE)).metrics(|m| m.snapshot >= applied, "snapshot noted").await;
            noted.expect("openraft notes the snapshot");
            let whole = file_len("snapshot");
            let during = seen.iter().filter(|(before, after)| *before > 0 && (1..whole).contains(after)).count();
            eprintln!("{during} writes acknowledged while a snapshot of {NODES} znodes ({whole} bytes) was serialized");
            best = best.max(during);
            if during >= WRITES_DURING {
                let covered = log.raft().metrics().borrow_watched().snapshot.map(|id| id.index);
                let applied = log.raft().metrics().borrow_watched().last_applied.map(|id| id.index);
                assert!(covered < applied, "the writes after the capture are not in the snapshot");
                log.shutdown().await;
                return;
            }
        }
        panic!("at most {best} writes were acknowledged while a snapshot of {NODES} znodes was serialized");
    });
}
