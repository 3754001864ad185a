//! Commands submitted as waiting (`Replication::submit_waiting`: a lock acquire that will
//! queue behind another session) are held back for company, never reordered, and never held
//! past their deadline (docs/storage.md, "Group commit").

use std::sync::Arc;
use std::time::Duration;
use ward_proto::{CreateMode, Op, SessionId, SessionSecret};
use ward_server::command::{Command, CommandOp, Outcome};
use ward_server::local::Local;
use ward_server::metrics::Metrics;
use ward_server::raft::{self as durable, BatchLimits, RaftLog, RaftOptions};
use ward_server::replication::{Pending, Replication};
use ward_testkit::TempDir;

const DEADLINE: Duration = Duration::from_secs(60);

fn cmd(session: SessionId, xid: u64, op: CommandOp) -> Command {
    Command { time_ms: 1_000, session, xid, op }
}

fn create(path: &str) -> CommandOp {
    CommandOp::Op(Op::Create { path: path.into(), data: vec![], mode: CreateMode::Persistent })
}

async fn open(dir: &TempDir, defer: Duration) -> (RaftLog, SessionId, Arc<Metrics>) {
    let options = RaftOptions { batch: BatchLimits { defer, ..BatchLimits::default() }, ..RaftOptions::default() };
    let (core, local) = Local::serving();
    let metrics = local.metrics.clone();
    let log = durable::open(dir.path(), core, local, options).await.expect("open");
    let open = CommandOp::CreateSession { timeout_ms: 60_000, secret: SessionSecret([4; 16]), owner: None };
    let session = match log.submit(cmd(SessionId(0), 0, open)).await.expect("applied").outcome {
        Outcome::SessionCreated(id) => id,
        other => panic!("{other:?}"),
    };
    (log, session, metrics)
}

async fn applied(pending: Pending) -> u64 {
    let applied = tokio::time::timeout(DEADLINE, pending).await.expect("answered in time").expect("applied");
    assert!(matches!(applied.outcome, Outcome::Reply(Ok(_))), "{:?}", applied.outcome);
    applied.zxid
}

// G2: a waiting command alone stays held while nothing else comes; the next ordinary command
// takes it along in the same sync, and it is applied first, in the order submitted.
// G11: held no longer than its deadline: alone, it is applied (and durable) once that passes.
// One test, so that the process-wide sync count is this log's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_command_rides_with_the_next_one_or_goes_at_its_deadline() {
    let dir = TempDir::new("waiting");
    let (log, session, metrics) = open(&dir, Duration::from_secs(600)).await;
    let syncs = || metrics.log_fsyncs();
    let before = syncs();
    let mut waiting = log.submit_waiting(cmd(session, 1, create("/waiting")));
    // Held: not answered while nothing else is submitted (it would be, at once, if it went
    // alone).
    let alone = tokio::time::timeout(Duration::from_millis(300), &mut waiting).await;
    assert!(alone.is_err(), "a waiting command went alone: {alone:?}");
    assert_eq!(syncs(), before, "nothing was written while it waited");
    let next = log.submit(cmd(session, 2, create("/next")));
    let (first, second) = (applied(waiting).await, applied(next).await);
    assert!(first < second, "applied in submission order: {first} then {second}");
    assert_eq!(syncs(), before + 1, "the two shared one sync");
    log.shutdown().await;

    let dir = TempDir::new("waiting-alone");
    let (log, session, metrics) = open(&dir, Duration::from_millis(20)).await;
    let syncs = || metrics.log_fsyncs();
    let before = syncs();
    applied(log.submit_waiting(cmd(session, 1, create("/alone")))).await;
    assert_eq!(syncs(), before + 1, "it went alone, in a sync of its own");
    log.shutdown().await;
}
