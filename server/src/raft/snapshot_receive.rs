//! The follower's side of a snapshot sent in chunks ([`super::network`]): the chunks are
//! written, in order, into a new file beside the member's own snapshot, and the snapshot is
//! handed to openraft to install once the last has arrived. A transfer that starts again
//! (offset 0) or is superseded drops the file it had begun ([`SnapshotFile`] removes it).

use super::snapshot_file::SnapshotFile;
use super::types::{Raft, Snapshot, SnapshotMeta, Vote};
use crate::peer::SnapshotChunk;
use openraft::async_runtime::WatchReceiver;
use std::path::PathBuf;
use tokio::io::AsyncWriteExt;

/// The transfer under way, if any.
pub(crate) struct SnapshotReceiver {
    /// The member's current snapshot: received files go beside it.
    snapshot_path: PathBuf,
    /// Transfers begun by this process, to name their files.
    begun: u64,
    current: Option<Transfer>,
}

struct Transfer {
    vote: Vote,
    meta: SnapshotMeta,
    file: SnapshotFile,
    /// Where the next chunk must start.
    next: u64,
}

impl SnapshotReceiver {
    pub(crate) fn new(snapshot_path: PathBuf) -> SnapshotReceiver {
        SnapshotReceiver { snapshot_path, begun: 0, current: None }
    }

    /// Takes `chunk` in: written into the transfer's file, or refused (the transfer is
    /// dropped; the sender starts again at offset 0). After the last chunk, the snapshot to
    /// install.
    pub(crate) async fn take(&mut self, chunk: SnapshotChunk) -> Result<Option<(Vote, Snapshot)>, String> {
        let SnapshotChunk { vote, meta, offset, data, done } = chunk;
        if offset == 0 {
            self.begun += 1;
            let file = SnapshotFile::receiving(&self.snapshot_path, self.begun).await.map_err(|e| e.to_string())?;
            // Drops a transfer begun before, and its file.
            self.current = Some(Transfer { vote, meta: meta.clone(), file, next: 0 });
        }
        let transfer = match self.current.as_mut() {
            Some(t) if t.vote == vote && t.meta == meta && t.next == offset => t,
            _ => {
                self.current = None;
                return Err(format!(
                    "snapshot chunk at offset {offset} is not the next of a transfer here; start again"
                ));
            }
        };
        if let Err(e) = transfer.file.write_all(&data).await {
            self.current = None;
            return Err(format!("writing a received snapshot: {e}"));
        }
        transfer.next += data.len() as u64;
        if !done {
            return Ok(None);
        }
        let Some(Transfer { vote, meta, file, next }) = self.current.take() else {
            return Err("no snapshot transfer under way".into());
        };
        tracing::info!(last = %super::types::shown(meta.last_log_id), bytes = next, "snapshot received");
        Ok(Some((vote, Snapshot { meta, snapshot: file })))
    }

    /// [`SnapshotReceiver::take`], and the install once the last chunk is in: this member's
    /// vote (a higher one tells the sender to stop), after the last chunk the vote openraft
    /// answered the install with.
    pub(crate) async fn chunk(&mut self, raft: &Raft, chunk: SnapshotChunk) -> Result<Vote, String> {
        match self.take(chunk).await? {
            None => Ok(raft.metrics().borrow_watched().vote),
            Some((vote, snapshot)) => match raft.install_full_snapshot(vote, snapshot).await {
                Ok(response) => Ok(response.vote),
                Err(fatal) => Err(fatal.to_string()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::types::{LeaderId, LogId};
    use tokio::io::AsyncReadExt;
    use ward_testkit::TempDir;

    fn chunk(offset: u64, data: &[u8], done: bool) -> SnapshotChunk {
        let meta =
            SnapshotMeta { last_log_id: Some(LogId::new(LeaderId { term: 2, node_id: 1 }, 9)), ..Default::default() };
        SnapshotChunk { vote: Vote::new_committed(2, 1), meta, offset, data: data.to_vec(), done }
    }

    fn receiving_files(dir: &std::path::Path) -> usize {
        let names = std::fs::read_dir(dir).expect("list").map(|e| e.expect("entry").file_name());
        names.filter(|n| n.to_string_lossy().starts_with("snapshot.receiving-")).count()
    }

    /// Chunks in order make the file the leader sent; one out of order drops the transfer and
    /// its file, and the leader's next transfer (from offset 0) is taken afresh.
    #[tokio::test]
    async fn chunks_in_order_make_the_file_and_one_out_of_order_drops_the_transfer() {
        let dir = TempDir::new("snapshot-receive");
        let mut receiver = SnapshotReceiver::new(dir.path().join("snapshot"));
        assert!(matches!(receiver.take(chunk(0, b"abc", false)).await, Ok(None)));
        assert_eq!(receiving_files(dir.path()), 1, "the chunks go into a file beside the snapshot");
        let refused = receiver.take(chunk(7, b"xyz", false)).await;
        assert!(matches!(refused, Err(ref why) if why.contains("start again")), "a chunk past the next offset");
        assert_eq!(receiving_files(dir.path()), 0, "a dropped transfer leaves no file");
        assert!(receiver.take(chunk(3, b"def", false)).await.is_err(), "no transfer to continue");

        assert!(matches!(receiver.take(chunk(0, b"abc", false)).await, Ok(None)));
        let Ok(Some((vote, mut snapshot))) = receiver.take(chunk(3, b"def", true)).await else {
            panic!("the last chunk completes the transfer");
        };
        assert_eq!(vote, Vote::new_committed(2, 1));
        use tokio::io::AsyncSeekExt;
        snapshot.snapshot.seek(std::io::SeekFrom::Start(0)).await.expect("seek");
        let mut bytes = Vec::new();
        snapshot.snapshot.read_to_end(&mut bytes).await.expect("read");
        assert_eq!(bytes, b"abcdef");
    }
}
