//! The durable log's storage: openraft's own suite, torn tails, damage, and restarts from a
//! snapshot plus the log.

use openraft::async_runtime::WatchReceiver;
use openraft::error::ErrorSource;
use openraft::testing::log::{StoreBuilder, Suite};
use openraft::{EntryPayload, LogId, StorageError};
use std::path::{Path, PathBuf};
use std::time::Duration;
use ward_proto::{CreateMode, Op, SessionId, SessionSecret, Stat};
use ward_server::command::{Command, CommandOp, Outcome};
use ward_server::core::Core;
use ward_server::local::Local;
use ward_server::raft::log_store::{LogStore, PURGE_WAIT};
use ward_server::raft::record::{self, RecordRef, Slot};
use ward_server::raft::state_machine::StateMachineStore;
use ward_server::raft::types::{Entry, LeaderId, TypeConfig};
use ward_server::raft::wal::Wal;
use ward_server::raft::{self as durable, FileError, OnLoss, OpenError, RaftOptions};
use ward_server::replication::Replication;
use ward_testkit::TempDir;

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<TypeConfig>> {
        let dir = TempDir::new("suite");
        let err = |e: OpenError| StorageError::write(ErrorSource::from_error(&e));
        let log = LogStore::open(dir.path(), 4096).map_err(err)?;
        let mut sm = StateMachineStore::open(dir.path(), Local::serving().0).map_err(err)?;
        // As `raft::open` links them: applied entries leave memory and are read back from disk.
        sm.evict_applied(log.evictor());
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite_passes() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(Suite::test_all(Builder)).expect("openraft storage suite");
}

// ---- torn tails and damage, at the level of the write-ahead log ----

fn entry(index: u64, fill: u8) -> Entry {
    let cmd = Command {
        time_ms: index as i64,
        session: SessionId(7),
        xid: index,
        op: CommandOp::Op(Op::SetData { path: "/a".into(), data: vec![fill; 11], version: None }),
    };
    Entry {
        log_id: LogId::new(LeaderId { term: 1, node_id: 1 }, index),
        payload: EntryPayload::Normal(vec![cmd].into()),
    }
}

/// Writes `n` one-entry records into a fresh log in `dir`, and stops as a crash would: the
/// log's extent file says only what opening it recorded, so the last records may be torn.
fn write_log(dir: &Path, n: u64, segment_bytes: u64) {
    let (mut wal, replayed) = Wal::open(dir, segment_bytes).expect("open");
    assert!(replayed.is_empty());
    for i in 1..=n {
        wal.append(&RecordRef::Entries(&[entry(i, i as u8)])).expect("append");
    }
    // No clean close: that would record every record as durable (a later tear is then loss).
    std::mem::forget(wal);
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "wal"))
        .collect();
    files.sort();
    files
}

/// `(offset, payload end)` of every record in a segment.
fn record_spans(image: &[u8], first_rsn: u64) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let (mut at, mut rsn) = (record::SEGMENT_HEADER, first_rsn);
    while let Slot::Record { payload, next, .. } = record::read_at(image, at, rsn) {
        spans.push((at, payload.end));
        at = next;
        rsn += 1;
    }
    spans
}

fn indexes(dir: &Path) -> Result<Vec<u64>, OpenError> {
    let (_, replayed) = Wal::open(dir, 4096)?;
    Ok(entry_indexes(replayed))
}

fn entry_indexes(replayed: Vec<ward_server::raft::wal::Replayed>) -> Vec<u64> {
    replayed
        .into_iter()
        .flat_map(|r| match r.record {
            record::Record::Entries(es) => es.into_iter().map(|e| e.log_id.index).collect::<Vec<_>>(),
            other => panic!("unexpected record {other:?}"),
        })
        .collect()
}

/// Copies the log: its segments and its extent file.
fn copy_dir(from: &Path, to: &Path) {
    for item in std::fs::read_dir(from).expect("list") {
        let file = item.expect("entry").path();
        std::fs::copy(&file, to.join(file.file_name().expect("name"))).expect("copy");
    }
}

