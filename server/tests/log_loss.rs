//! Lost log files, in process (G11; docs/storage.md "Lost files"): what opening the log
//! refuses, naming the file, and what it opens with when the loss is accepted. Through the
//! binary, with `--accept-data-loss`: `upgrade.rs`.

use openraft::{EntryPayload, LogId};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use ward_proto::{CreateMode, Op, SessionId, SessionSecret};
use ward_server::command::{Command, CommandOp, Outcome};
use ward_server::core::Core;
use ward_server::local::Local;
use ward_server::raft::record::{Record, RecordRef};
use ward_server::raft::types::{Entry, LeaderId};
use ward_server::raft::wal::{Replayed, Wal};
use ward_server::raft::{self as durable, OnLoss, OpenError, RaftLog, RaftOptions};
use ward_server::replication::Replication;
use ward_testkit::TempDir;

fn entry(index: u64) -> Entry {
    let op = Op::SetData { path: "/a".into(), data: vec![index as u8; 40], version: None };
    let cmd = Command { time_ms: 0, session: SessionId(7), xid: index, op: CommandOp::Op(op) };
    Entry {
        log_id: LogId::new(LeaderId { term: 1, node_id: 1 }, index),
        payload: EntryPayload::Normal(vec![cmd].into()),
    }
}

/// Appends entries `from..=to` to the log in `dir`; `clean` closes it as a clean stop does,
/// otherwise it stops as a crash would.
fn append(dir: &Path, from: u64, to: u64, clean: bool) {
    let (mut wal, _) = Wal::open(dir, 4096).expect("open");
    for i in from..=to {
        wal.append(&RecordRef::Entries(&[entry(i)])).expect("append");
    }
    match clean {
        true => drop(wal),
        false => std::mem::forget(wal),
    }
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let items = std::fs::read_dir(dir).expect("list").map(|e| e.expect("entry").path());
    let mut files: Vec<_> = items.filter(|p| p.extension().is_some_and(|x| x == "wal")).collect();
    files.sort();
    files
}

fn indexes(replayed: Vec<Replayed>) -> Vec<u64> {
    let entries = replayed.into_iter().flat_map(|r| match r.record {
        Record::Entries(es) => es,
        other => panic!("unexpected record {other:?}"),
    });
    entries.map(|e| e.log_id.index).collect()
}

/// Asserts that `result` is a refusal for lost data naming `path`, with `words` in its reason;
/// returns the whole message.
fn assert_loss<T>(result: Result<T, OpenError>, path: &Path, words: &str) -> String {
    match result {
        Err(OpenError::DataLoss { path: named, reason }) => {
            assert_eq!(named, path, "the file named ({reason})");
            assert!(reason.contains(words), "want {words:?} in {reason:?}");
            OpenError::DataLoss { path: named, reason }.to_string()
        }
        Err(other) => panic!("expected a refusal for lost data, got: {other}"),
        Ok(_) => panic!("opened a log that lost data"),
    }
}

/// A crash never removes a segment: the newest ones deleted are refused, naming the first
/// missing one (a crash between creating a segment and recording it leaves an empty one,
/// whose loss loses nothing). Accepted, the log opens with the older segments' records, and
/// the next plain opening goes on from there.
#[test]
fn deleted_newest_segments_are_refused_naming_the_first_missing() {
    let dir = TempDir::new("newest");
    append(dir.path(), 1, 200, false);
    let files = segments(dir.path());
    assert!(files.len() >= 4, "{} segments", files.len());
    let (newest, second) = (&files[files.len() - 1], &files[files.len() - 2]);
    std::fs::remove_file(newest).expect("rm");
    let message = assert_loss(Wal::open(dir.path(), 4096), newest, "missing: the log had reached segment");
    assert!(message.contains("--accept-data-loss"), "{message}");
    std::fs::remove_file(second).expect("rm");
    assert_loss(Wal::open(dir.path(), 4096), second, "missing, and 1 newer segment file(s) up to");

    let (_, replayed) = Wal::open_with(dir.path(), 4096, OnLoss::Accept).expect("accepted");
    let kept = indexes(replayed);
    assert!(!kept.is_empty() && kept.len() < 200, "{} entries kept", kept.len());
    assert_eq!(kept, (1..=kept.len() as u64).collect::<Vec<_>>(), "a prefix is kept");
    let (_, replayed) = Wal::open(dir.path(), 4096).expect("the loss was recorded as accepted");
    assert_eq!(indexes(replayed), kept);
}

