//! A snapshot received from a leader (docs/storage.md, "Sending and receiving snapshots"):
//! written into a file of its own chunk by chunk, checked as a snapshot file is at startup,
//! and renamed into place only then. A receive abandoned or cut short by a crash, or a file
//! that fails the checks, leaves the snapshot before it current, and no file behind. A
//! snapshot build dropped unfinished does not stop the next one being asked for.

use super::*;
use crate::command::{Command, CommandOp};
use crate::local::Local;
use crate::raft::fsutil::write_checked;
use crate::raft::snapshot_format::{magic, BodyRef, SNAPSHOT_VERSION};
use openraft::LogId as RaftLogId;
use tokio::io::{AsyncSeekExt, AsyncWriteExt};
use ward_proto::{CreateMode, Op, SessionId, SessionSecret};
use ward_testkit::TempDir;

/// A state holding the persistent node `path`, and the metadata of a snapshot of it at
/// log index `index`.
fn snapshot_of(path: &str, index: u64) -> (SnapshotMeta, StateMachine) {
    let mut state = StateMachine::default();
    let command = |session, op| Command { time_ms: 1, session: SessionId(session), xid: 0, op };
    let open = CommandOp::CreateSession { timeout_ms: 4000, secret: SessionSecret([1; 16]), owner: None };
    state.apply_command(&command(0, open));
    let create = Op::Create { path: path.into(), data: vec![7; 100], mode: CreateMode::Persistent };
    state.apply_command(&command(1, CommandOp::Op(create)));
    let meta = SnapshotMeta {
        last_log_id: Some(RaftLogId::new(crate::raft::types::LeaderId { term: 1, node_id: 1 }, index)),
        last_membership: StoredMembership::default(),
    };
    (meta, state)
}

/// The bytes of a snapshot file of `state` at `meta`, as a leader sends them.
fn file_bytes(meta: &SnapshotMeta, state: &StateMachine) -> Vec<u8> {
    let dir = TempDir::new("snapshot-bytes");
    let path = dir.path().join("snapshot");
    let payload = postcard::to_allocvec(&BodyRef { meta, state }).expect("encode");
    write_checked(&path, &magic(SNAPSHOT_VERSION), &payload).expect("write");
    std::fs::read(&path).expect("read")
}

/// Writes `bytes` into `into` as openraft does: chunk by chunk, at their offsets.
async fn send(into: &mut SnapshotFile, bytes: &[u8], chunk: usize) {
    for (i, piece) in bytes.chunks(chunk).enumerate() {
        into.seek(std::io::SeekFrom::Start((i * chunk) as u64)).await.expect("seek");
        into.write_all(piece).await.expect("write a chunk");
    }
}

/// A new file beside `sm`'s snapshot, as the peer service opens one for a transfer.
async fn begin_receiving(sm: &mut StateMachineStore) -> SnapshotFile {
    sm.received += 1;
    SnapshotFile::receiving(&sm.snapshot_path, sm.received).await.expect("begin")
}

fn receiving_files(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).expect("list").map(|e| e.expect("entry").file_name());
    names.map(|n| n.to_string_lossy().into_owned()).filter(|n| n.starts_with("snapshot.receiving-")).collect()
}

fn holds(sm: &StateMachineStore, path: &str) -> bool {
    sm.core.read(|s| s.tree().get(path).is_some())
}

async fn current(sm: &mut StateMachineStore) -> Option<SnapshotMeta> {
    sm.get_current_snapshot().await.expect("current snapshot").map(|s| s.meta)
}

