//! Opening a member, in the order its parts depend on each other: the data directory (state
//! machine, log, identity, snapshot trigger), openraft's configuration, Raft itself (founding
//! the group on a fresh directory), then serving alone or serving peers, then the duties
//! that run beside Raft. [`open_member`] reads as that list; each step is a function here.

use super::config::raft_config;
use super::log_store::{self, LogStore};
use super::network::PeerNetworkFactory;
use super::proposer::Proposer;
use super::route::Route;
use super::snapshot_trigger::{self, SnapshotTrigger};
use super::state_machine::StateMachineStore;
use super::types::{NodeId, Raft, NODE_ID};
use super::{
    contact, continuity, fsutil, gone_leader, identity, leadership, membership, quorum, service, silence,
    snapshot_receive, standing, timing, transfer, EnsembleOptions, FileError, OpenError, RaftLog, RaftOptions,
    ENSEMBLE_KEEP_APPLIED,
};
use crate::core::Core;
use crate::local::Local;
use crate::peer::{Identity, Peers};
use openraft::async_runtime::WatchReceiver;
use openraft::{BasicNode, ServerState};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use timing::millis;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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
    let (id, name) = match &ensemble {
        Some(e) => (e.id, e.name.clone()),
        None => (NODE_ID, identity::SINGLE.to_string()),
    };
    let disk = Disk::open(data_dir, (id, &name), &core, &local, &options, ensemble.as_ref()).await?;
    let snapshots = super::backup_copy::Snapshots { path: data_dir.join("snapshot"), in_place: disk.sm.in_place() };
    let config = raft_config(&options, &name, ensemble.is_some())?;
    let started = start_raft((id, &name), data_dir, config, disk, ensemble.as_ref()).await?;
    let Started { raft, peers, quorum, trigger, dir_lock, disk_activity } = started;
    // Until this server leads and is ready, it expires nobody.
    local.sessions.not_leading();
    let handing = transfer::HandingOver::default();
    let gone = gone_leader::GoneLeader::new(timing::grace(raft.config()));
    // A lease only an ensemble needs: a one-member group's quorum is itself.
    let reads = match options.lease_read && ensemble.is_some() {
        true => super::route::Reads::Lease(timing::touch_lease(raft.config())),
        false => super::route::Reads::Index,
    };
    let route = Route { raft: raft.clone(), peers: peers.clone(), me: id, handing: handing.clone(), reads };
    let (proposer, task) = Proposer::start(route.clone(), options.batch, disk_activity);
    let (cancel, tasks) = (CancellationToken::new(), TaskTracker::new());
    let reports = membership::AppliedReports::default();
    let replicated = ensemble.is_some();
    match ensemble {
        None => serve_alone(&raft, &options, &core).await?,
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
                reads,
                peers: peers.clone(),
            });
            serve_peers(e, member, &options, &core, (&cancel, &tasks));
        }
    }
    core.read(|state| local.restart_deadlines(state));
    let grace = if replicated { timing::grace(raft.config()) } else { Duration::ZERO };
    tasks.spawn(snapshot_trigger::run(raft.clone(), trigger.clone(), cancel.clone()));
    tasks.spawn(leadership::run_duties(raft.clone(), local.clone(), grace, cancel.clone()));
    let contact = contact::Contact::new(!replicated);
    let leases = (quorum, handing);
    tasks.spawn(contact::run(contact.clone(), raft.clone(), leases, (local.clone(), peers), cancel.clone()));
    Ok(RaftLog {
        raft,
        proposer,
        route,
        contact,
        reports,
        gone,
        replicated,
        task,
        snapshots,
        trigger,
        background: (cancel, tasks),
        _dir_lock: dir_lock,
    })
}

/// The data directory, opened and checked: what Raft is started on.
struct Disk {
    dir_lock: std::fs::File,
    sm: StateMachineStore,
    store: LogStore,
    /// Neither a log nor a state: the group is founded on this start.
    fresh: bool,
    trigger: Arc<SnapshotTrigger>,
}

impl Disk {
    /// Locks the directory, loads the newest snapshot into `core`, opens the log and checks
    /// that it continues the snapshot (docs/storage.md), checks that the directory is member
    /// `id`'s of group `name` (or records it), and only then sets when snapshots are taken
    /// and which segments may go.
    async fn open(
        data_dir: &Path,
        (id, name): (NodeId, &str),
        core: &Arc<Core>,
        local: &Local,
        options: &RaftOptions,
        ensemble: Option<&EnsembleOptions>,
    ) -> Result<Disk, OpenError> {
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
        if let Some(e) = ensemble {
            store.forget_leadership(e.id);
        }
        continuity::check(data_dir, &mut store, sm.applied(), options.on_loss).await?;
        // An ensemble keeps a tail of applied entries for followers a little behind (bounded:
        // an entry is a batch of at most ~1 MiB, usually far less).
        let keep = if ensemble.is_some() { ENSEMBLE_KEEP_APPLIED } else { 0 };
        sm.evict_applied(store.evictor().keeping(keep));
        let fresh = store.is_new() && !sm.has_state();
        identity::check_or_record(data_dir, id, name, fresh)?;
        sync_created_dirs(data_dir)?;
        let trigger = SnapshotTrigger::new(
            (options.segment_bytes, options.snapshot_log_percent),
            sm.loaded_bytes(),
            store.found_bytes(),
            metrics.snapshots.clone(),
        );
        store.count_towards(trigger.clone());
        store.purge_behind(sm.in_place(), log_store::PURGE_WAIT);
        sm.report_snapshots(trigger.clone());
        Ok(Disk { dir_lock, sm, store, fresh, trigger })
    }
}

