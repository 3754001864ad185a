//! openraft's snapshot data: a file of the data directory, so that a snapshot is sent and
//! received chunk by chunk and never held in memory whole.
//!
//! The leader sends its current snapshot file as it is on disk, header and checksum
//! included (`get_current_snapshot` opens it); the network reads it a chunk at a time
//! (`raft/network.rs`). A follower writes the chunks into a file of its own,
//! `snapshot.receiving-N` beside `snapshot`, which is checked, fsynced and renamed over
//! `snapshot` when the snapshot is installed. A receive that is abandoned (the leader gave
//! up, or sent a newer snapshot, or the snapshot was not newer than the state after all)
//! removes its file when it is dropped, at the latest as the next receive begins; one
//! that a crash interrupted is removed when the directory is next opened
//! ([`remove_stale`]). So a half-received snapshot is never taken for the current one.

use super::error::FileError;
use super::fsutil::{parent, put_in_place, with_suffix};
use super::types::{shown, LogId};
use std::fs::File;
use std::io::{self, ErrorKind, SeekFrom};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use ward_proto::Zxid;

/// The prefix of a file being received, after `snapshot`'s own name.
const RECEIVING: &str = ".receiving-";

/// A snapshot file open for openraft: the current one (to send) or one being received.
pub struct SnapshotFile {
    file: tokio::fs::File,
    /// Set while the file is one being received: it goes when this is dropped, unless the
    /// snapshot was installed.
    temp: Temp,
}

impl SnapshotFile {
    /// The current snapshot, opened as `file`, read from its start.
    pub fn sending(mut file: std::fs::File) -> io::Result<SnapshotFile> {
        io::Seek::seek(&mut file, SeekFrom::Start(0))?;
        Ok(SnapshotFile { file: tokio::fs::File::from_std(file), temp: Temp(None) })
    }

    /// A new, empty file to receive the `n`th snapshot of this process into, beside
    /// `snapshot` (the current snapshot's path).
    pub async fn receiving(snapshot: &Path, n: u64) -> Result<SnapshotFile, FileError> {
        let path = with_suffix(snapshot, &format!("{RECEIVING}{n}"));
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .await
            .map_err(FileError::io(&path, "create"))?;
        Ok(SnapshotFile { file, temp: Temp(Some(path)) })
    }

    /// Whether this is a file received beside `snapshot`, which installing it renames into
    /// place; any other (openraft's storage suite hands over another store's current
    /// snapshot) is copied into a received one first.
    pub(crate) fn is_received_beside(&self, snapshot: &Path) -> bool {
        self.temp.0.as_deref().is_some_and(|p| p.parent() == snapshot.parent())
    }

    /// Everything written so far, durable, as a blocking file read from its start; and the
    /// guard that removes the file unless [`Temp::keep`] is called.
    pub(crate) async fn into_synced(self) -> Result<(std::fs::File, Temp), FileError> {
        let SnapshotFile { mut file, temp } = self;
        let path = temp.0.clone().unwrap_or_default();
        let io = |op| FileError::io(&path, op);
        // A write that failed in the background shows here.
        tokio::io::AsyncWriteExt::flush(&mut file).await.map_err(io("write"))?;
        file.sync_all().await.map_err(io("fsync"))?;
        let mut file = file.into_std().await;
        io::Seek::seek(&mut file, SeekFrom::Start(0)).map_err(io("seek"))?;
        Ok((file, temp))
    }
}

/// A received snapshot's file, removed when this is dropped unless kept.
pub(crate) struct Temp(Option<PathBuf>);

impl Temp {
    /// The file's path (empty for a file that is not a received one).
    pub(crate) fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }

    /// The file was renamed into place: it stays.
    pub(crate) fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let Some(path) = self.0.take() else { return };
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "removed a snapshot whose receiving was abandoned"),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            // Removed at the next start (`remove_stale`); meanwhile it only takes room.
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "could not remove an abandoned snapshot"),
        }
    }
}

/// How far the log the snapshot file in place covers. A snapshot written or received goes
/// in place only if it covers at least as far: openraft builds a snapshot in a task of its
/// own, so a build of the state before an install may end after it, and must not put the
/// older snapshot back over the one installed (the log behind that one is purged).
#[derive(Clone, Default)]
pub struct InPlace(Arc<Covers>);

