//! The snapshot a backup copies: the one in place once it covers everything committed when
//! the backup was asked for, or one taken for it. Writes go on meanwhile: a snapshot is
//! built from a copy of the state (`state_machine::Builder`).

use super::fsutil::CheckedReader;
use super::route::Route;
use super::snapshot_file::InPlace;
use super::snapshot_format::{read_checked, KIND, SNAPSHOT_VERSION};
use super::types::{Raft, SnapshotMeta};
use crate::replication::{CopyError, SnapshotCopy};
use openraft::async_runtime::WatchReceiver;
use std::io::{Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a backup waits for a snapshot to be written: a large state takes a while.
const SNAPSHOT_WAIT: Duration = Duration::from_secs(600);
/// How often the snapshot is asked for again while waiting: openraft drops a trigger while
/// a build is under way, and that build may end short of what the backup needs.
const RETRIGGER: Duration = Duration::from_secs(2);

/// Where this member's snapshot file is, and how far it covers.
#[derive(Clone)]
pub(crate) struct Snapshots {
    pub path: PathBuf,
    pub in_place: InPlace,
}

/// A copy of the snapshot file once it covers every write committed before the call.
pub(super) async fn take(raft: &Raft, route: &Route, snapshots: &Snapshots) -> Result<SnapshotCopy, CopyError> {
    route.barrier().await.map_err(CopyError::Behind)?;
    let Some(applied) = raft.metrics().borrow_watched().last_applied else {
        return Err(CopyError::Disk("nothing has been applied yet".into()));
    };
    let began = Instant::now();
    while snapshots.in_place.covers().is_none_or(|c| c.index < applied.index) {
        let waited = began.elapsed();
        if waited > SNAPSHOT_WAIT {
            return Err(CopyError::NotInTime { index: applied.index, waited_s: waited.as_secs() });
        }
        raft.trigger().snapshot().await.map_err(|e| CopyError::Disk(format!("asking for a snapshot: {e}")))?;
        snapshots.in_place.wait_for(applied, RETRIGGER).await;
    }
    let (snapshots, ensemble, me) = (snapshots.clone(), route.peers.identity().ensemble.to_string(), route.me);
    let opened = tokio::task::spawn_blocking(move || open(&snapshots, ensemble, me)).await;
    opened.unwrap_or_else(|e| Err(CopyError::Disk(e.to_string())))
}

/// The file in place, checked whole (header, length, checksum) before it is sent, as member
/// `member` of `ensemble` copies it.
fn open(snapshots: &Snapshots, ensemble: String, member: u64) -> Result<SnapshotCopy, CopyError> {
    let disk = |e: &dyn std::fmt::Display| CopyError::Disk(e.to_string());
    let path = &snapshots.path;
    let opened = snapshots.in_place.open(path).map_err(|e| disk(&e))?.ok_or_else(|| disk(&"no snapshot file"))?;
    let reader = CheckedReader::new(opened.file, path, KIND, SNAPSHOT_VERSION).map_err(|e| disk(&e))?;
    let (meta, mut file) = read_checked::<SnapshotMeta>(reader).map_err(|e| disk(&e))?;
    let bytes = file.seek(SeekFrom::End(0)).and_then(|n| file.seek(SeekFrom::Start(0)).map(|_| n));
    let bytes = bytes.map_err(|e| disk(&e))?;
    let last = meta.last_log_id.ok_or_else(|| disk(&"the snapshot covers no log position"))?;
    let voters = meta.last_membership.membership().voter_ids().collect();
    let term = last.leader_id.term;
    Ok(SnapshotCopy { file, bytes, zxid: opened.zxid, index: last.index, term, voters, ensemble, member })
}
