//! The durable log: every command through openraft, as a one-member Raft group, behind the
//! same [`CommandLog`] seam as the in-memory log. A replicated ensemble is the same code with
//! more members (and a real [`network`]).
//!
//! ```text
//! submit ─► proposer queue ─► one client_write per batch ─► log store: 1 record, fdatasync
//!                                                                  │
//!        reply ◄── Vec<Applied> ◄── state machine: Core::apply ◄───┘ (committed)
//! ```
//!
//! On disk, under the data directory (byte layouts in `docs/storage.md`):
//! * `log/NNN.wal` — pre-zeroed segments of checksummed records ([`record`], [`wal`]);
//! * `vote` — the Raft vote; `snapshot` — the state machine at a log position ([`fsutil`]).
//!
//! # Modules
//! * [`types`]: the openraft type configuration (an entry is a batch of commands).
//! * [`record`], [`segment`], [`wal`]: the record format, one segment's I/O, the segment set.
//! * [`log_store`]: openraft's `RaftLogStorage` over the WAL, and the vote; it keeps only
//!   unapplied entries in memory, and `readback` reads applied ones from the segments.
//! * [`state_machine`]: openraft's `RaftStateMachine` over [`Core`], and snapshots.
//! * [`proposer`]: group commit in front of openraft.
//! * [`network`]: no peers yet.

pub mod error;
pub mod fsutil;
pub mod log_store;
pub mod network;
pub mod proposer;
mod readback;
pub mod record;
pub mod segment;
pub mod state_machine;
pub mod types;
pub mod wal;

pub use error::{FileError, OpenError};
pub use proposer::BatchLimits;

use crate::command::Command;
use crate::core::Core;
use crate::log::{CommandLog, Pending};
use log_store::LogStore;
use network::NoNetwork;
use openraft::{BasicNode, ServerState, SnapshotPolicy};
use proposer::Proposer;
use state_machine::StateMachineStore;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use types::{LogId, Raft, NODE_ID};

/// Tuning of the durable log.
#[derive(Clone, Debug)]
pub struct RaftOptions {
    /// Size of a pre-zeroed log segment.
    pub segment_bytes: u64,
    /// A snapshot is taken after this many entries (batches) since the last one.
    pub snapshot_every: u64,
    /// Entries kept in the log behind a snapshot (a follower that lags a little catches up
    /// from the log instead of a snapshot).
    pub keep_after_snapshot: u64,
    pub batch: BatchLimits,
    /// How long replaying the log at startup may take.
    pub replay_timeout: Duration,
}

impl Default for RaftOptions {
    fn default() -> Self {
        RaftOptions {
            segment_bytes: 64 << 20,
            snapshot_every: 5000,
            keep_after_snapshot: 1000,
            batch: BatchLimits::default(),
            replay_timeout: Duration::from_secs(600),
        }
    }
}

/// The durable [`CommandLog`]. Dropping it stops the proposer; call [`RaftLog::shutdown`]
/// to stop Raft too.
pub struct RaftLog {
    raft: Raft,
    proposer: Proposer,
    task: JoinHandle<()>,
    /// Held (locked) while the log is open, so a second server cannot share the directory.
    _dir_lock: std::fs::File,
}

impl CommandLog for RaftLog {
    fn submit(&self, cmd: Command) -> Pending {
        self.proposer.submit(cmd)
    }
}