#[tokio::test]
async fn a_receive_abandoned_midway_leaves_the_previous_snapshot_current_after_reopen() {
    let dir = TempDir::new("snapshot-receive");
    let (old_meta, old_state) = snapshot_of("/old", 5);
    std::fs::write(dir.path().join("snapshot"), file_bytes(&old_meta, &old_state)).expect("the old snapshot");
    let (new_meta, new_state) = snapshot_of("/new", 9);
    let new_file = file_bytes(&new_meta, &new_state);
    let mut sm = StateMachineStore::open(dir.path(), Local::serving().0).expect("open");
    assert!(holds(&sm, "/old"));

    // Abandoned: openraft drops the file it was writing.
    let mut receiving = begin_receiving(&mut sm).await;
    send(&mut receiving, &new_file[..new_file.len() / 2], 64).await;
    receiving.flush().await.expect("flush");
    assert_eq!(receiving_files(dir.path()).len(), 1, "chunks go into a file beside the snapshot");
    drop(receiving);
    assert_eq!(receiving_files(dir.path()), Vec::<String>::new(), "an abandoned receive leaves no file");

    // Cut short by a crash: the file stays until the directory is opened again.
    let mut receiving = begin_receiving(&mut sm).await;
    send(&mut receiving, &new_file[..new_file.len() / 2], 64).await;
    receiving.flush().await.expect("flush");
    std::mem::forget(receiving);
    drop(sm);
    assert_eq!(receiving_files(dir.path()).len(), 1);
    let mut sm = StateMachineStore::open(dir.path(), Local::serving().0).expect("reopen");
    assert_eq!(receiving_files(dir.path()), Vec::<String>::new(), "removed when the directory is opened");
    assert!(holds(&sm, "/old") && !holds(&sm, "/new"), "the previous snapshot is loaded");
    assert_eq!(current(&mut sm).await, Some(old_meta.clone()));

    // Whole but damaged (one flipped byte of the payload): refused, and removed.
    let mut damaged = new_file.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x40;
    let mut receiving = begin_receiving(&mut sm).await;
    send(&mut receiving, &damaged, 64).await;
    receiving.shutdown().await.expect("shutdown");
    let refused = sm.install_snapshot(&new_meta, receiving).await;
    assert!(refused.is_err_and(|e| e.to_string().contains("checksum mismatch")), "a damaged snapshot is refused");
    assert_eq!(receiving_files(dir.path()), Vec::<String>::new());
    assert!(holds(&sm, "/old") && !holds(&sm, "/new"));
    assert_eq!(current(&mut sm).await, Some(old_meta.clone()));

    // Whole and sound, in many chunks: installed, and current after a restart.
    let mut receiving = begin_receiving(&mut sm).await;
    send(&mut receiving, &new_file, 64).await;
    receiving.shutdown().await.expect("shutdown");
    sm.install_snapshot(&new_meta, receiving).await.expect("install");
    assert!(holds(&sm, "/new") && !holds(&sm, "/old"));
    assert_eq!(current(&mut sm).await, Some(new_meta.clone()));
    assert_eq!(std::fs::read(dir.path().join("snapshot")).expect("read"), new_file, "installed as received");
    drop(sm);
    let mut sm = StateMachineStore::open(dir.path(), Local::serving().0).expect("reopen");
    assert!(holds(&sm, "/new") && !holds(&sm, "/old"));
    assert_eq!(current(&mut sm).await, Some(new_meta));
}

/// The file a leader sends is its snapshot file as it is on disk, read from its start.
#[tokio::test]
async fn the_current_snapshot_is_sent_as_its_file() {
    use tokio::io::AsyncReadExt;
    let dir = TempDir::new("snapshot-send");
    let (meta, state) = snapshot_of("/sent", 3);
    let bytes = file_bytes(&meta, &state);
    std::fs::write(dir.path().join("snapshot"), &bytes).expect("the snapshot");
    let mut sm = StateMachineStore::open(dir.path(), Local::serving().0).expect("open");
    let mut snapshot = sm.get_current_snapshot().await.expect("read").expect("a snapshot");
    assert_eq!(snapshot.meta, meta);
    let mut sent = Vec::new();
    snapshot.snapshot.read_to_end(&mut sent).await.expect("read the file");
    assert_eq!(sent, bytes);
}