#[derive(Default)]
struct Covers {
    /// Held while a file is put in place: the comparison and the rename go together. It
    /// guards the zxid the file's state reached (the snapshot's meta does not say it).
    putting: Mutex<Zxid>,
    /// How far the file in place covers the log; a purge waiting for it subscribes.
    covers: watch::Sender<Option<LogId>>,
}

/// The snapshot file in place, opened: what a backup sends ([`InPlace::open`]).
pub(crate) struct Opened {
    pub file: File,
    /// The last zxid of the state the file holds.
    pub zxid: Zxid,
}

impl InPlace {
    /// The file in place covers the log up to `covers`, and its state reached `zxid`.
    pub fn new(covers: Option<LogId>, zxid: Zxid) -> InPlace {
        InPlace(Arc::new(Covers { putting: Mutex::new(zxid), covers: watch::Sender::new(covers) }))
    }

    /// The file in place at `path`, opened while no other is put there, so that the zxid
    /// returned is its state's; `None` if there is none yet.
    pub(crate) fn open(&self, path: &Path) -> Result<Option<Opened>, FileError> {
        let zxid = self.0.putting.lock().unwrap_or_else(PoisonError::into_inner);
        match File::open(path) {
            Ok(file) => Ok(Some(Opened { file, zxid: *zxid })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FileError::io(path, "open")(e)),
        }
    }

    /// How far the file in place covers the log.
    pub fn covers(&self) -> Option<LogId> {
        *self.0.covers.borrow()
    }

    /// How far the file in place covers the log, once it covers `upto` or `limit` has passed.
    pub async fn wait_for(&self, upto: LogId, limit: Duration) -> Option<LogId> {
        let mut covers = self.0.covers.subscribe();
        let far_enough = covers.wait_for(|c| c.is_some_and(|c| c.index >= upto.index));
        let reached = match tokio::time::timeout(limit, far_enough).await {
            Ok(Ok(reached)) => Some(*reached),
            // Not in time (the sender lives as long as `self`).
            _ => None,
        };
        reached.unwrap_or_else(|| self.covers())
    }

    /// Puts the durable snapshot file `from`, which covers the log up to `covers` (its state
    /// at `zxid`), in place as `to`, unless the one there covers more: then `from` is
    /// removed. Whether it was put.
    pub fn put(&self, from: &Path, to: &Path, covers: Option<LogId>, zxid: Zxid) -> Result<bool, FileError> {
        let mut putting = self.0.putting.lock().unwrap_or_else(PoisonError::into_inner);
        let current = self.covers();
        if current > covers {
            tracing::info!(
                kept = %shown(current),
                dropped = %shown(covers),
                "a newer snapshot was put in place meanwhile: this one is dropped"
            );
            std::fs::remove_file(from).map_err(FileError::io(from, "remove"))?;
            return Ok(false);
        }
        put_in_place(from, to)?;
        self.0.covers.send_replace(covers);
        *putting = zxid;
        Ok(true)
    }
}

/// Removes the files of receives a crash interrupted, beside `snapshot`.
pub(crate) fn remove_stale(snapshot: &Path) -> Result<(), FileError> {
    let dir = parent(snapshot);
    let prefix = format!("{}{RECEIVING}", snapshot.file_name().unwrap_or_default().to_string_lossy());
    let io = |op, path: &Path| FileError::io(path, op);
    for item in std::fs::read_dir(dir).map_err(io("list", dir))? {
        let path = item.map_err(io("list", dir))?.path();
        if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&prefix)) {
            std::fs::remove_file(&path).map_err(io("remove", &path))?;
            tracing::info!(path = %path.display(), "removed a snapshot whose receiving a restart interrupted");
        }
    }
    Ok(())
}

// openraft reads a snapshot to send and writes one received through these; the file does
// the work.
impl AsyncRead for SnapshotFile {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.file).poll_read(cx, buf)
    }
}

impl AsyncWrite for SnapshotFile {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.file).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.file).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.file).poll_shutdown(cx)
    }
}

impl AsyncSeek for SnapshotFile {
    fn start_seek(mut self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        Pin::new(&mut self.file).start_seek(position)
    }

    fn poll_complete(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Pin::new(&mut self.file).poll_complete(cx)
    }
}
