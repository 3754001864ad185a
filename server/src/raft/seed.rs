//! Seeding an empty data directory from a backup (`ward-server --restore FILE`): the
//! backup's snapshot becomes the directory's, with its membership replaced by the founding
//! members of this start (a restored ensemble is a new one: its members need not be the old
//! ones, and are not told about them); the log starts purged up to the snapshot, as a
//! follower's does after it installed a leader's snapshot; the `member` file names the new
//! ensemble. Every member of a new ensemble is seeded from the same backup, so they start
//! with one state and one log position, and elect a leader as after any restart.

use super::error::{FileError, OpenError};
use super::fsutil::{self, CheckedReader};
use super::identity;
use super::log_store::LogStore;
use super::snapshot_format::{magic, read_checked, Body, BodyRef, KIND, SNAPSHOT_VERSION};
use super::types::{NodeId, StoredMembership};
use openraft::storage::RaftLogStorage;
use openraft::{BasicNode, Membership};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use ward_proto::backup::{BackupFileError, BackupHeader};

/// Why a backup was not restored. Nothing is left in the data directory but what a retry
/// clears: a restore that failed half-way left the directory without its `member` file,
/// which a start refuses.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{}: {source}", path.display())]
    Backup { path: PathBuf, source: BackupFileError },
    #[error(
        "{}: the snapshot is cut short ({found} of {expected} bytes): copy the whole backup again",
        path.display()
    )]
    Truncated { path: PathBuf, expected: u64, found: u64 },
    #[error(
        "{} is not empty: a backup is restored into an empty data directory (move this one away \
         first; a member restarted after its restore is started without --restore)",
        .0.display()
    )]
    NotEmpty(PathBuf),
    #[error(
        "the data comes from ensemble {0:?}: give the new ensemble another name with \
         --ensemble-name, so that members of the old one cannot join it by mistake"
    )]
    SameName(String),
    #[error(
        "{} already belongs to ensemble {name:?}: --force-new-ensemble needs a new --ensemble-name (if this \
         directory was forced already, start it without --force-new-ensemble)",
        dir.display()
    )]
    AlreadyIn { dir: PathBuf, name: String },
    #[error("the founding members {0:?} do not form a membership")]
    Membership(String),
    #[error(transparent)]
    Open(#[from] OpenError),
}

/// What a restore seeded: the backup's header.
#[derive(Debug)]
pub struct Restored {
    pub header: BackupHeader,
}