/// After a clean close every record is known durable: losing the last ones (their bytes
/// zeroed, the file keeping its size) is refused naming the file. After a crash the same
/// bytes are a torn write, dropped (raft_storage.rs).
#[test]
fn records_lost_after_a_clean_close_are_refused() {
    let dir = TempDir::new("clean");
    append(dir.path(), 1, 5, true);
    let file = &segments(dir.path())[0];
    let mut image = std::fs::read(file).expect("read");
    let end = image.iter().rposition(|b| *b != 0).expect("records") + 1;
    image[end - 8..end].fill(0);
    std::fs::write(file, &image).expect("write");
    assert_loss(Wal::open(dir.path(), 4096), file, "records up to #5 were durable");
    let (_, replayed) = Wal::open_with(dir.path(), 4096, OnLoss::Accept).expect("accepted");
    assert_eq!(indexes(replayed), [1, 2, 3, 4]);
}

/// Segments of format 2 on come with the extent file; without it the log's end cannot be
/// checked, and the opening is refused naming it.
#[test]
fn a_missing_extent_file_is_refused() {
    let dir = TempDir::new("extent");
    append(dir.path(), 1, 5, true);
    let extent = dir.path().join("extent");
    std::fs::remove_file(&extent).expect("rm");
    assert_loss(Wal::open(dir.path(), 4096), &extent, "missing, but the segments were written by a version");
    let (_, replayed) = Wal::open_with(dir.path(), 4096, OnLoss::Accept).expect("accepted");
    assert_eq!(indexes(replayed), [1, 2, 3, 4, 5]);
    assert!(extent.exists(), "written again");
}

/// A new directory's first start writes its first segment, then the extent file: a start
/// killed between the two leaves an empty segment and no extent, which opens (nothing was
/// ever written), where a missing extent beside records is refused (above).
#[test]
fn a_first_start_killed_before_its_extent_was_written_opens() {
    let dir = TempDir::new("first-start");
    drop(Wal::open(dir.path(), 4096).expect("a new log"));
    std::fs::remove_file(dir.path().join("extent")).expect("rm");
    let (_, replayed) = Wal::open(dir.path(), 4096).expect("opens");
    assert!(replayed.is_empty());
    assert!(dir.path().join("extent").exists(), "written this time");
}