/// A snapshot built from the state before an install, whose build ends after the install,
/// is dropped rather than put back over the newer snapshot installed (the log behind that
/// one is purged: the older one plus the log could not be served).
#[test]
fn a_build_ending_after_a_newer_install_does_not_replace_it() {
    let dir = TempDir::new("snapshot-in-place");
    let (current, built) = (dir.path().join("snapshot"), dir.path().join("snapshot.tmp"));
    let at = |index| Some(RaftLogId::new(crate::raft::types::LeaderId { term: 1, node_id: 1 }, index));
    std::fs::write(&current, b"installed").expect("write");
    let in_place = InPlace::new(at(9), 0);
    std::fs::write(&built, b"built before").expect("write");
    assert!(!in_place.put(&built, &current, at(5), 0).expect("put"), "an older snapshot is not put in place");
    assert!(!built.exists(), "and is removed");
    assert_eq!(std::fs::read(&current).expect("read"), b"installed");
    std::fs::write(&built, b"built after").expect("write");
    assert!(in_place.put(&built, &current, at(12), 0).expect("put"), "a newer one is");
    assert_eq!(std::fs::read(&current).expect("read"), b"built after");
}

/// A snapshot file of an older format version (not yet rewritten by a snapshot of this
/// version) is sent as it is, and the follower, which reads every version it does, installs
/// it as it is.
#[tokio::test]
async fn an_older_snapshot_version_is_sent_and_installed_as_it_is() {
    use tokio::io::AsyncReadExt;
    let (leader_dir, follower_dir) = (TempDir::new("snapshot-v5-leader"), TempDir::new("snapshot-v5-follower"));
    let (meta, state) = snapshot_of("/v5", 4);
    // Version 5 lacked the ACL lists at the end, empty ones here (a zero byte each).
    let mut payload = postcard::to_allocvec(&BodyRef { meta: &meta, state: &state }).expect("encode");
    assert_eq!(payload.split_off(payload.len() - 2), [0, 0], "empty ACL lists end the body");
    write_checked(&leader_dir.path().join("snapshot"), &magic(5), &payload).expect("write");
    let mut leader = StateMachineStore::open(leader_dir.path(), Local::serving().0).expect("open");
    let mut follower = StateMachineStore::open(follower_dir.path(), Local::serving().0).expect("open");

    let mut sent = leader.get_current_snapshot().await.expect("read").expect("a snapshot");
    assert_eq!(sent.meta, meta);
    let mut bytes = Vec::new();
    sent.snapshot.read_to_end(&mut bytes).await.expect("read the file");
    assert_eq!(&bytes[..8], b"WARDSNP5", "sent as it is");
    let mut receiving = begin_receiving(&mut follower).await;
    send(&mut receiving, &bytes, 1 << 10).await;
    receiving.shutdown().await.expect("shutdown");
    follower.install_snapshot(&meta, receiving).await.expect("install");
    assert!(holds(&follower, "/v5"));
    assert_eq!(std::fs::read(follower_dir.path().join("snapshot")).expect("read"), bytes, "installed as it is");
}

#[tokio::test]
async fn a_build_dropped_before_it_ran_lets_the_next_snapshot_be_asked_for() {
    let dir = TempDir::new("snapshot-dropped-build");
    let mut sm = StateMachineStore::open(dir.path(), Local::serving().0).expect("open");
    let trigger = SnapshotTrigger::new((10, 100), 0, 0, Arc::default());
    sm.report_snapshots(trigger.clone());
    trigger.logged(10);
    assert!(trigger.is_due());
    let builder = sm.get_snapshot_builder().await;
    trigger.logged(10);
    assert!(!trigger.is_due(), "one build at a time");
    drop(builder);
    assert!(trigger.is_due(), "the dropped build no longer counts as building");
    let mut builder = sm.get_snapshot_builder().await;
    builder.build_snapshot().await.expect("build");
    drop(builder);
    trigger.logged(9);
    assert!(!trigger.is_due(), "a finished build counts the log afresh");
}