/// Reading back reads a segment in chunks, only as far as its records go: records past the
/// first chunk, and one that straddles two chunks, come back whole from a segment that is
/// mostly its zero-filled tail.
#[test]
fn entries_past_the_first_megabyte_of_a_large_segment_are_read_back() {
    use openraft::storage::{RaftLogReader, RaftLogStorage};
    let dir = TempDir::new("readback-large");
    let log_dir = dir.path().join("log");
    const SEGMENT: u64 = 8 << 20;
    {
        let (mut wal, _) = Wal::open(&log_dir, SEGMENT).expect("open");
        // 400 records of 100 entries each: about 1.6 MB of records in an 8 MiB segment.
        for r in 0..400u64 {
            let batch: Vec<_> = (1..=100).map(|i| entry(r * 100 + i, (r % 251) as u8)).collect();
            wal.append(&RecordRef::Entries(&batch)).expect("append");
        }
    }
    assert_eq!(segments(&log_dir).len(), 1, "the test needs one large segment");
    let rt = runtime();
    let mut store = LogStore::open(dir.path(), SEGMENT).expect("open store");
    store.evictor().applied(40_000);
    let mut reader = rt.block_on(store.get_log_reader());
    let all = rt.block_on(reader.try_get_log_entries(1..=40_000)).expect("read back");
    let logged: Vec<_> =
        (0..400u64).flat_map(|r| (1..=100).map(move |i| entry(r * 100 + i, (r % 251) as u8))).collect();
    assert!(all == logged, "entries read back from a large segment differ from those logged");
    let tail = rt.block_on(reader.try_get_log_entries(39_950..=40_000)).expect("read the last entries back");
    assert!(tail == logged[39_949..].to_vec(), "the last entries read back differ");
}

/// Applied entries leave the store's memory; reading them afterwards goes to the segment
/// files, across segment boundaries and past a truncation, and gives what was logged.
#[test]
fn applied_entries_are_read_back_from_disk_after_leaving_memory() {
    use openraft::storage::{RaftLogReader, RaftLogStorage};
    let dir = TempDir::new("readback");
    let log_dir = dir.path().join("log");
    {
        // Small segments so the entries span several files.
        let (mut wal, _) = Wal::open(&log_dir, 4096).expect("open");
        for i in 1..=300 {
            wal.append(&RecordRef::Entries(&[entry(i, 1)])).expect("append");
        }
        // Entries 201.. were replaced, as a follower does when a new leader disagrees.
        wal.append(&RecordRef::Truncate { since: 201 }).expect("truncate");
        for i in 201..=350 {
            wal.append(&RecordRef::Entries(&[entry(i, 2)])).expect("append");
        }
    }
    assert!(segments(&log_dir).len() > 2, "the test needs several segments");
    let rt = runtime();
    let mut store = LogStore::open(dir.path(), 4096).expect("open store");
    let from_memory = rt.block_on(store.try_get_log_entries(1..=350)).expect("read");
    store.evictor().applied(330);
    let state = rt.block_on(store.get_log_state()).expect("state");
    assert_eq!(state.last_log_id.map(|id| id.index), Some(350), "eviction must not move the last log id");
    let mut reader = rt.block_on(store.get_log_reader());
    let read_back = rt.block_on(reader.try_get_log_entries(1..=350)).expect("read back");
    assert_eq!(read_back, from_memory, "entries read back from disk differ from those logged");
    assert_eq!(read_back.len(), 350);
    let logged: Vec<_> = (1..=350).map(|i| entry(i, if i > 200 { 2 } else { 1 })).collect();
    assert_eq!(read_back, logged, "the truncated entries must not come back");
    let middle = rt.block_on(reader.try_get_log_entries(190..215)).expect("read");
    assert_eq!(middle, from_memory[189..214].to_vec());
    // Everything applied and evicted: the last entry's id still comes from what was evicted.
    store.evictor().applied(350);
    let state = rt.block_on(store.get_log_state()).expect("state");
    assert_eq!(state.last_log_id.map(|id| id.index), Some(350));
    // An unbounded start reads from just past what was purged.
    rt.block_on(store.purge(LogId::new(LeaderId { term: 1, node_id: 1 }, 3))).expect("purge");
    let after_purge = rt.block_on(reader.try_get_log_entries(..=5)).expect("read");
    assert_eq!(after_purge.iter().map(|e| e.log_id.index).collect::<Vec<_>>(), [4, 5]);

    // Damage to an acknowledged record in a full segment is an error, not a gap.
    let first = &segments(&log_dir)[0];
    let mut image = std::fs::read(first).expect("read segment");
    let spans = record_spans(&image, 1);
    image[spans[0].1 - 1] ^= 0xff;
    std::fs::write(first, &image).expect("damage segment");
    let damaged = rt.block_on(reader.try_get_log_entries(1..=10));
    assert!(damaged.is_err(), "a damaged record must not be skipped: {damaged:?}");
}

