//! openraft's state machine: [`Core`] plus the Raft bookkeeping (last applied log id, last
//! membership), and its snapshots.
//!
//! The tree itself is not persisted on every apply; a snapshot is. Startup is the newest
//! snapshot plus a replay of the log after it. A snapshot is `postcard((meta, state))` in a
//! checksummed file (see [`super::fsutil`]), written to a temporary file, fsynced, renamed
//! and the directory fsynced — the log is purged behind it on disk only after that (a
//! follower's openraft asks sooner behind a received snapshot: the log store's purge waits
//! for it to be in place, [`InPlace`]). That file
//! is what a leader sends a follower, and what the follower installs once it has checked it
//! ([`super::snapshot_file`]): neither holds a snapshot's bytes in memory whole.

use super::error::FileError;
use super::error::OpenError;
use super::fsutil::{remove_stale_tmp, tmp_path, write_beside, CheckedReader};
use super::log_store::Evictor;
use super::snapshot_file::{self, InPlace, SnapshotFile, Temp};
use super::snapshot_format::{magic, read_checked, Body, BodyRef, KIND, SNAPSHOT_VERSION};
use super::snapshot_trigger::SnapshotTrigger;
use super::types::{LogId, Snapshot, SnapshotMeta, StoredMembership, TypeConfig};
use crate::core::Core;
use crate::state::StateMachine;
use futures_util::{Stream, TryStreamExt};
use openraft::storage::{EntryResponder, RaftStateMachine};
use openraft::{EntryPayload, RaftSnapshotBuilder};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub struct StateMachineStore {
    core: Arc<Core>,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    snapshot_path: PathBuf,
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
            evictor: None,
            trigger: None,
            loaded_bytes: 0,
            received: 0,
            in_place: InPlace::default(),
        };
        let began = Instant::now();
        if let Some(reader) = CheckedReader::open(&sm.snapshot_path, KIND, SNAPSHOT_VERSION)? {
            sm.loaded_bytes = reader.len();
            let (body, _) = read_checked::<Body>(reader)?;
            let (last, zxid, took) =
                (super::types::shown(body.meta.last_log_id), body.state.last_zxid(), began.elapsed());
            tracing::info!(%last, zxid, bytes = sm.loaded_bytes, ?took, "snapshot loaded");
            sm.in_place = InPlace::new(body.meta.last_log_id, zxid);
            sm.restore(&body.meta, body.state);
        }
        Ok(sm)
    }

    /// Whether a snapshot was loaded (or taken).
    pub(crate) fn has_state(&self) -> bool {
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
    pub(crate) fn loaded_bytes(&self) -> u64 {
        self.loaded_bytes
    }

    /// How far the snapshot file in place covers the log (the log store purges no further).
    pub fn in_place(&self) -> InPlace {
        self.in_place.clone()
    }

    /// From now on, `trigger` hears of every snapshot begun, written and installed.
    pub(crate) fn report_snapshots(&mut self, trigger: Arc<SnapshotTrigger>) {
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
    /// instant: the tree's nodes are shared with the live state, piece by piece, until a
    /// write changes a piece ([`crate::tree::Nodes`]).
    state: Option<StateMachine>,
    path: PathBuf,
    in_place: InPlace,
    trigger: Tell,
    began: Instant,
}

/// Tells the snapshot trigger once how a build ended. Dropped untold (the build dropped
/// before it ran, or its write panicked), it tells of a failure: otherwise the trigger would
/// count the build as running for ever and never ask for another snapshot.
#[derive(Default)]
struct Tell(Option<Arc<SnapshotTrigger>>);

impl Tell {
    fn finished(mut self, bytes: Option<u64>, took: std::time::Duration) {
        if let Some(trigger) = self.0.take() {
            trigger.finished(bytes, took);
        }
    }
}

impl Drop for Tell {
    fn drop(&mut self) {
        if let Some(trigger) = self.0.take() {
            trigger.finished(None, std::time::Duration::ZERO);
        }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for Builder {
    type SnapshotData = SnapshotFile;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        let Some(state) = self.state.take() else {
            return Err(io::Error::other("this snapshot builder has already built its snapshot"));
        };
        let (meta, path, in_place) = (self.meta.clone(), self.path.clone(), self.in_place.clone());
        // Told by the blocking write itself: this future may be dropped while it runs, and
        // the next build must not begin before it ends.
        let (tell, began) = (std::mem::take(&mut self.trigger), self.began);
        // Serializing a large tree takes CPU for a while: on a thread of its own, not a
        // worker of the runtime. The copy is dropped there too.
        let written = tokio::task::spawn_blocking(move || {
            let written = write_beside(&path, &magic(SNAPSHOT_VERSION), |w| {
                postcard::to_io(&BodyRef { meta: &meta, state: &state }, w).map(drop).map_err(std::io::Error::other)
            })
            .and_then(|bytes| {
                in_place.put(&tmp_path(&path), &path, meta.last_log_id, state.last_zxid()).map(|_| bytes)
            });
            tell.finished(written.as_ref().ok().copied(), began.elapsed());
            written
        })
        .await
        .unwrap_or_else(|e| Err(FileError::Io { path: self.path.clone(), op: "serialize into", source: e.into() }));
        let bytes = written.map_err(|e| {
            tracing::error!(error = %e, "writing the snapshot failed");
            io::Error::other(format!("writing the snapshot: {e}"))
        })?;
        let took = self.began.elapsed();
        tracing::info!(last = %super::types::shown(self.meta.last_log_id), bytes, ?took, "snapshot written");
        // openraft keeps only the metadata of a snapshot it had built; followers are sent the
        // file as `get_current_snapshot` opens it.
        let file = File::open(&self.path).and_then(SnapshotFile::sending)?;
        Ok(Snapshot { meta: self.meta.clone(), snapshot: file })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotData = SnapshotFile;
    type SnapshotBuilder = Builder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), io::Error> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<S>(&mut self, mut entries: S) -> Result<(), io::Error>
    where
        S: Stream<Item = Result<EntryResponder<TypeConfig>, io::Error>> + Unpin + Send,
    {
        while let Some((entry, responder)) = entries.try_next().await? {
            self.last_applied = Some(entry.log_id);
            let reply = match entry.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(batch) => match batch.take_replies() {
                    // Proposed here: each command is answered as soon as it is applied,
                    // but those of forwarded chunks, which go back through openraft.
                    Some(replies) => {
                        let mut chunks = Vec::new();
                        for (cmd, reply) in batch.commands.iter().zip(replies) {
                            let applied = self.core.apply(cmd);
                            match reply {
                                Some(reply) => drop(reply.send(Ok(applied))),
                                None => chunks.push(applied),
                            }
                        }
                        chunks
                    }
                    None => batch.commands.iter().map(|cmd| self.core.apply(cmd)).collect(),
                },
                EntryPayload::Membership(m) => {
                    self.membership = StoredMembership::new(Some(entry.log_id), m);
                    Vec::new()
                }
            };
            if let Some(responder) = responder {
                responder.send(reply);
            }
        }
        self.evict();
        Ok(())
    }

    /// Serializes the state now, under the state's read lock (reads go on, applies wait):
    /// openraft builds the file in another task while applies continue.
    async fn get_snapshot_builder(&mut self) -> Builder {
        let meta = SnapshotMeta { last_log_id: self.last_applied, last_membership: self.membership.clone() };
        // Under the state's read lock only for the copy (see `Builder::state`); this task
        // is the one that applies, so no apply runs meanwhile either way.
        let began = Instant::now();
        let state = self.core.read(StateMachine::clone);
        if let Some(trigger) = &self.trigger {
            trigger.began(began.elapsed());
        }
        let (path, in_place, trigger) = (self.snapshot_path.clone(), self.in_place.clone(), Tell(self.trigger.clone()));
        Builder { meta, state: Some(state), path, in_place, trigger, began }
    }

    /// Checks the received file as a snapshot file is checked at startup (kind, version,
    /// length, checksum, and that it decodes), makes it the current snapshot (fsynced,
    /// renamed over `snapshot`, the directory fsynced), and only then replaces the state.
    /// A file refused is removed; the snapshot before stays current.
    async fn install_snapshot(&mut self, meta: &SnapshotMeta, snapshot: SnapshotFile) -> Result<(), io::Error> {
        let failed = |e: OpenError| -> io::Error {
            tracing::error!(error = %e, "installing a snapshot from the leader failed");
            io::Error::other(format!("installing a snapshot: {e}"))
        };
        let received = match snapshot.is_received_beside(&self.snapshot_path) {
            true => snapshot,
            false => self.copy_in(snapshot).await.map_err(|e| failed(e.into()))?,
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
    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, io::Error> {
        let path = self.snapshot_path.clone();
        let opened = blocking(&self.snapshot_path, move || match CheckedReader::open(&path, KIND, SNAPSHOT_VERSION)? {
            Some(reader) => read_checked::<SnapshotMeta>(reader).map(Some),
            None => Ok(None),
        });
        let failed = |e: OpenError| io::Error::other(format!("opening the snapshot: {e}"));
        let Some((meta, file)) = opened.await.map_err(failed)? else { return Ok(None) };
        let sending = SnapshotFile::sending(file)
            .map_err(|source| failed(FileError::Io { path: self.snapshot_path.clone(), op: "seek", source }.into()))?;
        Ok(Some(Snapshot { meta, snapshot: sending }))
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
        let shown = |meta: &SnapshotMeta| super::types::shown(meta.last_log_id);
        return Err(OpenError::NotAnnounced {
            path: temp.path().to_path_buf(),
            found: shown(&body.meta),
            announced: shown(announced),
        });
    }
    // openraft installs only a snapshot newer than what was applied, and a build copies
    // what was applied: none in place covers more.
    in_place.put(temp.path(), current, announced.last_log_id, body.state.last_zxid())?;
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
