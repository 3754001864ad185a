//! openraft's state machine: [`Core`] plus the Raft bookkeeping (last applied log id, last
//! membership), and its snapshots.
//!
//! The tree itself is not persisted on every apply; a snapshot is. Startup is the newest
//! snapshot plus a replay of the log after it. A snapshot is `postcard((meta, state))` in a
//! checksummed file (see [`super::fsutil`]), written to a temporary file, fsynced, renamed
//! and the directory fsynced — openraft purges the log behind it only after that. That file
//! is what a leader sends a follower, and what the follower installs once it has checked it
//! ([`super::snapshot_file`]): neither holds a snapshot's bytes in memory whole.

use super::error::FileError;
use super::error::OpenError;
use super::fsutil::{remove_stale_tmp, tmp_path, write_beside, CheckedReader};
use super::log_store::Evictor;
use super::snapshot_file::{self, InPlace, SnapshotFile, Temp};
use super::snapshot_trigger::SnapshotTrigger;
use super::types::{Entry, LogId, Snapshot, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use crate::command::Applied;
use crate::core::Core;
use crate::state::StateMachine;
use openraft::storage::RaftStateMachine;
use openraft::{AnyError, EntryPayload, RaftSnapshotBuilder, StorageIOError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The current snapshot version. Versions 2 and 3 each appended one map to the end of the
/// state machine, which ends the body: 2 each session's last write
/// ([`crate::state::LastWrite`]), 3 each session's latest attachment. Version 4 added no
/// bytes: a node's owner word may now mark a container or a TTL node
/// ([`crate::tree::NodeKind`]), which an older server would take for an ephemeral's owner,
/// so it must refuse such a body. Version 5 added no bytes either: a node with null data
/// (only ZooKeeper clients write it) has owner tag 2 or 3 where an `Option` has 0 or 1
/// (`tree::znode`'s `Owner`); a node with data is written as before. Version 6 appended the
/// nodes' ACLs (two lists: the ACL table's slots, and the nodes pointing to them; see
/// `crate::state`'s `StoredAcls`), and a node's owner word may mark a lock contender held over
/// for its lock-delay ([`crate::tree::NodeKind::LockDelay`]), which an older server would take
/// for an ephemeral's owner. Older versions are still read ([`decode`]).
const SNAPSHOT_VERSION: u8 = 6;

/// The empty collections a body of `version` lacks at its end: versions 2 and 3 each
/// appended a map, version 6 two lists. Each is one zero byte when empty.
fn missing_maps(version: u8) -> usize {
    let acls = if version < 6 { 2 } else { 0 };
    acls + match version {
        0 | 1 => 2,
        2 => 1,
        _ => 0,
    }
}

/// The kind of file a snapshot is: its magic is this and the version's digit.
const KIND: &[u8; 7] = b"WARDSNP";

/// The file header of snapshot version `version`: `WARDSNP` and the version's digit.
fn magic(version: u8) -> [u8; 8] {
    super::fsutil::magic(KIND, version)
}

/// The snapshot's content, as built (borrowing a copy of the state)...
#[derive(Serialize)]
struct BodyRef<'a> {
    meta: &'a SnapshotMeta,
    state: &'a StateMachine,
}

/// ...and as read back.
#[derive(Deserialize)]
struct Body {
    meta: SnapshotMeta,
    state: StateMachine,
}

/// Decodes a `T` from the start of a snapshot file's `payload`, which lacks `missing` zero
/// bytes at its end. An older body is the current one without the maps later versions
/// appended, and an empty map is one zero byte in postcard: so it decodes as the current
/// version once those bytes are added. No string in a payload is longer than `longest`.
fn decode_from<T: DeserializeOwned>(payload: impl Read, missing: usize, longest: u64) -> Result<T, postcard::Error> {
    let padded = payload.chain(std::io::repeat(0).take(missing as u64));
    // postcard reads each string into this before copying it out, always at its start: only
    // as much of it is touched as the longest string needs (a path, an ACL's id; none is
    // longer than a client's request frame), the rest is never backed by memory.
    let longest = longest.min(ward_proto::MAX_REPLY_FRAME as u64) as usize;
    let mut scratch = vec![0; longest];
    postcard::from_io::<T, _>((padded, &mut scratch)).map(|(decoded, _)| decoded)
}

/// Decodes a `T` from the start of the snapshot file `reader` reads (a whole [`Body`], or
/// its first field, the meta), then checks the whole payload ([`CheckedReader::finish`]):
/// damage is reported as such, not as whatever the decoder made of it. Gives the file back.
fn read_checked<T: DeserializeOwned>(mut reader: CheckedReader) -> Result<(T, File), OpenError> {
    let (missing, len, path) = (missing_maps(reader.version()), reader.len(), reader.path().to_path_buf());
    let decoded = decode_from(BufReader::with_capacity(1 << 20, &mut reader), missing, len);
    let file = reader.finish()?;
    let decoded = decoded.map_err(|source| OpenError::Decode { what: path.display().to_string(), source })?;
    Ok((decoded, file))
}

pub struct StateMachineStore {
    core: Arc<Core>,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    snapshot_path: PathBuf,
    /// Snapshots built by this process, to make snapshot ids unique.
    built: u64,
    /// Drops applied entries from the log store's memory.
    evictor: Option<Evictor>,
    /// Told of each snapshot begun and written, to decide when the next is due.
    trigger: Option<Arc<SnapshotTrigger>>,
    /// The size of the snapshot loaded at opening (0 if none).
    loaded_bytes: u64,
    /// Snapshots begun to be received from a leader, to name their files.
    received: u64,
    /// How far the snapshot file in place covers the log, shared with the builders.
    in_place: InPlace,
}

impl StateMachineStore {
    /// Loads the snapshot in `dir`, if any, into `core`.
    pub fn open(dir: &Path, core: Arc<Core>) -> Result<StateMachineStore, OpenError> {
        let snapshot_path = dir.join("snapshot");
        remove_stale_tmp(&snapshot_path)?;
        snapshot_file::remove_stale(&snapshot_path)?;
        let mut sm = StateMachineStore {
            core,
            last_applied: None,
            membership: StoredMembership::default(),
            snapshot_path,
            built: 0,
            evictor: None,
            trigger: None,
            loaded_bytes: 0,
            received: 0,
            in_place: InPlace::default(),
        };
        if let Some(reader) = CheckedReader::open(&sm.snapshot_path, KIND, SNAPSHOT_VERSION)? {
            sm.loaded_bytes = reader.len();
            let (body, _) = read_checked::<Body>(reader)?;
            tracing::info!(last = %super::types::shown(body.meta.last_log_id), zxid = body.state.last_zxid(), "snapshot loaded");
            sm.in_place = InPlace::new(body.meta.last_log_id);
            sm.restore(&body.meta, body.state);
        }
        Ok(sm)
    }

    /// Whether a snapshot was loaded (or taken).
    pub fn has_state(&self) -> bool {
        self.last_applied.is_some()
    }

    /// The last log id applied: on opening, the one the loaded snapshot covers.
    pub fn applied(&self) -> Option<LogId> {
        self.last_applied
    }

    /// From now on, entries this state machine applies leave `evictor`'s store's memory.
    /// Those a loaded snapshot covers stay until the first apply: openraft reads log ids
    /// across the whole log while it starts, and from memory that costs nothing.
    pub fn evict_applied(&mut self, evictor: Evictor) {
        self.evictor = Some(evictor);
    }

    /// The size of the snapshot loaded at opening (0 if none).
    pub fn loaded_bytes(&self) -> u64 {
        self.loaded_bytes
    }

    /// From now on, `trigger` hears of every snapshot begun, written and installed.
    pub fn report_snapshots(&mut self, trigger: Arc<SnapshotTrigger>) {
        self.trigger = Some(trigger);
    }

    fn evict(&self) {
        if let (Some(evictor), Some(applied)) = (&self.evictor, self.last_applied) {
            evictor.applied(applied.index);
        }
    }

    fn restore(&mut self, meta: &SnapshotMeta, state: StateMachine) {
        self.core.replace_state(state);
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        self.evict();
    }
}

/// A snapshot taken at one instant, written out off the apply path.
pub struct Builder {
    meta: SnapshotMeta,
    /// A copy of the state at `meta`'s log id, taken by the one build. Copying took an
    /// instant: the tree's nodes are shared with the live state, shard by shard, until a
    /// write changes a shard ([`crate::tree::Nodes`]).
    state: Option<StateMachine>,
    path: PathBuf,
    in_place: InPlace,
    trigger: Option<Arc<SnapshotTrigger>>,
    began: Instant,
}

impl RaftSnapshotBuilder<TypeConfig> for Builder {
    async fn build_snapshot(&mut self) -> Result<Snapshot, StorageError> {
        let signature = Some(self.meta.signature());
        let Some(state) = self.state.take() else {
            let e = AnyError::error("this snapshot builder has already built its snapshot");
            return Err(StorageIOError::write_snapshot(signature, e).into());
        };
        let (meta, path, in_place) = (self.meta.clone(), self.path.clone(), self.in_place.clone());
        // Serializing a large tree takes CPU for a while: on a thread of its own, not a
        // worker of the runtime. The copy is dropped there too.
        let written = tokio::task::spawn_blocking(move || {
            let bytes = write_beside(&path, &magic(SNAPSHOT_VERSION), |w| {
                postcard::to_io(&BodyRef { meta: &meta, state: &state }, w).map(drop).map_err(std::io::Error::other)
            })?;
            in_place.put(&tmp_path(&path), &path, meta.last_log_id).map(|_| bytes)
        })
        .await
        .unwrap_or_else(|e| Err(FileError::Io { path: self.path.clone(), op: "serialize into", source: e.into() }));
        if let Some(trigger) = &self.trigger {
            trigger.finished(written.as_ref().ok().copied());
        }
        crate::metrics::snapshots::finished(self.began.elapsed());
        let bytes = written.map_err(|e| {
            tracing::error!(error = %e, "writing the snapshot failed");
            StorageIOError::write_snapshot(signature, AnyError::new(&e))
        })?;
        let took = self.began.elapsed();
        tracing::info!(last = %super::types::shown(self.meta.last_log_id), bytes, ?took, "snapshot written");
        // openraft 0.9 keeps only the metadata of a snapshot it had built; followers are sent
        // the file as `get_current_snapshot` opens it.
        let file = File::open(&self.path)
            .and_then(SnapshotFile::sending)
            .map_err(|e| StorageIOError::write_snapshot(Some(self.meta.signature()), AnyError::new(&e)))?;
        Ok(Snapshot { meta: self.meta.clone(), snapshot: Box::new(file) })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = Builder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Applied>>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut replies = Vec::new();
        for entry in entries {
            self.last_applied = Some(entry.log_id);
            let reply = match entry.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(batch) => match batch.take_replies() {
                    // Proposed here: each command is answered as soon as it is applied.
                    Some(replies) => {
                        for (cmd, reply) in batch.commands.iter().zip(replies) {
                            let _ = reply.send(Ok(self.core.apply(cmd)));
                        }
                        Vec::new()
                    }
                    None => batch.commands.iter().map(|cmd| self.core.apply(cmd)).collect(),
                },
                EntryPayload::Membership(m) => {
                    self.membership = StoredMembership::new(Some(entry.log_id), m);
                    Vec::new()
                }
            };
            replies.push(reply);
        }
        self.evict();
        Ok(replies)
    }

    /// Serializes the state now, under the state's read lock (reads go on, applies wait):
    /// openraft builds the file in another task while applies continue.
    async fn get_snapshot_builder(&mut self) -> Builder {
        self.built += 1;
        let id = match self.last_applied {
            Some(id) => format!("{}-{}-{}", id.leader_id.term, id.index, self.built),
            None => format!("0-0-{}", self.built),
        };
        let meta =
            SnapshotMeta { last_log_id: self.last_applied, last_membership: self.membership.clone(), snapshot_id: id };
        // Under the state's read lock only for the copy (see `Builder::state`); this task
        // is the one that applies, so no apply runs meanwhile either way.
        let began = Instant::now();
        let state = self.core.read(StateMachine::clone);
        crate::metrics::snapshots::begun(began.elapsed());
        if let Some(trigger) = &self.trigger {
            trigger.began();
        }
        let (path, in_place, trigger) = (self.snapshot_path.clone(), self.in_place.clone(), self.trigger.clone());
        Builder { meta, state: Some(state), path, in_place, trigger, began }
    }

    /// A new file beside the current snapshot, which openraft writes the chunks into.
    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotFile>, StorageError> {
        self.received += 1;
        let file = SnapshotFile::receiving(&self.snapshot_path, self.received).await;
        file.map(Box::new).map_err(|e| StorageIOError::write_snapshot(None, AnyError::new(&e)).into())
    }

    /// Checks the received file as a snapshot file is checked at startup (kind, version,
    /// length, checksum, and that it decodes), makes it the current snapshot (fsynced,
    /// renamed over `snapshot`, the directory fsynced), and only then replaces the state.
    /// A file refused is removed; the snapshot before stays current.
    async fn install_snapshot(&mut self, meta: &SnapshotMeta, snapshot: Box<SnapshotFile>) -> Result<(), StorageError> {
        let signature = Some(meta.signature());
        let failed = |e: OpenError| -> StorageError {
            tracing::error!(error = %e, "installing a snapshot from the leader failed");
            StorageIOError::read_snapshot(signature.clone(), AnyError::new(&e)).into()
        };
        let received = match snapshot.is_received_beside(&self.snapshot_path) {
            true => *snapshot,
            false => self.copy_in(*snapshot).await.map_err(|e| failed(e.into()))?,
        };
        let (file, temp) = received.into_synced().await.map_err(|e| failed(e.into()))?;
        let (current, announced, in_place) = (self.snapshot_path.clone(), meta.clone(), self.in_place.clone());
        let installed =
            blocking(&self.snapshot_path, move || install_file(file, temp, &current, &in_place, &announced));
        let (body, bytes) = installed.await.map_err(failed)?;
        if let Some(trigger) = &self.trigger {
            trigger.installed(bytes);
        }
        tracing::info!(last = %super::types::shown(meta.last_log_id), bytes, "snapshot installed from the leader");
        self.restore(meta, body.state);
        Ok(())
    }

    /// The snapshot file, opened once its header and checksum are checked; it is sent as
    /// it is (a snapshot of an older version too: a follower reads every version this one
    /// does).
    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        let path = self.snapshot_path.clone();
        let opened = blocking(&self.snapshot_path, move || match CheckedReader::open(&path, KIND, SNAPSHOT_VERSION)? {
            Some(reader) => read_checked::<SnapshotMeta>(reader).map(Some),
            None => Ok(None),
        });
        let failed = |e: OpenError| StorageIOError::read_snapshot(None, AnyError::new(&e));
        let Some((meta, file)) = opened.await.map_err(failed)? else { return Ok(None) };
        let sending = SnapshotFile::sending(file)
            .map_err(|source| failed(FileError::Io { path: self.snapshot_path.clone(), op: "seek", source }.into()))?;
        Ok(Some(Snapshot { meta, snapshot: Box::new(sending) }))
    }
}