/// Writes a log of 300 one-command entries in segments of 4 KiB under `dir`; its directory.
fn log_of_300_entries(dir: &Path) -> PathBuf {
    let log_dir = dir.join("log");
    let (mut wal, _) = Wal::open(&log_dir, 4096).expect("open");
    for i in 1..=300 {
        wal.append(&RecordRef::Entries(&[entry(i, 1)])).expect("append");
    }
    log_dir
}

/// G11: a follower's openraft purges behind a snapshot received from the leader while the
/// state machine may still be writing it. The purge waits for that snapshot to be in place
/// before it reaches the disk: a crash meanwhile leaves the older snapshot and the whole log
/// after it, and once it is done the log on disk is purged as far as openraft asked.
#[test]
fn a_purge_reaches_the_disk_only_once_the_snapshot_it_follows_is_in_place() {
    use openraft::storage::RaftLogStorage;
    use ward_server::raft::snapshot_file::InPlace;
    let at = |index| LogId::new(LeaderId { term: 1, node_id: 1 }, index);
    let dir = TempDir::new("purge-behind");
    let log_dir = log_of_300_entries(dir.path());
    let segments_before = segments(&log_dir).len();
    let rt = runtime();
    {
        let mut store = LogStore::open(dir.path(), 4096).expect("open store");
        let in_place = InPlace::new(Some(at(100)), 0);
        store.purge_behind(in_place.clone(), PURGE_WAIT);
        rt.block_on(async {
            let purge = store.purge(at(250));
            tokio::pin!(purge);
            let early = tokio::time::timeout(Duration::from_millis(200), &mut purge).await;
            assert!(early.is_err(), "the purge went ahead of the snapshot it follows");
            assert_eq!(segments(&log_dir).len(), segments_before, "nothing removed meanwhile");
            let (from, to) = (dir.path().join("received.tmp"), dir.path().join("received"));
            std::fs::write(&from, b"a snapshot").expect("write");
            assert!(in_place.put(&from, &to, Some(at(250)), 0).expect("put"));
            purge.await.expect("purge");
        });
        let state = rt.block_on(store.get_log_state()).expect("state");
        assert_eq!(state.last_purged_log_id.map(|id| id.index), Some(250));
    }
    assert!(segments(&log_dir).len() < segments_before, "segments behind the snapshot are removed");
    let mut store = LogStore::open(dir.path(), 4096).expect("reopen store");
    let state = rt.block_on(store.get_log_state()).expect("state");
    assert_eq!(state.last_purged_log_id.map(|id| id.index), Some(250), "purged on disk");
    assert_eq!(state.last_log_id.map(|id| id.index), Some(300));
}