/// The golden directory's log (format 1, no extent file, its zero tail cut off) opens as it
/// was written, and gets an extent file.
#[test]
fn the_golden_v1_log_opens_as_written() {
    let dir = TempDir::new("golden-log");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1/log");
    for file in segments(&golden) {
        std::fs::copy(&file, dir.path().join(file.file_name().expect("name"))).expect("copy");
    }
    let (_, replayed) = Wal::open(dir.path(), 1 << 20).expect("open");
    assert_eq!(replayed.len(), 65, "records");
    let entries: Vec<u64> = replayed
        .into_iter()
        .flat_map(|r| match r.record {
            Record::Entries(es) => es.into_iter().map(|e| e.log_id.index).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(entries, (0..=63).collect::<Vec<_>>());
    assert!(dir.path().join("extent").exists());
    drop(Wal::open(dir.path(), 1 << 20).expect("open again"));
}

// ---- the log against the snapshot, through openraft ----

/// Snapshots by entry count alone, so that the tests know when they come.
fn options(snapshot_every: u64, keep_after_snapshot: u64) -> RaftOptions {
    let snapshot_every = Some(snapshot_every);
    RaftOptions {
        segment_bytes: 4096,
        snapshot_every,
        snapshot_log_percent: 0,
        keep_after_snapshot,
        ..RaftOptions::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

async fn open(dir: &Path, options: RaftOptions) -> Result<(RaftLog, Arc<Core>, Arc<Local>), OpenError> {
    let (core, local) = Local::serving();
    let log = durable::open(dir, core.clone(), local.clone(), options).await?;
    Ok((log, core, local))
}

/// Creates `/n0` .. `/n{n-1}`, one Raft entry of about 300 bytes each (a dozen to a 4 KiB
/// segment).
async fn write_nodes(log: &dyn Replication, n: u64) {
    let op = CommandOp::CreateSession { timeout_ms: 30_000, secret: SessionSecret([3; 16]), owner: None };
    let open = Command { time_ms: 1, session: SessionId(0), xid: 0, op };
    let Outcome::SessionCreated(session) = log.submit(open).await.expect("session").outcome else {
        panic!("no session")
    };
    for i in 0..n {
        let op = Op::Create { path: format!("/n{i}"), data: vec![1; 250], mode: CreateMode::Persistent };
        let cmd = Command { time_ms: 2, session, xid: i + 1, op: CommandOp::Op(op) };
        log.submit(cmd).await.expect("create");
    }
}

fn nodes(core: &Core) -> usize {
    core.read(|s| s.tree().get("/").map_or(0, |n| n.children.len()))
}

/// Writes `n` nodes in a fresh directory with `options`, and stops cleanly.
fn written(n: u64, options: RaftOptions) -> TempDir {
    let dir = TempDir::new("raft-loss");
    runtime().block_on(async {
        let (log, _, _) = open(dir.path(), options).await.expect("open");
        write_nodes(&log, n).await;
        log.shutdown().await;
    });
    dir
}

/// Asserts that `result` is a refusal that no accepted loss helps, naming `path`, with
/// `words` in its reason.
fn assert_unservable<T>(result: Result<T, OpenError>, path: &Path, words: &str) {
    match result {
        Err(OpenError::Unservable { path: named, reason }) => {
            assert_eq!(named, path, "the file named ({reason})");
            assert!(reason.contains(words), "want {words:?} in {reason:?}");
        }
        Err(other) => panic!("expected an unservable directory, got: {other}"),
        Ok(_) => panic!("opened a directory that cannot be served"),
    }
}

/// The oldest segments deleted one by one: while they held only entries the snapshot
/// covers, nothing is lost (the log records them as purged, the tree comes back whole);
/// the first that held entries after the snapshot is refused, naming it. Accepted, what
/// follows the gap cannot be applied, and the snapshot's tree is served.
#[test]
fn deleted_oldest_segments_are_refused_once_they_held_entries_after_the_snapshot() {
    let dir = written(100, options(40, 1000));
    let log_dir = dir.path().join("log");
    let rt = runtime();
    let mut covered = 0;
    let mut refused = None;
    // Bounded by the segments there are; a successful open may purge some more.
    for _ in 0..segments(&log_dir).len() {
        let files = segments(&log_dir);
        if files.len() < 2 {
            break;
        }
        std::fs::remove_file(&files[0]).expect("rm");
        let Ok((log, core, _)) = rt.block_on(open(dir.path(), options(40, 1000))) else {
            refused = Some(files[0].clone());
            break;
        };
        assert_eq!(nodes(&core), 100, "only entries the snapshot covers were lost");
        rt.block_on(log.shutdown());
        covered += 1;
    }
    let refused = refused.expect("deleting all but the newest segment passes the snapshot");
    assert!(covered > 0, "the first segment held only entries the snapshot covers");
    assert_loss(rt.block_on(open(dir.path(), options(40, 1000))), &refused, "are neither in the snapshot (up to index");
    assert_serves_part_of_100(&rt, dir.path(), options(40, 1000).accepting());
}

/// Without a snapshot, entries missing at the front of the log leave nothing that can be
/// served (every later entry builds on them): refused, accepted or not.
#[test]
fn a_deleted_first_segment_without_a_snapshot_is_unservable() {
    let dir = written(100, options(1_000_000, 0));
    let first = segments(&dir.path().join("log"))[0].clone();
    std::fs::remove_file(&first).expect("rm");
    let rt = runtime();
    for options in [options(1_000_000, 0), options(1_000_000, 0).accepting()] {
        assert_unservable(rt.block_on(open(dir.path(), options)), &first, "neither in the snapshot (none)");
    }
}

/// The snapshot deleted after the log was purged behind it: the tree cannot be rebuilt, and
/// that is refused even when a loss is accepted.
#[test]
fn a_deleted_snapshot_behind_a_purge_is_unservable() {
    let dir = written(100, options(10, 0));
    std::fs::remove_file(dir.path().join("snapshot")).expect("rm");
    let rt = runtime();
    for options in [options(10, 0), options(10, 0).accepting()] {
        let result = rt.block_on(open(dir.path(), options));
        assert_unservable(result, &dir.path().join("snapshot"), "missing, but the log was purged up to index");
    }
}

/// The whole log directory deleted beside a snapshot: refused naming it; accepted, the
/// snapshot's tree is served.
#[test]
fn a_deleted_log_directory_beside_a_snapshot_is_refused() {
    let dir = written(100, options(30, 0));
    let log_dir = dir.path().join("log");
    std::fs::remove_dir_all(&log_dir).expect("rm -r");
    let rt = runtime();
    assert_loss(rt.block_on(open(dir.path(), options(30, 0))), &log_dir, "holds no log segment, but the snapshot");
    assert_serves_part_of_100(&rt, dir.path(), options(30, 0).accepting());
}

/// Opens `dir` (100 nodes were written) and checks that it serves some of them, not all: a
/// snapshot's worth.
fn assert_serves_part_of_100(rt: &tokio::runtime::Runtime, dir: &Path, options: RaftOptions) {
    rt.block_on(async {
        let (log, core, _) = open(dir, options).await.expect("opens");
        let kept = nodes(&core);
        assert!(kept > 0 && kept < 100, "the snapshot's {kept} nodes");
        log.shutdown().await;
    });
}

trait Accepting {
    fn accepting(self) -> Self;
}

impl Accepting for RaftOptions {
    fn accepting(self) -> RaftOptions {
        RaftOptions { on_loss: OnLoss::Accept, ..self }
    }
}