/// Opens (or creates) the data directory, restores `core` from the newest snapshot plus the
/// log after it, and returns once this server leads its group and has applied every logged
/// command. `core` must be fresh: its state is replaced.
///
/// Session deadlines are restarted at now + timeout (see [`restart_session_deadlines`]).
pub async fn open(data_dir: &Path, core: Arc<Core>, options: RaftOptions) -> Result<RaftLog, OpenError> {
    std::fs::create_dir_all(data_dir).map_err(|source| FileError::Io {
        path: data_dir.into(),
        op: "create",
        source,
    })?;
    let dir_lock = lock_dir(data_dir)?;
    let mut sm = StateMachineStore::open(data_dir, core.clone())?;
    let store = LogStore::open(data_dir, options.segment_bytes)?;
    sm.evict_applied(store.evictor());
    // Make the directories themselves durable if this call created them.
    fsutil::sync_dir(data_dir)?;
    if let Some(parent) = data_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fsutil::sync_dir(parent)?;
    }
    let fresh = store.is_new() && !sm.has_state();
    let config = openraft::Config {
        cluster_name: "ward".into(),
        // One member: ticks and elections matter only at startup; keep them quiet.
        heartbeat_interval: 500,
        election_timeout_min: 1500,
        election_timeout_max: 3000,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(options.snapshot_every),
        max_in_snapshot_log_to_keep: options.keep_after_snapshot,
        ..Default::default()
    }
    .validate()
    .map_err(|e| OpenError::Config(e.to_string()))?;
    let raft =
        Raft::new(NODE_ID, Arc::new(config), NoNetwork, store, sm).await.map_err(|e| OpenError::Raft(e.to_string()))?;
    if fresh {
        let members = BTreeMap::from([(NODE_ID, BasicNode::default())]);
        raft.initialize(members).await.map_err(|e| OpenError::Raft(format!("initialize: {e}")))?;
        tracing::info!(dir = %data_dir.display(), "new data directory initialized");
    }
    become_leader(&raft).await?;
    let last = raft.metrics().borrow().last_log_index;
    raft.wait(Some(options.replay_timeout))
        .applied_index_at_least(last, "replay the log")
        .await
        .map_err(|e| OpenError::Raft(format!("replaying the log: {e}")))?;
    restart_session_deadlines(&core);
    let (proposer, task) = Proposer::start(raft.clone(), options.batch);
    tracing::info!(last_index = ?last, zxid = core.read(|s| s.last_zxid()), "durable log open");
    Ok(RaftLog { raft, proposer, task, _dir_lock: dir_lock })
}

/// Takes the data directory's `LOCK` file; the OS drops the lock if the process dies.
fn lock_dir(data_dir: &Path) -> Result<std::fs::File, OpenError> {
    let path = data_dir.join("LOCK");
    let io = |source| FileError::Io { path: path.clone(), op: "lock", source };
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(OpenError::InUse(data_dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(source)) => Err(io(source).into()),
    }
}

async fn become_leader(raft: &Raft) -> Result<(), OpenError> {
    // A restarted leader resumes at once; otherwise do not wait out an election timeout.
    let quick = raft.wait(Some(Duration::from_millis(200))).state(ServerState::Leader, "leader").await;
    if quick.is_ok() {
        return Ok(());
    }
    raft.trigger().elect().await.map_err(|e| OpenError::Raft(e.to_string()))?;
    raft.wait(Some(Duration::from_secs(30)))
        .state(ServerState::Leader, "leader")
        .await
        .map(|_| ())
        .map_err(|e| OpenError::Raft(format!("not leader of its own group: {e}")))
}

/// Gives every session in the state machine a full timeout from now. Heartbeats are not
/// logged, so after a restart nobody knows when a session was last heard from; its client
/// gets a whole timeout to reconnect. Call before accepting connections (it forgets which
/// connection serves a session).
pub fn restart_session_deadlines(core: &Core) {
    let sessions: Vec<_> = core.read(|s| s.sessions().map(|(id, r)| (id, r.timeout_ms)).collect());
    for (id, timeout_ms) in sessions {
        core.sessions.register(id, Duration::from_millis(u64::from(timeout_ms)));
    }
}

impl RaftLog {
    /// The Raft handle, for metrics and tests.
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// Takes a snapshot now and waits until it is on disk; returns the log id it covers.
    pub async fn snapshot(&self, timeout: Duration) -> Result<Option<LogId>, OpenError> {
        let applied = self.raft.metrics().borrow().last_applied;
        self.raft.trigger().snapshot().await.map_err(|e| OpenError::Raft(e.to_string()))?;
        let m = self
            .raft
            .wait(Some(timeout))
            .metrics(|m| m.snapshot >= applied, "snapshot")
            .await
            .map_err(|e| OpenError::Raft(e.to_string()))?;
        Ok(m.snapshot)
    }

    /// Resolves when Raft has stopped, with why: a storage error (a write or fsync failed)
    /// stops it for good, and the server should then stop rather than serve stale reads.
    pub async fn failed(&self) -> String {
        let mut metrics = self.raft.metrics();
        loop {
            let state = metrics.borrow().running_state.clone();
            if let Err(fatal) = state {
                return fatal.to_string();
            }
            if metrics.changed().await.is_err() {
                return "raft stopped".into();
            }
        }
    }

    /// Stops the proposer and Raft; pending commands complete with Unavailable.
    pub async fn shutdown(&self) {
        self.task.abort();
        if let Err(error) = self.raft.shutdown().await {
            tracing::warn!(%error, "raft did not stop cleanly");
        }
    }
}