/// G11: a purge whose snapshot never comes into place (a received one that failed its
/// checks) is cut short on disk at the snapshot that is there: openraft's view of the log
/// moves on, but after a crash the log from that snapshot on is all still there.
#[test]
fn a_purge_with_no_snapshot_in_place_to_follow_reaches_the_disk_only_as_far_as_the_one_there() {
    use openraft::storage::{RaftLogReader, RaftLogStorage};
    use ward_server::raft::snapshot_file::InPlace;
    let at = |index| LogId::new(LeaderId { term: 1, node_id: 1 }, index);
    let dir = TempDir::new("purge-cut-short");
    log_of_300_entries(dir.path());
    let rt = runtime();
    {
        let mut store = LogStore::open(dir.path(), 4096).expect("open store");
        store.purge_behind(InPlace::new(Some(at(100)), 0), Duration::from_millis(300));
        rt.block_on(store.purge(at(250))).expect("a purge cut short still succeeds");
        let state = rt.block_on(store.get_log_state()).expect("state");
        assert_eq!(state.last_purged_log_id.map(|id| id.index), Some(250), "openraft's view moves on");
    }
    let mut store = LogStore::open(dir.path(), 4096).expect("reopen store");
    let state = rt.block_on(store.get_log_state()).expect("state");
    let purged = state.last_purged_log_id.map_or(0, |id| id.index);
    assert!(purged <= 100, "purged on disk past the snapshot in place, to {purged}");
    assert_eq!(state.last_log_id.map(|id| id.index), Some(300));
    let mut reader = rt.block_on(store.get_log_reader());
    let kept = rt.block_on(reader.try_get_log_entries(101..=300)).expect("read the log after the snapshot");
    assert_eq!(kept.iter().map(|e| e.log_id.index).collect::<Vec<_>>(), (101..=300).collect::<Vec<_>>());
}

#[test]
fn a_segment_cut_inside_its_last_two_records_is_refused_and_accepted_keeps_exactly_the_complete_prefix() {
    let original = TempDir::new("cut-orig");
    write_log(original.path(), 6, 4096);
    let files = segments(original.path());
    assert_eq!(files.len(), 1);
    let image = std::fs::read(&files[0]).expect("read");
    let spans = record_spans(&image, 1);
    assert_eq!(spans.len(), 6);
    let padded = |(at, end): (usize, usize)| record::record_size(end - at - record::RECORD_HEADER) > end - at;
    assert!(padded(spans[4]) && padded(spans[5]), "cuts inside padding are covered");
    let from = spans[4].0;
    let to = spans[5].0 + record::record_size(spans[5].1 - spans[5].0 - record::RECORD_HEADER);
    for cut in from..=to {
        let dir = TempDir::new("cut");
        copy_dir(original.path(), dir.path());
        let name = files[0].file_name().expect("name");
        let file = std::fs::OpenOptions::new().write(true).open(dir.path().join(name)).expect("open");
        file.set_len(cut as u64).expect("cut");
        drop(file);
        // A record survives when its payload is whole (its zero padding may be cut).
        let complete = spans.iter().filter(|(_, end)| *end <= cut).count() as u64;
        // A segment never shrinks by itself: a cut file is refused, naming it, unless the
        // loss is accepted.
        match Wal::open(dir.path(), 4096) {
            Err(OpenError::DataLoss { path, reason }) => {
                assert_eq!(path, dir.path().join(name), "cut at {cut}: {reason}");
                assert!(reason.contains(&format!("is {cut} bytes, but was created with 4096")), "{reason}");
            }
            other => panic!("cut at {cut}: expected DataLoss, got {:?}", other.map(|_| ())),
        }
        let (mut wal, replayed) =
            Wal::open_with(dir.path(), 4096, OnLoss::Accept).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert_eq!(entry_indexes(replayed), (1..=complete).collect::<Vec<_>>(), "cut at {cut}");
        // The repaired log takes new records after the prefix, and keeps them.
        wal.append(&RecordRef::Entries(&[entry(complete + 1, 0xEE)])).expect("append after repair");
        drop(wal);
        let got = indexes(dir.path()).expect("reopen after append");
        assert_eq!(got, (1..=complete + 1).collect::<Vec<_>>(), "cut at {cut}, then append");
    }
}