impl StateMachineStore {
    /// A snapshot handed over open elsewhere, copied into a file received beside this
    /// store's snapshot.
    async fn copy_in(&mut self, mut from: SnapshotFile) -> Result<SnapshotFile, FileError> {
        use tokio::io::AsyncSeekExt;
        self.received += 1;
        let mut into = SnapshotFile::receiving(&self.snapshot_path, self.received).await?;
        let io = |source| FileError::Io { path: self.snapshot_path.clone(), op: "copy a snapshot beside", source };
        from.seek(std::io::SeekFrom::Start(0)).await.map_err(io)?;
        tokio::io::copy(&mut from, &mut into).await.map_err(io)?;
        Ok(into)
    }
}

/// Checks and decodes the received snapshot file `file` (`temp`), then puts it in place as
/// the `current` snapshot. Its payload's length and the decoded state are returned.
fn install_file(
    file: File,
    temp: Temp,
    current: &Path,
    in_place: &InPlace,
    announced: &SnapshotMeta,
) -> Result<(Body, u64), OpenError> {
    let reader = CheckedReader::new(file, temp.path(), KIND, SNAPSHOT_VERSION)?;
    let bytes = reader.len();
    let (body, file) = read_checked::<Body>(reader)?;
    drop(file);
    if body.meta != *announced {
        let shown = |meta: &SnapshotMeta| format!("{} ({})", meta.snapshot_id, super::types::shown(meta.last_log_id));
        return Err(OpenError::NotAnnounced {
            path: temp.path().to_path_buf(),
            found: shown(&body.meta),
            announced: shown(announced),
        });
    }
    // openraft installs only a snapshot newer than what was applied, and a build copies
    // what was applied: none in place covers more.
    in_place.put(temp.path(), current, announced.last_log_id)?;
    temp.keep();
    Ok((body, bytes))
}

