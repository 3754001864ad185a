//! Disaster recovery (`ward-server --force-new-ensemble`): a member whose ensemble lost its
//! majority for good becomes the one member of a new ensemble, keeping every entry its log
//! holds. Its snapshot and its whole log are applied, the entries not yet known to be
//! committed included (they may have been acknowledged by a leader that had them on a
//! majority: keeping them loses nothing that was promised, at the risk of keeping a write
//! that was never acknowledged, as etcd's `--force-new-cluster` does). The result is seeded
//! like a restore (`seed::plant`), as member `id` alone under a new ensemble name, so that
//! the old members, should one come back, cannot talk to it. The directory as it was is
//! kept beside it (`DIR.before-force-MS`) until the operator removes it.

use super::continuity;
use super::error::{FileError, OpenError};
use super::log_store::LogStore;
use super::seed::{founding, plant, RestoreError};
use super::state_machine::StateMachineStore;
use super::types::{NodeId, SnapshotMeta, StoredMembership};
use super::wal::OnLoss;
use crate::local::Local;
use crate::state::StateMachine;
use openraft::storage::RaftLogStorage;
use openraft::{EntryPayload, RaftLogReader};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What forcing kept.
#[derive(Debug)]
pub struct Forced {
    /// The ensemble the directory belonged to.
    pub from: String,
    /// The last log index and zxid kept.
    pub index: u64,
    pub zxid: u64,
    /// Entries past the snapshot applied (committed or not).
    pub replayed: u64,
    /// Where the directory as it was now is.
    pub kept_at: PathBuf,
}

/// Makes `data_dir`, member `id`'s, the one member (at `addr`) of a new ensemble `name`.
pub async fn force_new_ensemble(
    data_dir: &Path,
    (id, name, addr): (NodeId, &str, &str),
    segment_bytes: u64,
    on_loss: OnLoss,
) -> Result<Forced, RestoreError> {
    let Some((found_id, from)) = super::identity::read(data_dir)? else {
        return Err(OpenError::Identity(format!(
            "{} is no ensemble member's directory (no member file): nothing to force",
            data_dir.display()
        ))
        .into());
    };
    if found_id != id {
        let why =
            format!("{} belongs to member {found_id}, not {id}: start it with --id {found_id}", data_dir.display());
        return Err(OpenError::Identity(why).into());
    }
    if from == name {
        return Err(RestoreError::AlreadyIn { dir: data_dir.to_path_buf(), name: from });
    }
    let (state, last, replayed) = {
        let _lock = super::open::lock_dir(data_dir)?;
        everything(data_dir, segment_bytes, on_loss).await?
    };
    let kept_at = aside(data_dir)?;
    std::fs::create_dir_all(data_dir).map_err(|source| io(data_dir, "create", source))?;
    let membership = founding(&BTreeMap::from([(id, addr.to_string())]))?;
    let meta = SnapshotMeta { last_log_id: last, last_membership: StoredMembership::new(last, membership) };
    plant(data_dir, &meta, &state, (id, name), segment_bytes).await?;
    let (index, zxid) = (last.map_or(0, |l| l.index), state.last_zxid());
    tracing::warn!(%from, to = name, index, zxid, replayed, kept_at = %kept_at.display(), "forced a new one-member ensemble");
    Ok(Forced { from, index, zxid, replayed, kept_at })
}

/// The state after the snapshot and every entry of the log, and the last entry's id.
async fn everything(
    data_dir: &Path,
    segment_bytes: u64,
    on_loss: OnLoss,
) -> Result<(StateMachine, Option<super::types::LogId>, u64), OpenError> {
    // A core of its own: nothing serves it, and what applying publishes goes nowhere.
    let (core, _local) = Local::serving();
    let sm = StateMachineStore::open(data_dir, core.clone())?;
    continuity::before_log_opens(data_dir, sm.applied(), on_loss)?;
    let mut store = LogStore::open_with(data_dir, segment_bytes, on_loss, Default::default())?;
    continuity::check(data_dir, &mut store, sm.applied(), on_loss).await?;
    let reading = |e: std::io::Error| OpenError::raft("reading the log")(Box::new(e));
    let last_logged = store.get_log_state().await.map_err(reading)?.last_log_id;
    let mut last = sm.applied();
    let mut replayed = 0;
    let start = last.map_or(0, |l| l.index + 1);
    let end = last_logged.map_or(0, |l| l.index + 1);
    if start < end {
        let entries = store.try_get_log_entries(start..end).await.map_err(reading)?;
        for entry in entries {
            if let EntryPayload::Normal(batch) = &entry.payload {
                for cmd in &batch.commands {
                    core.apply(cmd);
                }
            }
            last = Some(entry.log_id);
            replayed += 1;
        }
    }
    Ok((core.read(StateMachine::clone), last, replayed))
}

/// Renames `data_dir` to a sibling `DIR.before-force-MS`; returns that path.
fn aside(data_dir: &Path) -> Result<PathBuf, OpenError> {
    let mut name = data_dir.as_os_str().to_owned();
    name.push(format!(".before-force-{}", crate::now_ms()));
    let kept = PathBuf::from(name);
    std::fs::rename(data_dir, &kept).map_err(|source| io(data_dir, "rename aside", source))?;
    Ok(kept)
}

fn io(path: &Path, op: &'static str, source: std::io::Error) -> OpenError {
    FileError::Io { path: path.to_path_buf(), op, source }.into()
}