#[test]
fn a_partly_written_last_record_in_a_preallocated_file_is_dropped() {
    // A crash mid-write persists any subset of the record's sectors; the file keeps its size.
    let original = TempDir::new("torn-orig");
    write_log(original.path(), 4, 4096);
    let files = segments(original.path());
    let name = files[0].file_name().expect("name").to_owned();
    let image = std::fs::read(&files[0]).expect("read");
    let (start, end) = *record_spans(&image, 1).last().expect("records");
    for split in start + 1..end {
        // Only the head of the record reached the disk, or only its tail.
        for keep_head in [true, false] {
            let dir = TempDir::new("torn");
            copy_dir(original.path(), dir.path());
            let mut bytes = image.clone();
            let lost = if keep_head { split..end } else { start..split };
            bytes[lost].fill(0);
            std::fs::write(dir.path().join(&name), &bytes).expect("write");
            // Zeroing bytes that were zero anyway leaves the record whole.
            let whole = bytes == image;
            let got = indexes(dir.path()).unwrap_or_else(|e| panic!("split {split}, head {keep_head}: {e}"));
            let want: Vec<u64> = if whole { vec![1, 2, 3, 4] } else { vec![1, 2, 3] };
            assert_eq!(got, want, "split {split}, head {keep_head}");
        }
    }
}

#[test]
fn a_flipped_byte_in_an_earlier_record_refuses_to_open_naming_file_and_offset() {
    let original = TempDir::new("flip-orig");
    write_log(original.path(), 5, 4096);
    let files = segments(original.path());
    let name = files[0].file_name().expect("name").to_owned();
    let image = std::fs::read(&files[0]).expect("read");
    let spans = record_spans(&image, 1);
    // Every byte of record 2 (header, payload, padding), and of the segment header.
    let (start, end) = (spans[1].0, spans[2].0);
    let targets = (start..end).map(|at| (at, start)).chain((0..record::SEGMENT_HEADER).map(|at| (at, 0)));
    for (at, blamed) in targets {
        let dir = TempDir::new("flip");
        copy_dir(original.path(), dir.path());
        let mut bytes = image.clone();
        bytes[at] ^= 0x5A;
        std::fs::write(dir.path().join(&name), &bytes).expect("write");
        match Wal::open(dir.path(), 4096) {
            Err(OpenError::File(FileError::Damaged { path, offset, reason })) => {
                assert_eq!(path, dir.path().join(&name), "flip at {at}");
                assert_eq!(offset, blamed as u64, "flip at {at}: {reason}");
                let message = FileError::Damaged { path, offset, reason }.to_string();
                assert!(message.contains(&format!("byte offset {blamed}")), "{message}");
                assert!(message.contains(name.to_str().expect("utf-8")), "{message}");
            }
            Err(other) => panic!("flip at {at}: unexpected error {other}"),
            Ok(_) => panic!("flip at {at}: damaged log opened"),
        }
    }
}

#[test]
fn damage_at_the_end_of_a_full_segment_refuses_to_open() {
    let original = TempDir::new("flip-seg");
    // Records of ~100 bytes in 4 KiB segments: several segments.
    write_log(original.path(), 300, 4096);
    let files = segments(original.path());
    assert!(files.len() >= 3, "{} segments", files.len());
    assert_eq!(indexes(original.path()).expect("open"), (1..=300).collect::<Vec<_>>());
    // The last record of the first segment: nothing intact follows it in its own file.
    let image = std::fs::read(&files[0]).expect("read");
    let spans = record_spans(&image, 1);
    let (at, _) = *spans.last().expect("records");
    let mut bytes = image.clone();
    bytes[at + record::RECORD_HEADER] ^= 1;
    std::fs::write(&files[0], &bytes).expect("write");
    match Wal::open(original.path(), 4096) {
        Err(OpenError::File(FileError::Damaged { path, offset, .. })) => {
            assert_eq!(path, files[0]);
            assert_eq!(offset, at as u64);
        }
        other => panic!("expected damage, got {:?}", other.map(|_| ())),
    }
}

