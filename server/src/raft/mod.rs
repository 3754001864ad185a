//! The durable log: every command through openraft, as a one-member Raft group, behind the
//! same [`Replication`] seam as the in-memory log. A replicated ensemble is the same code with
//! more members (and a real [`network`]).
//!
//! ```text
//! submit ─► proposer queue ─► one client_write per batch ─► log store: encode, queue
//!                                     I/O thread: the appends queued together as 1 record,
//!                                                            │ pwrite, fdatasync
//!   reply ◄── state machine: Core::apply, command by command ◄───┘ (committed)
//! ```
//!
//! On disk, under the data directory (byte layouts in `docs/storage.md`):
//! * `log/NNN.wal` — pre-zeroed segments of checksummed records ([`record`], [`wal`]);
//! * `vote` — the Raft vote; `snapshot` — the state machine at a log position ([`fsutil`]).
//!
//! # Modules
//! * [`types`]: the openraft type configuration (an entry is a [`batch`] of commands).
//! * [`record`], [`segment`], [`wal`]: the record format, one segment's I/O, the segment set;
//!   [`writer`]: the thread that does the log's writes and fdatasyncs (group commit at the disk);
//!   [`extent`]: how far the log had reached, so that lost segments are noticed.
//! * [`log_store`]: openraft's `RaftLogStorage` over the WAL, and the vote; it keeps only
//!   unapplied entries in memory, and `readback` reads applied ones from the segments,
//!   starting at the nearest of the places `marks` keeps.
//! * [`state_machine`]: openraft's `RaftStateMachine` over [`Core`](crate::core::Core), and snapshots;
//!   [`snapshot_trigger`]: when the next one is due (by log size).
//!   a snapshot is decoded through `padded_reader` (a buffer fast at postcard's tiny reads).
//! * [`proposer`]: group commit in front of openraft, paced by the disk ([`activity`]), which
//!   holds back a lone lock acquire that will queue anyway for the next command (`defer`); on
//!   the leader it folds followers' batches into its own entries (`answers`); on a follower
//!   it keeps several batches on their way to the leader (`forwards`), and refuses the
//!   later writes of a connection whose forwarded write has an unknown outcome (`unsettled`).
//! * [`route`]: a batch into Raft here, or to the leader; the read index for `sync`.
//! * [`network`]: openraft's RPCs over the peer link ([`crate::peer`]), a snapshot sent as
//!   chunks of the leader's file; `snapshot_receive`: the follower's side, which writes them
//!   into a file beside its snapshot and installs it at the last.
//! * [`service`]: what this member does with its peers' requests.
//! * `transfer`: handing the leadership to another voter (on request, and when a leader is
//!   stopped cleanly), during which new writes go to the next leader.
//! * [`leadership`]: leader-only duties (session expiry); `standing`: a follower whose log is
//!   ahead of a candidate's stands at once; `silence`: a follower stands once its leader has
//!   been silent for openraft's lease, without the random timeout after it; `gone_leader`:
//!   followers whose leader's peer port refuses connections elect the next one at once.
//! * [`contact`]: touch rounds with the leader; when a ping may be answered ([`rounds`]: the
//!   bookkeeping, checked by loom); [`quorum`]: when a quorum last accepted this leader's
//!   appends, by which the leader's touch lease is judged.
//! * [`membership`]: adding and removing members; the member list, with whom the leader hears
//!   from (`liveness`).
//! * [`identity`]: which member a data directory belongs to.
//! * `backup_copy`: the snapshot file a backup sends, taken for it if need be.
//! * [`seed`]: an empty data directory seeded from a backup (`--restore`); `force`: a
//!   surviving member made the one member of a new ensemble (`--force-new-ensemble`).
//! * `open`: opening a member, step by step ([`open_member`]); `config`: openraft's
//!   configuration for a member or a one-member group.