/// Seeds `data_dir` (missing or empty) from the backup file `backup` as member `id` of
/// ensemble `name`, whose founding members are `members` (id → peer address; a single
/// server: its own id with an empty address).
pub async fn restore(
    backup: &Path,
    data_dir: &Path,
    (id, name, replicated): (NodeId, &str, bool),
    members: &BTreeMap<NodeId, String>,
    segment_bytes: u64,
) -> Result<Restored, RestoreError> {
    let io = |path: &Path, op| {
        let path = path.to_path_buf();
        move |source| OpenError::from(FileError::Io { path, op, source })
    };
    let backup_error = |source| RestoreError::Backup { path: backup.to_path_buf(), source };
    let mut file = File::open(backup).map_err(|e| backup_error(e.into()))?;
    let (header, offset) = BackupHeader::read(&mut file).map_err(backup_error)?;
    if replicated && header.ensemble == name {
        return Err(RestoreError::SameName(header.ensemble));
    }
    let total = file.metadata().map_err(|e| backup_error(e.into()))?.len();
    let found = total.saturating_sub(offset);
    if found != header.snapshot_bytes {
        return Err(RestoreError::Truncated { path: backup.to_path_buf(), expected: header.snapshot_bytes, found });
    }
    let is_empty = |dir: &Path| std::fs::read_dir(dir).map(|mut d| d.next().is_none());
    match is_empty(data_dir) {
        Ok(true) => {}
        Ok(false) => return Err(RestoreError::NotEmpty(data_dir.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(data_dir, "list")(e).into()),
    }
    std::fs::create_dir_all(data_dir).map_err(io(data_dir, "create"))?;
    let membership = founding(members)?;
    let restoring = data_dir.join("snapshot.restoring");
    let body = copy_out(&mut file, offset, header.snapshot_bytes, &restoring)?;
    std::fs::remove_file(&restoring).map_err(io(&restoring, "remove"))?;
    let last_membership = StoredMembership::new(body.meta.last_log_id, membership);
    let meta = super::types::SnapshotMeta { last_log_id: body.meta.last_log_id, last_membership };
    plant(data_dir, &meta, &body.state, (id, name), segment_bytes).await?;
    drop(body);
    tracing::info!(
        backup = %backup.display(),
        from = %header.ensemble,
        zxid = header.zxid,
        index = header.index,
        "data directory seeded from a backup"
    );
    Ok(Restored { header })
}

/// Makes the empty `data_dir` member `id` of ensemble `name`, holding `state` as the
/// snapshot `meta` describes: the snapshot file, a log purged up to it, then the `member`
/// file (a member's directory without it is refused at start, so a seeding cut short is
/// not taken for a whole one; a single server's holds the whole snapshot by then).
pub(super) async fn plant(
    data_dir: &Path,
    meta: &super::types::SnapshotMeta,
    state: &crate::state::StateMachine,
    (id, name): (NodeId, &str),
    segment_bytes: u64,
) -> Result<(), OpenError> {
    let snapshot = data_dir.join("snapshot");
    fsutil::write_streamed(&snapshot, &magic(SNAPSHOT_VERSION), |w| {
        postcard::to_io(&BodyRef { meta, state }, w).map(drop).map_err(std::io::Error::other)
    })?;
    if let Some(last) = meta.last_log_id {
        let mut store = LogStore::open(data_dir, segment_bytes)?;
        let failed = |during| move |e| OpenError::raft(during)(Box::new(e));
        store.purge(last).await.map_err(failed("starting the log at the snapshot"))?;
        // Raft refuses to lead below the term of the last entry: this member's own vote
        // starts a term above it, and its first election the one after.
        let vote = super::types::Vote::new(last.leader_id.term + 1, id);
        store.save_vote(&vote).await.map_err(failed("saving the first vote"))?;
    }
    identity::check_or_record(data_dir, id, name, true)?;
    Ok(fsutil::sync_dir(data_dir)?)
}

/// The founding members as a membership of voters.
pub(super) fn founding(members: &BTreeMap<NodeId, String>) -> Result<Membership<NodeId, BasicNode>, RestoreError> {
    let voters: BTreeSet<NodeId> = members.keys().copied().collect();
    let nodes: BTreeMap<NodeId, BasicNode> = members.iter().map(|(id, addr)| (*id, BasicNode::new(addr))).collect();
    Membership::new(vec![voters], nodes).map_err(|e| RestoreError::Membership(e.to_string()))
}

/// Copies the snapshot file out of the backup into `into` and reads it back whole, checked
/// as a start checks the snapshot in place (kind, version, length, checksum, decoding).
fn copy_out(backup: &mut File, offset: u64, len: u64, into: &Path) -> Result<Body, RestoreError> {
    let io = |op| {
        let path = into.to_path_buf();
        move |source| OpenError::from(FileError::Io { path, op, source })
    };
    backup.seek(SeekFrom::Start(offset)).map_err(io("seek"))?;
    let mut out = File::create(into).map_err(io("create"))?;
    std::io::copy(&mut backup.take(len), &mut out).map_err(io("write"))?;
    drop(out);
    let reader = CheckedReader::open(into, KIND, SNAPSHOT_VERSION)?.ok_or_else(|| {
        OpenError::from(FileError::Io { path: into.into(), op: "open", source: std::io::ErrorKind::NotFound.into() })
    })?;
    Ok(read_checked::<Body>(reader)?.0)
}
