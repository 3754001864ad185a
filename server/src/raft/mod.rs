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
//! * [`state_machine`]: openraft's `RaftStateMachine` over [`Core`], and snapshots;
//!   [`snapshot_trigger`]: when the next one is due (by log size).
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

pub mod activity;
mod answers;
pub mod batch;
pub mod contact;
mod continuity;
mod defer;
pub mod error;
pub mod extent;
mod forwards;
pub mod fsutil;
mod gone_leader;
pub mod identity;
mod late;
pub mod leadership;
mod liveness;
pub mod log_store;
mod marks;
pub mod membership;
pub mod network;
pub mod proposer;
pub mod quorum;
mod readback;
pub mod record;
pub mod rounds;
pub mod route;
pub mod segment;
pub mod service;
mod silence;
pub mod snapshot_file;
mod snapshot_format;
mod snapshot_receive;
pub mod snapshot_trigger;
mod standing;
pub mod state_machine;
pub mod timing;
mod transfer;
pub mod types;
mod unsettled;
pub mod wal;
pub mod writer;

pub use error::{FileError, OpenError};
pub use proposer::BatchLimits;
pub use timing::Timing;
pub use wal::OnLoss;

use crate::command::Command;
use crate::core::Core;
use crate::local::Local;
use crate::peer::{AdminReply, AdminRequest};
use crate::peer::{Identity, Peers};
use crate::replication::{Barrier, MemberChange, Members, Pending, Rejected, Replication};
use log_store::LogStore;
use network::PeerNetworkFactory;
use openraft::async_runtime::WatchReceiver;
use openraft::{BasicNode, ServerState, SnapshotPolicy};
use proposer::Proposer;
use route::Route;
use snapshot_trigger::SnapshotTrigger;
use state_machine::StateMachineStore;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use timing::millis;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use types::{LogId, NodeId, Raft, NODE_ID};

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

/// Opens a single server's data directory: see [`open_member`].
pub async fn open(
    data_dir: &Path,
    core: Arc<Core>,
    local: Arc<Local>,
    options: RaftOptions,
) -> Result<RaftLog, OpenError> {
    open_member(data_dir, core, local, options, None).await
}