// ---- restarts through openraft: snapshot + log replay ----

fn options(snapshot_every: u64) -> RaftOptions {
    // Snapshots by entry count alone, so that the tests know when they come.
    let snapshot_every = Some(snapshot_every);
    RaftOptions {
        segment_bytes: 4096,
        snapshot_every,
        snapshot_log_percent: 0,
        keep_after_snapshot: 0,
        ..RaftOptions::default()
    }
}

fn cmd(session: SessionId, xid: u64, op: CommandOp) -> Command {
    Command { time_ms: 1_000 + xid as i64, session, xid, op }
}

/// Every node (path, data, stat), sorted, plus the sessions and the last zxid.
fn digest(core: &Core) -> Vec<u8> {
    core.read(|s| {
        let mut nodes: Vec<(String, Vec<u8>, Stat)> = Vec::new();
        let mut stack = vec!["/".to_string()];
        while let Some(path) = stack.pop() {
            let node = s.tree().get(&path).expect("listed node exists");
            for child in node.children.iter() {
                stack.push(ward_proto::path::join(&path, child));
            }
            nodes.push((path, node.data().to_vec(), s.tree().stat(node)));
        }
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        let sessions: Vec<(SessionId, u32)> = s.sessions().map(|(id, r)| (id, r.timeout_ms)).collect();
        postcard::to_allocvec(&(nodes, sessions, s.last_zxid())).expect("encode digest")
    })
}

async fn create_session(log: &dyn Replication) -> SessionId {
    let op = CommandOp::CreateSession { timeout_ms: 30_000, secret: SessionSecret([3; 16]), owner: None };
    match log.submit(cmd(SessionId(0), 0, op)).await.expect("applied").outcome {
        Outcome::SessionCreated(id) => id,
        other => panic!("{other:?}"),
    }
}