pub(crate) mod activity;
mod answers;
mod backup_copy;
pub(crate) mod batch;
mod config;
pub(crate) mod contact;
mod continuity;
mod defer;
pub(crate) mod error;
pub(crate) mod extent;
mod force;
mod forwards;
pub(crate) mod fsutil;
mod gone_leader;
pub(crate) mod identity;
mod late;
pub(crate) mod leadership;
mod liveness;
pub mod log_store;
mod marks;
pub(crate) mod membership;
pub(crate) mod network;
mod open;
mod padded_reader;
pub(crate) mod proposer;
pub(crate) mod quorum;
mod readback;
pub mod record;
pub(crate) mod rounds;
pub(crate) mod route;
pub(crate) mod seed;
pub(crate) mod segment;
pub(crate) mod service;
mod silence;
pub mod snapshot_file;
mod snapshot_format;
mod snapshot_receive;
pub(crate) mod snapshot_trigger;
mod standing;
pub mod state_machine;
pub(crate) mod timing;
mod transfer;
pub mod types;
mod unsettled;
pub mod wal;
pub(crate) mod writer;

pub use error::{FileError, OpenError};
pub use force::{force_new_ensemble, Forced};
pub use open::{open, open_member};
pub use proposer::BatchLimits;
pub use seed::{restore, RestoreError, Restored};
pub use timing::Timing;
pub use wal::OnLoss;

use crate::command::Command;
use crate::peer::{AdminReply, AdminRequest};
use crate::replication::{Barrier, MemberChange, Members, Pending, Rejected, Replication};
use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use proposer::Proposer;
use route::Route;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use types::{LogId, NodeId, Raft};

/// Applied log entries an ensemble member keeps in memory (see `log_store::Evictor`).
const ENSEMBLE_KEEP_APPLIED: u64 = 256;

/// How this server joins a replicated ensemble.
#[derive(Debug)]
pub struct EnsembleOptions {
    /// This member's id, one of `members`' keys.
    pub id: NodeId,
    /// Checked in every peer hello: members of different ensembles never talk.
    pub name: String,
    /// The founding members and their peer addresses, this one included. Servers started
    /// with the same list form one group on first start; later starts use the membership
    /// in their data directory. Empty for a member that joins an existing ensemble (it is
    /// added by the leader, and founds nothing).
    pub members: BTreeMap<NodeId, String>,
    /// Where peers reach this member, bound by the caller.
    pub peer_listener: tokio::net::TcpListener,
    /// Peer addresses to use instead of the membership's, by member.
    pub routes: std::collections::HashMap<NodeId, String>,
    /// Mutual TLS on the peer link, both ways (`None`: plain TCP).
    pub peer_tls: Option<Arc<crate::tls::PeerTls>>,
}

/// Tuning of the durable log.
#[derive(Clone, Debug)]
pub struct RaftOptions {
    /// Size of a pre-zeroed log segment.
    pub segment_bytes: u64,
    /// A snapshot is taken once the log written since the last one reaches this share of
    /// that snapshot's size, in percent (and at least one segment); 0: never by size
    /// ([`snapshot_trigger`]).
    pub snapshot_log_percent: u64,
    /// A snapshot is also taken after this many entries (batches) since the last one.
    pub snapshot_every: Option<u64>,
    /// Entries kept in the log behind a snapshot (a follower that lags a little catches up
    /// from the log instead of a snapshot).
    pub keep_after_snapshot: u64,
    pub batch: BatchLimits,
    /// How long replaying the log at startup may take.
    pub replay_timeout: Duration,
    /// What to do when files of the log are found missing or cut (docs/storage.md).
    pub on_loss: OnLoss,
    /// Heartbeats and election timeouts of an ensemble ([`Timing`]).
    pub timing: Timing,
    /// Name read indexes (`sync`, fence checks, backups) from the leader's lease instead of a
    /// heartbeat round (`--lease-read`; docs/guarantees.md, "Lease reads"). Off by default.
    pub lease_read: bool,
    /// Acknowledge appends before writing them: a promise broken on purpose
    /// ([`crate::unsafe_break::Break::AckBeforeFsync`]); never set otherwise.
    pub ack_before_fsync: bool,
}

impl Default for RaftOptions {
    fn default() -> Self {
        RaftOptions {
            segment_bytes: 64 << 20,
            snapshot_log_percent: 100,
            snapshot_every: None,
            keep_after_snapshot: 1000,
            batch: BatchLimits::default(),
            replay_timeout: Duration::from_secs(600),
            on_loss: OnLoss::Refuse,
            ack_before_fsync: false,
            lease_read: false,
            timing: Timing::default(),
        }
    }
}