/// Opens (or creates) the data directory and restores `core` from the newest snapshot plus
/// the log after it. `core` must be fresh: its state is replaced. `local` must be the sink
/// `core` publishes to: its session deadlines restart, and its sweep follows leadership.
///
/// Without `ensemble` this server is a one-member group: it returns once it leads and has
/// applied every logged command. With `ensemble` it serves its peers at once and returns
/// without waiting for a leader; the first start of a fresh directory founds the group with
/// `ensemble.members` (every founding member proposes the same first entry, so starting them
/// in any order makes one group).
pub async fn open_member(
    data_dir: &Path,
    core: Arc<Core>,
    local: Arc<Local>,
    options: RaftOptions,
    ensemble: Option<EnsembleOptions>,
) -> Result<RaftLog, OpenError> {
    std::fs::create_dir_all(data_dir).map_err(|source| FileError::Io {
        path: data_dir.into(),
        op: "create",
        source,
    })?;
    let dir_lock = lock_dir(data_dir)?;
    let mut sm = StateMachineStore::open(data_dir, core.clone())?;
    continuity::before_log_opens(data_dir, sm.applied(), options.on_loss)?;
    let metrics = local.metrics.clone();
    let mut store = LogStore::open_with(data_dir, options.segment_bytes, options.on_loss, metrics.log.clone())?;
    if options.ack_before_fsync {
        store.acknowledge_before_writing();
    }
    if let Some(e) = &ensemble {
        store.forget_leadership(e.id);
    }
    continuity::check(data_dir, &mut store, sm.applied(), options.on_loss).await?;
    // An ensemble keeps a tail of applied entries for followers a little behind (bounded:
    // an entry is a batch of at most ~1 MiB, usually far less).
    let keep = if ensemble.is_some() { ENSEMBLE_KEEP_APPLIED } else { 0 };
    sm.evict_applied(store.evictor().keeping(keep));
    let fresh = store.is_new() && !sm.has_state();
    let (id, name) = match &ensemble {
        Some(e) => (e.id, e.name.as_str()),
        None => (NODE_ID, identity::SINGLE),
    };
    identity::check_or_record(data_dir, id, name, fresh)?;
    // Make the directories themselves durable if this call created them.
    fsutil::sync_dir(data_dir)?;
    if let Some(parent) = data_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fsutil::sync_dir(parent)?;
    }
    let trigger = SnapshotTrigger::new(
        (options.segment_bytes, options.snapshot_log_percent),
        sm.loaded_bytes(),
        store.found_bytes(),
        metrics.snapshots.clone(),
    );
    store.count_towards(trigger.clone());
    store.purge_behind(sm.in_place(), log_store::PURGE_WAIT);
    sm.report_snapshots(trigger.clone());
    let policy = options.snapshot_every.map_or(SnapshotPolicy::Never, SnapshotPolicy::LogsSinceLast);
    let config = match &ensemble {
        Some(_) => openraft::Config {
            cluster_name: name.into(),
            // openraft times an append out after one heartbeat interval: it must cover a
            // follower's fsync on a loaded machine.
            heartbeat_interval: millis(options.timing.heartbeat),
            // openraft's leader lease (`election_timeout_max`): no voter grants a vote until
            // its leader has been silent this long, so it is most of what a leader kill
            // costs; `silence` stands soon after it.
            election_timeout_min: millis(options.timing.election),
            election_timeout_max: millis(timing::lease(&options.timing)),
            install_snapshot_timeout: 10_000,
            snapshot_max_chunk_size: 1 << 20,
            // Each entry is a batch of up to ~1 MiB.
            max_payload_entries: 16,
            snapshot_policy: policy,
            max_in_snapshot_log_to_keep: options.keep_after_snapshot,
            // A member cut off and back raises no term before it knows it could win: it
            // does not depose a leader the others still follow.
            enable_pre_vote: Some(true),
            // Entries go to the followers as soon as they are handed to the log store, while
            // the leader's own fsync runs: a write waits for one fsync's time, not two.
            broadcast_submitted_on_append: Some(true),
            // A member restarted while it led is elected again before it leads: its commit
            // index is not stored, and a read index from it would miss writes it had
            // acknowledged (G17; `LogStore::forget_leadership` reads its vote back the same way).
            enable_leader_restore: Some(false),
            ..Default::default()
        },
        None => openraft::Config {
            cluster_name: name.into(),
            // One member: ticks and elections matter only at startup; keep them quiet.
            heartbeat_interval: 500,
            election_timeout_min: 1500,
            election_timeout_max: 3000,
            snapshot_policy: policy,
            max_in_snapshot_log_to_keep: options.keep_after_snapshot,
            ..Default::default()
        },
    }
    .validate()?;
    let replicated = ensemble.is_some();
    let grace = match &ensemble {
        Some(_) => timing::grace(&config),
        None => Duration::ZERO,
    };
    let routes = ensemble.as_ref().map(|e| e.routes.clone()).unwrap_or_default();
    let peer_tls = ensemble.as_ref().and_then(|e| e.peer_tls.clone());
    let peers = Arc::new(Peers::new(Identity { ensemble: name.into(), me: id, tls: peer_tls }, routes));
    let quorum = Arc::new(quorum::QuorumClock::default());
    let network = PeerNetworkFactory { peers: peers.clone(), quorum: quorum.clone() };
    let disk = store.activity();
    let raft =
        Raft::new(id, Arc::new(config), network, store, sm).await.map_err(|e| OpenError::raft("starting")(e.into()))?;
    // Until this server leads and is ready, it expires nobody.
    local.sessions.not_leading();
    let cancel = CancellationToken::new();
    let tasks = TaskTracker::new();
    let reports = membership::AppliedReports::default();
    let joining = ensemble.as_ref().is_some_and(|e| e.members.is_empty());
    if fresh && !joining {
        let members: BTreeMap<NodeId, BasicNode> = match &ensemble {
            Some(e) => e.members.iter().map(|(id, addr)| (*id, BasicNode::new(addr))).collect(),
            None => BTreeMap::from([(NODE_ID, BasicNode::default())]),
        };
        raft.initialize(members).await.map_err(|e| OpenError::raft("initializing")(e.into()))?;
        tracing::info!(dir = %data_dir.display(), "new data directory initialized");
    }
    let handing = transfer::HandingOver::default();
    let gone = gone_leader::GoneLeader::new(timing::grace(raft.config()));
    let route = Route { raft: raft.clone(), peers: peers.clone(), me: id, handing: handing.clone() };
    let (proposer, task) = Proposer::start(route.clone(), options.batch, disk);
    match ensemble {
        None => {
            become_leader(&raft).await?;
            let last = raft.metrics().borrow_watched().last_log_index;
            raft.wait(Some(options.replay_timeout))
                .applied_index_at_least(last, "replay the log")
                .await
                .map_err(|e| OpenError::raft("replaying the log")(e.into()))?;
            tracing::info!(last_index = %last.map_or_else(|| "none".to_string(), |i| i.to_string()), zxid = core.read(|s| s.last_zxid()), "durable log open");
        }
        Some(e) => {
            let member = Arc::new(service::Member {
                raft: raft.clone(),
                local: local.clone(),
                reports: reports.clone(),
                chunks: proposer.chunks(),
                standing: standing::Standing::new(timing::grace(raft.config())),
                quorum: quorum.clone(),
                handing: handing.clone(),
                snapshots: tokio::sync::Mutex::new(snapshot_receive::SnapshotReceiver::new(data_dir.join("snapshot"))),
                gone: gone.clone(),
                peers: peers.clone(),
            });
            let identity = peers.identity().clone();
            let peer_tls = identity.tls.is_some();
            let waits = (timing::grace(raft.config()), options.timing.heartbeat, options.timing.election / 2);
            let (heard, running) = (member.standing.heard(), member.standing.running());
            tasks.spawn(silence::watch(raft.clone(), heard, running, waits, cancel.clone()));
            tasks.spawn(gone_leader::watch(raft.clone(), peers.clone(), gone.clone(), cancel.clone()));
            tasks.spawn(crate::peer::listener::serve(e.peer_listener, identity, member, cancel.clone(), tasks.clone()));
            let members: Vec<String> = e.members.iter().map(|(id, addr)| format!("{id}={addr}")).collect();
            tracing::info!(
                id,
                members = %members.join(","),
                peer_tls,
                zxid = core.read(|s| s.last_zxid()),
                heartbeat_ms = millis(options.timing.heartbeat),
                election_timeout_ms = millis(options.timing.election),
                "ensemble member open"
            );
        }
    }
    core.read(|state| local.restart_deadlines(state));
    tasks.spawn(snapshot_trigger::run(raft.clone(), trigger, cancel.clone()));
    tasks.spawn(leadership::run_duties(raft.clone(), local.clone(), grace, cancel.clone()));
    let contact = contact::Contact::new(!replicated);
    let leases = (quorum, handing);
    tasks.spawn(contact::run(contact.clone(), raft.clone(), leases, (local.clone(), peers.clone()), cancel.clone()));
    Ok(RaftLog {
        raft,
        proposer,
        route,
        contact,
        reports,
        gone,
        replicated,
        task,
        background: (cancel, tasks),
        _dir_lock: dir_lock,
    })
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
    raft.trigger().elect(false).await.map_err(|e| OpenError::raft("calling an election")(e.into()))?;
    raft.wait(Some(Duration::from_secs(30)))
        .state(ServerState::Leader, "leader")
        .await
        .map(|_| ())
        .map_err(|e| OpenError::raft("becoming leader of its own group")(e.into()))
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