/// Sequential writes (one Raft entry each), a mix of creates, sequentials, ephemerals, sets
/// and deletes.
async fn write_tree(log: &dyn Replication, session: SessionId, n: u64) {
    for i in 0..n {
        let op = match i % 5 {
            0 => Op::Create { path: format!("/n{i}"), data: vec![i as u8; 5], mode: CreateMode::Persistent },
            1 => Op::Create { path: "/seq-".into(), data: vec![], mode: CreateMode::PersistentSequential },
            2 => Op::Create { path: format!("/e{i}"), data: vec![1], mode: CreateMode::Ephemeral },
            3 => Op::SetData { path: format!("/n{}", i - 3), data: vec![9; 3], version: None },
            _ => Op::Delete { path: format!("/e{}", i - 2), version: None },
        };
        let applied = log.submit(cmd(session, i + 1, CommandOp::Op(op))).await.expect("applied");
        assert!(matches!(applied.outcome, Outcome::Reply(Ok(_))), "write {i}: {:?}", applied.outcome);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

#[test]
fn restart_after_snapshots_and_purges_gives_the_same_tree() {
    let dir = TempDir::new("snap");
    let rt = runtime();
    let (before, session) = rt.block_on(async {
        let (core, local) = Local::serving();
        let log = durable::open(dir.path(), core.clone(), local, options(10)).await.expect("open");
        let session = create_session(&log).await;
        write_tree(&log, session, 300).await;
        let m = log
            .raft()
            .wait(Some(Duration::from_secs(10)))
            .metrics(|m| m.purged.is_some_and(|p| p.index > 250), "purged")
            .await;
        let m = m.expect("a snapshot was taken and the log purged behind it");
        assert!(m.snapshot.is_some());
        let digest = digest(&core);
        log.shutdown().await;
        (digest, session)
    });
    assert!(dir.path().join("snapshot").exists());
    let first_segment = dir.path().join("log").join("00000000000000000001.wal");
    assert!(!first_segment.exists(), "purged segments are deleted");
    rt.block_on(async {
        let (core, local) = Local::serving();
        let log = durable::open(dir.path(), core.clone(), local.clone(), options(10)).await.expect("reopen");
        assert_eq!(digest(&core), before, "same tree, sessions and zxid after restart");
        assert_eq!(local.sessions.len(), 1, "the session's deadline restarted");
        let zxid = core.read(|s| s.last_zxid());
        let op = CommandOp::Op(Op::Create { path: "/after".into(), data: vec![], mode: CreateMode::Persistent });
        let applied = log.submit(cmd(session, 1_000, op)).await.expect("write after restart");
        assert_eq!(applied.zxid, zxid + 1);
        log.shutdown().await;
    });
}

#[test]
fn restart_replays_the_log_without_a_snapshot() {
    let dir = TempDir::new("replay");
    let rt = runtime();
    let before = rt.block_on(async {
        let (core, local) = Local::serving();
        let log = durable::open(dir.path(), core.clone(), local, options(1_000_000)).await.expect("open");
        let session = create_session(&log).await;
        write_tree(&log, session, 40).await;
        let digest = digest(&core);
        log.shutdown().await;
        digest
    });
    assert!(!dir.path().join("snapshot").exists());
    rt.block_on(async {
        let (core, local) = Local::serving();
        let log = durable::open(dir.path(), core.clone(), local, options(1_000_000)).await.expect("reopen");
        assert_eq!(digest(&core), before);
        log.shutdown().await;
    });
}

#[test]
fn concurrent_submits_share_entries_and_apply_in_submission_order() {
    let dir = TempDir::new("batch");
    let rt = runtime();
    rt.block_on(async {
        let (core, local) = Local::serving();
        let log = durable::open(dir.path(), core.clone(), local, options(1_000_000)).await.expect("open");
        let session = create_session(&log).await;
        let entries_before = log.raft().metrics().borrow_watched().last_log_index.unwrap_or(0);
        let n = 2000u64;
        let pending: Vec<_> = (0..n)
            .map(|i| {
                let op = Op::Create { path: format!("/c{i}"), data: vec![], mode: CreateMode::Persistent };
                log.submit(cmd(session, i, CommandOp::Op(op)))
            })
            .collect();
        let mut last = 0;
        for p in pending {
            let applied = p.await.expect("applied");
            assert!(applied.zxid > last, "zxids follow submission order");
            last = applied.zxid;
        }
        let entries = log.raft().metrics().borrow_watched().last_log_index.unwrap_or(0) - entries_before;
        assert!(entries * 5 <= n, "{n} commands took {entries} entries: no group commit");
        log.shutdown().await;
    });
}

/// The segment is the record's size rounded up to whole 4 KiB pages (the header counts
/// pages), so the next small record fits after it.
#[test]
fn a_record_larger_than_a_segment_gets_a_larger_segment() {
    let dir = TempDir::new("big");
    {
        let (mut wal, _) = Wal::open(dir.path(), 4096).expect("open");
        wal.append(&RecordRef::Entries(&[entry(1, 1)])).expect("small");
        let mut big = entry(2, 2);
        if let EntryPayload::Normal(cmds) = &mut big.payload {
            cmds.commands[0].op =
                CommandOp::Op(Op::SetData { path: "/a".into(), data: vec![7; 10_000], version: None });
        }
        wal.append(&RecordRef::Entries(&[big])).expect("big");
        wal.append(&RecordRef::Entries(&[entry(3, 3)])).expect("small after big");
    }
    let sizes: Vec<u64> = segments(dir.path()).iter().map(|p| std::fs::metadata(p).expect("stat").len()).collect();
    assert_eq!(sizes, [4096, 12288], "segment sizes");
    assert_eq!(indexes(dir.path()).expect("reopen"), vec![1, 2, 3]);
}