/// `work`, which reads or writes a whole snapshot, on a thread of its own rather than a
/// worker of the runtime.
async fn blocking<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> Result<T, OpenError> + Send + 'static,
) -> Result<T, OpenError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(FileError::Io { path: path.to_path_buf(), op: "read", source: e.into() }.into()))
}

#[cfg(test)]
#[path = "snapshot_transfer_tests.rs"]
mod transfer_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a snapshot file's payload of `version`, as opening the file does.
    fn decode(version: u8, bytes: &[u8]) -> Result<Body, postcard::Error> {
        decode_from(bytes, missing_maps(version), bytes.len() as u64)
    }
    use crate::command::{Command, CommandOp};
    use ward_proto::{Acl, CreateMode, Op, SessionId, SessionSecret};

    fn command(time_ms: i64, session: u64, xid: u64, op: CommandOp) -> Command {
        Command { time_ms, session: SessionId(session), xid, op }
    }

    /// A state with a session, its ephemeral `/a`, and (with `xid` not 0) a last write.
    fn state(xid: u64) -> StateMachine {
        let mut state = StateMachine::default();
        let open = CommandOp::CreateSession { timeout_ms: 4000, secret: SessionSecret([1; 16]), owner: None };
        state.apply_command(&command(1, 0, 0, open));
        let create = Op::Create { path: "/a".into(), data: b"x".to_vec(), mode: CreateMode::Ephemeral };
        state.apply_command(&command(2, 1, xid, CommandOp::Op(create)));
        state
    }

    /// A body of the current version with the `n` zero bytes its last, empty collections
    /// take cut off its end: what an older version wrote for the same state.
    fn older_body(state: &StateMachine, n: usize) -> Vec<u8> {
        let mut body = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state }).expect("encode");
        assert_eq!(body.split_off(body.len() - n), vec![0; n], "empty collections end the body");
        body
    }

    /// A data directory written by an older version still loads: version 2 only appended
    /// the per-session last writes, version 3 the attachments and version 6 the ACLs, each
    /// empty collection of which is one zero byte at the end of the body; a version 3 body
    /// is a version 5 one without containers, TTL nodes or null data.
    #[test]
    fn older_snapshots_still_decode() {
        let v2 = older_body(&state(7), 3);
        let body = decode(2, &v2).expect("decode version 2");
        assert_eq!(body.state.last_zxid(), 2);
        assert_eq!(body.state.tree().get("/a").map(|n| n.data().to_vec()), Some(b"x".to_vec()));
        assert!(body.state.session(SessionId(1)).is_some());
        let resent = command(3, 1, 7, CommandOp::Op(Op::Delete { path: "/a".into(), version: None }));
        let mut decoded = body.state;
        assert_eq!(decoded.apply_command(&resent).0.zxid, 2, "the last write survived: xid 7 is answered, not applied");

        let v1 = older_body(&state(0), 4);
        let body = decode(1, &v1).expect("decode version 1");
        assert_eq!(body.state.last_zxid(), 2);
        assert!(body.state.session(SessionId(1)).is_some());
        assert!(decode(2, &v1).is_err(), "a version 1 body is not a version 2 one");

        for version in 3..=5 {
            let body = decode(version, &older_body(&state(7), 2)).expect("decode versions 3 to 5");
            assert_eq!(body.state.tree().get("/a").map(|n| n.data().to_vec()), Some(b"x".to_vec()));
            assert_eq!(body.state.attached_at(SessionId(1)), 1);
            let root = body.state.tree().get("/").expect("root");
            assert_eq!(body.state.tree().acl(root), Acl::open(), "an older snapshot's nodes are open");
        }
        assert_eq!(magic(SNAPSHOT_VERSION), *b"WARDSNP6");
    }

    /// ACLs survive a snapshot: each node its own list and aversion, lists shared by many
    /// nodes stored once, and a snapshot pointing a node at a slot it lacks is refused.
    #[test]
    fn a_snapshot_keeps_acls_and_aversions() {
        use ward_proto::{perms, Acl};
        let mut state = state(0);
        let guarded = vec![Acl::new(perms::ALL, "digest", "alice:hash="), Acl::new(perms::READ, "ip", "10.0.0.0/8")];
        for path in ["/g1", "/g2"] {
            let create = Op::CreateWithAcl {
                path: path.into(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
                acl: guarded.clone(),
            };
            state.apply_command(&command(3, 1, 0, CommandOp::Op(create)));
        }
        let set = Op::SetAcl { path: "/a".into(), acl: Acl::read_only(), version: Some(0) };
        state.apply_command(&command(4, 1, 0, CommandOp::Op(set)));
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &state }).expect("encode");
        let back = decode(SNAPSHOT_VERSION, &bytes).expect("decode").state;
        let acl = |path: &str| {
            let node = back.tree().get(path).expect("node");
            (back.tree().acl(node).to_vec(), back.tree().stat(node).aversion)
        };
        assert_eq!(acl("/g1"), (guarded.clone(), 0));
        assert_eq!(acl("/g2"), (guarded, 0));
        assert_eq!(acl("/a"), (Acl::read_only(), 1));
        assert_eq!(acl("/"), (Acl::open(), 0));
        assert_eq!(back.tree().acl_table().len(), 3, "open, the shared list, and /a's");

        let mut forged = state.clone();
        forged.tree.acls = crate::acl::AclTable::default();
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &forged }).expect("encode");
        assert!(decode(SNAPSHOT_VERSION, &bytes).is_err(), "nodes pointing to slots the snapshot lacks");
    }

    /// Containers and TTL nodes keep their kind through a snapshot, and the cleanup's index
    /// of them, which no snapshot holds, is rebuilt when one is read.
    #[test]
    fn a_snapshot_keeps_containers_and_ttl_nodes() {
        let mut state = state(0);
        for (path, mode) in [("/c", CreateMode::Container), ("/t", CreateMode::PersistentWithTtl { ttl_ms: 50 })] {
            let create = Op::Create { path: path.into(), data: Vec::new(), mode };
            state.apply_command(&command(3, 1, 0, CommandOp::Op(create)));
        }
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &state }).expect("encode");
        let tree = decode(SNAPSHOT_VERSION, &bytes).expect("decode").state.tree;
        assert_eq!(tree.get("/c").map(|n| n.kind()), Some(crate::tree::NodeKind::Container));
        assert_eq!(tree.get("/t").map(|n| n.kind()), Some(crate::tree::NodeKind::Ttl(50)));
        assert_eq!(tree.swept_len(), 2, "the index is rebuilt");
        assert_eq!(tree.unused_nodes(1_000, 0, 10), ["/t"], "the TTL node is due; the container never had a child");
    }

    /// A lock holder's contender held over for its lock-delay keeps its kind through a
    /// snapshot, and the lock-delay task's index is rebuilt.
    #[test]
    fn a_snapshot_keeps_a_held_over_lock_contender() {
        let mut state = state(0);
        let dir = Op::Create { path: "/l".into(), data: Vec::new(), mode: CreateMode::Persistent };
        state.apply_command(&command(3, 1, 0, CommandOp::Op(dir)));
        let acquire = CommandOp::LockAcquireDelayed {
            dirs: vec!["/l".into()],
            tag: 1,
            kind: ward_proto::LockKind::Exclusive,
            data: Vec::new(),
            lock_delay_ms: 100,
        };
        state.apply_command(&command(4, 1, 0, acquire));
        state.apply_command(&command(5, 1, 0, CommandOp::ExpireSession));
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &state }).expect("encode");
        let tree = decode(SNAPSHOT_VERSION, &bytes).expect("decode").state.tree;
        let held: Vec<(String, crate::tree::NodeKind, i64)> =
            tree.lock_delayed().map(|(path, node)| (path.to_string(), node.kind(), node.mtime)).collect();
        assert_eq!(held.len(), 1, "the index is rebuilt");
        assert_eq!(
            (held[0].1, held[0].2),
            (crate::tree::NodeKind::LockDelay(100), 5),
            "its delay runs from the expiry"
        );
    }

    /// Null data survives a snapshot: the node is written with the owner tag that marks it
    /// (see `tree::znode`), and read back null, not empty.
    #[test]
    fn null_data_survives_a_snapshot() {
        let mut state = state(0);
        let create = Op::Create { path: "/n".into(), data: Vec::new(), mode: CreateMode::Ephemeral };
        let null = CommandOp::NullData { nulls: vec![0], op: Box::new(CommandOp::Op(create)) };
        state.apply_command(&command(3, 1, 0, null));
        let meta = SnapshotMeta::default();
        let bytes = postcard::to_allocvec(&BodyRef { meta: &meta, state: &state }).expect("encode");
        let body = decode(SNAPSHOT_VERSION, &bytes).expect("decode");
        let node = |path: &str| body.state.tree().get(path).map(|n| (n.is_null(), n.ephemeral_owner()));
        assert_eq!(node("/n"), Some((true, Some(SessionId(1)))));
        assert_eq!(node("/a"), Some((false, Some(SessionId(1)))));
    }
}