/// The durable [`Replication`]. Dropping it stops the proposer; call [`RaftLog::shutdown`]
/// to stop Raft too.
pub struct RaftLog {
    raft: Raft,
    proposer: Proposer,
    route: Route,
    contact: Arc<contact::Contact>,
    reports: membership::AppliedReports,
    gone: Arc<gone_leader::GoneLeader>,
    /// An ensemble member (not a one-member group), whose state can be behind the group's.
    replicated: bool,
    task: JoinHandle<()>,
    /// The snapshot file, which backups copy.
    snapshots: backup_copy::Snapshots,
    /// When the next snapshot is due; asked again at a clean stop.
    trigger: Arc<snapshot_trigger::SnapshotTrigger>,
    /// The peer listener and the leadership duties.
    background: (CancellationToken, TaskTracker),
    /// Held (locked) while the log is open, so a second server cannot share the directory.
    _dir_lock: std::fs::File,
}

impl Replication for RaftLog {
    fn submit(&self, cmd: Command) -> Pending {
        self.proposer.submit(cmd)
    }

    fn submit_waiting(&self, cmd: Command) -> Pending {
        self.proposer.submit_waiting(cmd)
    }

    fn barrier(&self) -> Barrier {
        let route = self.route.clone();
        Box::pin(async move { route.barrier().await })
    }

    fn confirm_contact(&self) -> Barrier {
        let contact = self.contact.clone();
        Box::pin(async move {
            contact.confirm().await;
            Ok(())
        })
    }

    fn in_contact(&self) -> bool {
        self.contact.in_contact()
    }

    fn raft_figures(&self) -> Option<crate::metrics::RaftFigures> {
        let metrics = self.raft.metrics().borrow_watched().clone();
        let last = metrics.last_log_index.unwrap_or(0);
        let lag = metrics.replication.iter().flatten().filter(|(id, _)| **id != metrics.id);
        let ids = metrics.membership_config.membership().nodes().map(|(id, _)| *id);
        let levels = self.route.peers.identity().levels.of(metrics.id, ids);
        Some(crate::metrics::RaftFigures {
            id: metrics.id,
            leader: metrics.current_leader,
            role: match metrics.state {
                ServerState::Leader => "leader",
                ServerState::Follower => "follower",
                ServerState::Candidate => "candidate",
                ServerState::Learner => "learner",
                ServerState::Shutdown => "shutdown",
            },
            term: metrics.current_term,
            last_log_index: last,
            applied_index: metrics.last_applied.map_or(0, |id| id.index),
            lag: lag.map(|(id, matched)| (*id, last.saturating_sub(matched.map_or(0, |m| m.index)))).collect(),
            fast_elections: self.gone.elections(),
            heard: liveness::contacts(&metrics, Duration::from_millis(self.raft.config().election_timeout_max)).map(
                |contacts| {
                    let voters: BTreeSet<NodeId> = metrics.membership_config.membership().voter_ids().collect();
                    liveness::heard(&contacts, |id| voters.contains(&id))
                },
            ),
            ensemble_level: levels.level,
            member_levels: levels.each.into_iter().collect(),
        })
    }

    fn replicated(&self) -> bool {
        self.replicated
    }

    fn members(&self) -> Members {
        let (route, reports) = (self.route.clone(), self.reports.clone());
        Box::pin(async move {
            if let Ok(list) = membership::list_here(&route.raft, &reports, &route.handing) {
                return Ok(list);
            }
            match route.admin(AdminRequest::Members, &reports).await? {
                AdminReply::Members(members) => Ok(membership::forwarded(members)),
                _ => Err(Rejected::Unknown("the leader answered without a member list".into())),
            }
        })
    }

    fn change_members(&self, change: MemberChange) -> Barrier {
        let (route, reports) = (self.route.clone(), self.reports.clone());
        let request = match change {
            MemberChange::Add { id, addr } => AdminRequest::AddMember { id, addr },
            MemberChange::AddObserver { id, addr } => AdminRequest::AddObserver { id, addr },
            MemberChange::Remove { id } => AdminRequest::RemoveMember { id },
        };
        Box::pin(async move { route.admin(request, &reports).await.map(|_| ()) })
    }