/// Makes the data directory and its parent durable, in case this start created them.
fn sync_created_dirs(data_dir: &Path) -> Result<(), OpenError> {
    fsutil::sync_dir(data_dir)?;
    if let Some(parent) = data_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fsutil::sync_dir(parent)?;
    }
    Ok(())
}

/// Takes the data directory's `LOCK` file; the OS drops the lock if the process dies.
pub(super) fn lock_dir(data_dir: &Path) -> Result<std::fs::File, OpenError> {
    let path = data_dir.join("LOCK");
    let io = |source| FileError::Io { path: path.clone(), op: "lock", source };
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(OpenError::InUse(data_dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(source)) => Err(io(source).into()),
    }
}

/// Raft, running on the opened directory, and what was made to start it.
struct Started {
    raft: Raft,
    peers: Arc<Peers>,
    quorum: Arc<quorum::QuorumClock>,
    trigger: Arc<SnapshotTrigger>,
    dir_lock: std::fs::File,
    disk_activity: super::activity::Watch,
}

/// Starts Raft on `disk` with the peer link, and founds the group on a fresh directory
/// (unless this member joins an existing ensemble, which founds nothing).
async fn start_raft(
    (id, name): (NodeId, &str),
    data_dir: &Path,
    config: openraft::Config,
    disk: Disk,
    ensemble: Option<&EnsembleOptions>,
) -> Result<Started, OpenError> {
    let routes = ensemble.map(|e| e.routes.clone()).unwrap_or_default();
    let peer_tls = ensemble.and_then(|e| e.peer_tls.clone());
    let peers = Arc::new(Peers::new(
        Identity { ensemble: name.into(), me: id, tls: peer_tls, levels: Default::default() },
        routes,
    ));
    let quorum = Arc::new(quorum::QuorumClock::default());
    let network = PeerNetworkFactory { peers: peers.clone(), quorum: quorum.clone() };
    let Disk { dir_lock, sm, store, fresh, trigger } = disk;
    let disk_activity = store.activity();
    let raft =
        Raft::new(id, Arc::new(config), network, store, sm).await.map_err(|e| OpenError::raft("starting")(e.into()))?;
    let joining = ensemble.is_some_and(|e| e.members.is_empty());
    if fresh && !joining {
        let members: BTreeMap<NodeId, BasicNode> = match ensemble {
            Some(e) => e.members.iter().map(|(id, addr)| (*id, BasicNode::new(addr))).collect(),
            None => BTreeMap::from([(NODE_ID, BasicNode::default())]),
        };
        raft.initialize(members).await.map_err(|e| OpenError::raft("initializing")(e.into()))?;
        tracing::info!(dir = %data_dir.display(), "new data directory initialized");
    }
    Ok(Started { raft, peers, quorum, trigger, dir_lock, disk_activity })
}

/// A one-member group: leads, and has applied every logged command before it serves.
async fn serve_alone(raft: &Raft, options: &RaftOptions, core: &Core) -> Result<(), OpenError> {
    become_leader(raft).await?;
    let last = raft.metrics().borrow_watched().last_log_index;
    raft.wait(Some(options.replay_timeout))
        .applied_index_at_least(last, "replay the log")
        .await
        .map_err(|e| OpenError::raft("replaying the log")(e.into()))?;
    tracing::info!(last_index = %last.map_or_else(|| "none".to_string(), |i| i.to_string()), zxid = core.read(|s| s.last_zxid()), "durable log open");
    Ok(())
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

/// An ensemble member: serves its peers at once, and watches its leader's silence and
/// departure; it returns without waiting for a leader.
fn serve_peers(
    e: EnsembleOptions,
    member: Arc<service::Member>,
    options: &RaftOptions,
    core: &Core,
    (cancel, tasks): (&CancellationToken, &TaskTracker),
) {
    let (raft, peers, gone) = (member.raft.clone(), member.peers.clone(), member.gone.clone());
    let identity = peers.identity().clone();
    let peer_tls = identity.tls.is_some();
    let waits = (timing::grace(raft.config()), options.timing.heartbeat, options.timing.election / 2);
    let (heard, running) = (member.standing.heard(), member.standing.running());
    tasks.spawn(silence::watch(raft.clone(), heard, running, waits, cancel.clone()));
    tasks.spawn(gone_leader::watch(raft.clone(), peers, gone, cancel.clone()));
    tasks.spawn(crate::peer::listener::serve(e.peer_listener, identity, member, cancel.clone(), tasks.clone()));
    let members: Vec<String> = e.members.iter().map(|(id, addr)| format!("{id}={addr}")).collect();
    tracing::info!(
        id = e.id,
        members = %members.join(","),
        peer_tls,
        zxid = core.read(|s| s.last_zxid()),
        heartbeat_ms = millis(options.timing.heartbeat),
        election_timeout_ms = millis(options.timing.election),
        "ensemble member open"
    );
}