    fn transfer_leader(&self, to: Option<u64>) -> crate::replication::Transfer {
        let (route, reports) = (self.route.clone(), self.reports.clone());
        Box::pin(async move {
            match route.admin(AdminRequest::TransferLeader { to }, &reports).await? {
                AdminReply::Leader(leader) => Ok(leader),
                _ => Err(Rejected::Unknown("the leader answered a transfer without naming the new leader".into())),
            }
        })
    }

    fn snapshot_copy(&self) -> crate::replication::SnapshotCopying {
        let (raft, route, snapshots) = (self.raft.clone(), self.route.clone(), self.snapshots.clone());
        Box::pin(async move { backup_copy::take(&raft, &route, &snapshots).await })
    }

    fn propose_expiry(&self, cmd: Command) -> Pending {
        let (tx, pending) = Pending::channel();
        let raft = self.raft.clone();
        tokio::spawn(async move {
            let result = match route::write_here(&raft, vec![cmd]).await {
                Ok((_, mut applied)) => applied.pop().ok_or_else(|| Rejected::Unknown("no result".into())),
                Err(crate::peer::ForwardError::NotLeader(_)) => Err(Rejected::NotApplied("not the leader".into())),
                Err(e) => Err(Rejected::Unknown(e.to_string())),
            };
            let _ = tx.send(result);
        });
        pending
    }
}

impl RaftLog {
    /// The Raft handle, for metrics and tests.
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// Takes a snapshot now and waits until it is on disk; returns the log id it covers.
    pub async fn snapshot(&self, timeout: Duration) -> Result<Option<LogId>, OpenError> {
        let applied = self.raft.metrics().borrow_watched().last_applied;
        self.raft.trigger().snapshot().await.map_err(|e| OpenError::raft("triggering a snapshot")(e.into()))?;
        let m = self
            .raft
            .wait(Some(timeout))
            .metrics(|m| m.snapshot >= applied, "snapshot")
            .await
            .map_err(|e| OpenError::raft("waiting for the snapshot")(e.into()))?;
        Ok(m.snapshot)
    }

    /// Resolves when Raft has stopped, with why: a storage error (a write or fsync failed)
    /// stops it for good, and the server should then stop rather than serve stale reads.
    pub async fn failed(&self) -> openraft::error::Fatal<types::TypeConfig> {
        let mut metrics = self.raft.metrics();
        loop {
            let state = metrics.borrow_watched().running_state.clone();
            if let Err(fatal) = state {
                return fatal;
            }
            if metrics.changed().await.is_err() {
                return openraft::error::Fatal::Stopped;
            }
        }
    }

    /// If this member leads an ensemble, hands the leadership to the follower most up to
    /// date and waits (at most `wait`) until it leads: a clean stop of the leader then costs
    /// no election. Whether it handed over; a failure is logged, and the stop goes on.
    pub async fn hand_over_leadership(&self, wait: Duration) -> bool {
        let leads_others = {
            let m = self.raft.metrics().borrow_watched().clone();
            m.current_leader == Some(m.id) && m.membership_config.membership().voter_ids().any(|id| id != m.id)
        };
        if !self.replicated || !leads_others {
            return false;
        }
        match transfer::hand_over(&self.raft, &self.route.handing, None, wait).await {
            Ok(_) => true,
            Err(error) => {
                tracing::warn!(%error, "could not hand the leadership over before stopping; the others will elect one");
                false
            }
        }
    }

    /// At a clean stop, once clients are gone: a snapshot, if the log since the last one
    /// would take the next start long to replay, waited for at most `wait` (the stop goes on
    /// either way; the log is durable).
    pub async fn snapshot_before_stop(&self, wait: Duration) {
        if !self.trigger.worth_at_stop() {
            return;
        }
        tracing::info!("taking a snapshot before stopping, so that the next start has little log to replay");
        if let Err(error) = self.snapshot(wait).await {
            tracing::warn!(%error, "no snapshot before stopping; the next start replays the log");
        }
    }

    /// Stops the proposer, the peer link and Raft; pending commands complete as stopped.
    pub async fn shutdown(&self) {
        self.task.abort();
        self.background.0.cancel();
        self.background.1.close();
        self.background.1.wait().await;
        if let Err(error) = self.raft.shutdown().await {
            tracing::warn!(%error, "raft did not stop cleanly");
        }
    }
}
