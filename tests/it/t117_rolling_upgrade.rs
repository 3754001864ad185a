//! A rolling upgrade from the previous release and back (G32): a three-member ensemble started
//! on the previous release's `ward-server` (built once from its commit:
//! `ward_testkit::previous`) is upgraded member by member to this build while writers, 100
//! sessions and lock contenders run; before the last member is upgraded, one upgraded member
//! is taken back to the previous release and upgraded again. Each step stops the member
//! cleanly (SIGTERM) and starts it on the other binary with the same data directory, ports
//! and flags (`ServerProcess::try_restart_on`).
//!
//! While any member runs the previous release, a leader of this release (the leadership is
//! handed to one when a member of the previous release leads) says the ensemble is at
//! release level 2 and refuses an observer; once every member runs this release it says 3,
//! and every member's level as 3. Through it all no acknowledged write is lost, no session
//! expires, and the lock stays exclusive with rising fencing tokens.

// G32: an ensemble upgraded member by member from the previous release, and one member taken
// back to it before the last is upgraded, loses no acknowledged write, expires no session,
// keeps every lock exclusive with rising fencing tokens, and raises its release level only
// once every member runs the new release.

use crate::harness::*;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use tokio::time::timeout;
use ward_client::{Client, CreateMode, Error, SessionState};
use ward_testkit::previous::previous_release_binary;
use ward_testkit::{seed, serial, Ensemble, EnsembleOptions};

/// Every client's session timeout: long enough to ride out a member's restart and the
/// election that may follow.
const SESSION: Duration = Duration::from_secs(20);
/// Sessions held open from the first step to the last, each with an ephemeral node.
const SESSIONS: usize = 100;
/// Writer tasks, each with a session of its own.
const WRITERS: usize = 3;
/// Creates per writer at most, so that the read-back at the end stays quick.
const MAX_WRITES: usize = 1500;
/// Lock contender tasks, each with a session of its own.
const CONTENDERS: usize = 3;
/// Acknowledged writes after a step that show the ensemble serves writes again (each
/// contender must also have been granted the lock again).
const RESUMED: usize = 100;
/// How long a task whose request failed waits for its client to reconnect before the next
/// one: pacing only, so that a disconnected client does not spin on instant failures.
const RETRY_PACE: Duration = Duration::from_millis(300);
/// The id asked for as an observer while the ensemble is mixed (never added).
const OBSERVER: u64 = 4;

const WRITES: &str = "/t117-w";
const EPHEMERALS: &str = "/t117-s";
const STEPS: &str = "/t117-step";
const LOCK: &str = "/t117-lock";
const RESOURCE: &str = "/t117-resource";

/// Which `ward-server` a member runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    /// The previous release's (`ward_testkit::previous`): peer protocol 2, no release level.
    Previous,
    /// This build's: release level 3.
    Current,
}

// G32 (and G5, G12, G14, G15, G16, G26 across releases): see the file's comment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_upgraded_member_by_member_and_back_keeps_every_promise() {
    // Held from before the build: it loads every core for a minute or two the first time.
    let _serial = serial().await;
    let started = Instant::now();
    let previous = tokio::task::spawn_blocking(previous_release_binary).await.expect("build the previous release");
    tokio::task::spawn_blocking(|| ward_testkit::locate::server_binary().clone()).await.expect("build ward-server");
    println!("previous release {} ready after {:?}", previous.display(), started.elapsed());
    bounded(rolling_upgrade(previous)).await;
    println!("the whole test took {:?}", started.elapsed());
}

async fn rolling_upgrade(previous: PathBuf) {
    let seed = seed();
    eprintln!("ensemble start order from WARD_TEST_SEED={seed}");
    let options = EnsembleOptions {
        members: 3,
        flags: Vec::new(),
        seed,
        binary: Some(previous.clone()),
        envs: Vec::new(),
        log_dir: None,
    };
    let ensemble = Ensemble::launch(&options).await.unwrap_or_else(|e| panic!("the previous release's ensemble: {e}"));
    let mut up = Upgrade { ensemble, previous, runs: BTreeMap::new() };
    for id in up.ensemble.ids() {
        up.runs.insert(id, Release::Previous);
    }
    let first_leader = up.ensemble.leader(&[]).await;
    up.check_binaries().await;
    let all = up.ensemble.connect_string();

    let setup = connect_serving(&all, SESSION).await;
    for dir in [WRITES, EPHEMERALS, STEPS, RESOURCE] {
        match answered(&format!("create {dir}"), || setup.create(dir, b"", CreateMode::Persistent)).await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(e) => panic!("create {dir}: {e:?}"),
        }
    }
    let _ = timeout(DEADLINE, setup.close()).await;

    let sessions = Sessions::open(&all).await;
    let workload = Workload::start(&all).await;
    wait_until("the workload runs", DEADLINE, || async {
        workload.acks() >= RESUMED && workload.grants().iter().all(|&g| g > 0)
    })
    .await;
    println!(
        "previous release on every member, member {first_leader} leads; {SESSIONS} sessions (timeout {:?} granted), \
         {WRITERS} writers and {CONTENDERS} lock contenders running",
        sessions.clients[0].session_timeout()
    );

    // The leader first (on SIGTERM it hands its leadership to a follower, of the previous
    // release), then a follower; then the first upgraded member is taken back to the previous
    // release and upgraded again; then the last. After each step a member of this release
    // leads (the leadership is handed to one if need be) and its level figures are checked.
    let followers: Vec<u64> = up.ensemble.ids().into_iter().filter(|&id| id != first_leader).collect();
    let (a, last) = (followers[0], followers[1]);
    let mut step_writes = Vec::new();
    for (id, to) in [
        (first_leader, Release::Current),
        (a, Release::Current),
        (first_leader, Release::Previous),
        (first_leader, Release::Current),
    ] {
        up.restart_on(id, to, &workload, &mut step_writes).await;
        up.check_mixed_level(&all).await;
    }

    // Before the last upgrade: an observer is refused by a leader of this release.
    up.check_observer_refused(&all).await;

    up.restart_on(last, Release::Current, &workload, &mut step_writes).await;
    up.check_level_raised().await;

    // The workload stops; then what it saw is checked.
    let (writes, locks) = workload.stop().await;
    let reader = connect_serving(&all, SESSION).await;
    answered("a sync before the read-back", || reader.sync("/")).await.expect("sync");
    check_writes(&reader, &writes, &step_writes).await;
    sessions.check(&reader).await;
    let sections = check_exclusive(&locks.record);
    println!(
        "locks: {} sections, tokens strictly rising; {} fenced writes accepted, {} of unknown outcome, {} guards lost \
         before their exit, {} lock or unlock calls failed and were retried",
        sections.count, locks.fenced_ok, locks.fenced_unknown, locks.lost, locks.errors
    );
    assert!(locks.stale.is_empty(), "fenced writes refused while their guard held the lock: tokens {:?}", locks.stale);
    let _ = timeout(DEADLINE, reader.close()).await;
}

/// The ensemble, which binary each member runs, and the previous release's binary.
struct Upgrade {
    ensemble: Ensemble,
    previous: PathBuf,
    runs: BTreeMap<u64, Release>,
}

impl Upgrade {
    /// Stops member `id` cleanly and starts it on `to` with the same data directory, ports
    /// and flags; returns once it serves, a leader answers, and the workload has made progress
    /// ([`RESUMED`] more writes acknowledged, every contender granted the lock again). A write
    /// through the member itself is acknowledged and added to `step_writes`.
    async fn restart_on(&mut self, id: u64, to: Release, workload: &Workload, step_writes: &mut Vec<String>) {
        let at = Instant::now();
        let (acks, grants) = (workload.acks(), workload.grants());
        let status = tokio::task::block_in_place(|| self.ensemble.member(id).terminate());
        assert!(
            status.success(),
            "member {id} stopped with SIGTERM exited with {status}:\n{}",
            self.ensemble.log_tail(id)
        );
        let binary = match to {
            Release::Previous => Some(self.previous.clone()),
            Release::Current => None,
        };
        let restarted = tokio::task::block_in_place(|| self.ensemble.member(id).try_restart_on(binary));
        if let Err(e) = restarted {
            panic!("member {id} did not start on the {to:?} release: {e}\n{}", self.ensemble.log_tail(id));
        }
        self.runs.insert(id, to);
        wait_serving(&self.ensemble, id).await;
        let leader = self.ensemble.leader(&[]).await;
        let through = connect_serving(&self.ensemble.addr(id), SESSION).await;
        let (path, data) = (format!("{STEPS}/{}", step_writes.len()), id.to_string());
        let created = answered(&format!("a write through member {id}"), || {
            through.create(&path, data.as_bytes(), CreateMode::Persistent)
        })
        .await;
        match created {
            Ok(_) | Err(Error::NodeExists) => step_writes.push(path),
            Err(e) => panic!("a write through member {id} after its restart on the {to:?} release: {e:?}"),
        }
        let _ = timeout(DEADLINE, through.close()).await;
        let resumed = || async {
            workload.acks() >= acks + RESUMED && workload.grants().iter().zip(&grants).all(|(now, then)| now > then)
        };
        wait_until("writes are acknowledged and every contender granted the lock again", DEADLINE, resumed).await;
        println!(
            "member {id} stopped ({status}) and started on the {to:?} release; member {leader} leads; \
             serving, writing and locking again after {:?}; now {:?}",
            at.elapsed(),
            self.runs
        );
        self.check_binaries().await;
    }

    /// Each member's `/metrics` has `ward_ensemble_level` if and only if it runs this
    /// release: the member runs the binary the test thinks it does.
    async fn check_binaries(&self) {
        for (&id, &release) in &self.runs {
            let metrics = wait_for(&format!("member {id}'s /metrics"), DEADLINE, || metrics(&self.ensemble, id)).await;
            let has = figure(&metrics, "ward_ensemble_level").is_some();
            assert_eq!(has, release == Release::Current, "member {id} runs the {release:?} release:\n{metrics}");
        }
    }

    /// While a member runs the previous release: a leader of this release (handed the
    /// leadership if need be) says the ensemble is at level 2, and that member at 2 (or not
    /// heard yet), never 3.
    async fn check_mixed_level(&self, all: &str) {
        let behind: Vec<u64> = self.runs.iter().filter(|(_, r)| **r == Release::Previous).map(|(id, _)| *id).collect();
        assert!(!behind.is_empty(), "a mixed ensemble");
        let seen = wait_for("a leader of this release says its levels", DEADLINE, || async {
            self.current_leader(all).await;
            self.leader_levels().await
        })
        .await;
        println!("  {seen}");
        assert_eq!(seen.metric, Some(2), "the leader's ward_ensemble_level while {behind:?} run the previous release");
        assert_eq!(seen.api_level, Some(2), "the leader's this_member.ensemble_level while {behind:?} are behind");
        for id in &behind {
            assert_eq!(seen.metric_members.get(id).copied().unwrap_or(2), 2, "ward_member_level of member {id}");
            assert!(
                matches!(seen.api_members.get(id), Some(None | Some(2))),
                "member_levels of member {id}, which runs the previous release: {seen}"
            );
        }
    }

    /// A leader of this release: if a member of the previous release leads, the leadership is
    /// handed to a member of this release (`Client::transfer_leader`).
    async fn current_leader(&self, all: &str) -> u64 {
        let leader = self.ensemble.leader(&[]).await;
        if self.runs[&leader] == Release::Current {
            return leader;
        }
        let to =
            self.runs.iter().find(|(_, r)| **r == Release::Current).map(|(id, _)| *id).expect("an upgraded member");
        let admin = connect_serving(all, SESSION).await;
        let moved =
            answered(&format!("a transfer of the leadership to member {to}"), || admin.transfer_leader(Some(to)))
                .await
                .unwrap_or_else(|e| panic!("transfer the leadership to member {to}: {e:?}"));
        let _ = timeout(DEADLINE, admin.close()).await;
        let now = self.ensemble.leader(&[]).await;
        println!("  leadership handed from member {leader} (previous release) to member {moved}; member {now} leads");
        now
    }

    /// The leader's level figures, once a member of this release that leads answers; `None`
    /// if the leader runs the previous release.
    async fn leader_levels(&self) -> Option<LeaderLevels> {
        wait_for("the leader's level figures", DEADLINE, || async {
            let leader = self.ensemble.leader(&[]).await;
            if self.runs[&leader] == Release::Previous {
                return Some(None);
            }
            let metrics = metrics(&self.ensemble, leader).await?;
            let view = ensemble_view(self.ensemble.admin_addr(leader)).await?;
            let me = &view["this_member"];
            // Read while it still led (the figures of a member that just lost the lead are
            // those of a follower, which may not have heard every member).
            if me["role"].as_str() != Some("leader") || me["id"].as_u64() != Some(leader) {
                return None;
            }
            let api_members = me["member_levels"]
                .as_object()?
                .iter()
                .filter_map(|(id, level)| Some((id.parse().ok()?, level.as_u64())))
                .collect();
            let metric_members = self
                .runs
                .keys()
                .filter_map(|&id| Some((id, figure(&metrics, &format!("ward_member_level{{member=\"{id}\"}}"))?)))
                .collect();
            Some(Some(LeaderLevels {
                leader,
                metric: figure(&metrics, "ward_ensemble_level"),
                metric_members,
                api_level: me["ensemble_level"].as_u64(),
                api_members,
            }))
        })
        .await
    }

    /// Before the last upgrade, through a leader of this release (leadership is handed to
    /// one if need be): `add_observer` is refused, the leader says why in its log, and no
    /// member is added.
    async fn check_observer_refused(&self, all: &str) {
        let leader = self.current_leader(all).await;
        assert_eq!(self.runs[&leader], Release::Current, "the leader runs this release for the observer check");
        let peer = ward_testkit::port::stable().expect("a free port").to_string();
        let admin = connect_serving(&self.ensemble.addr(leader), SESSION).await;
        let refused = wait_for("an answer to add_observer", DEADLINE, || async {
            match timeout(Duration::from_secs(10), admin.add_observer(OBSERVER, &peer)).await {
                Ok(Err(Error::ConnectionLoss)) => None,
                Ok(outcome) => Some(outcome),
                Err(_) => panic!("add_observer got no answer within 10 s: not refused"),
            }
        })
        .await;
        let members = answered("the member list", || admin.members()).await.expect("members");
        let _ = timeout(DEADLINE, admin.close()).await;
        println!("add_observer({OBSERVER}) through leader {leader} with a member of the previous release: {refused:?}");
        // The client sees an error (today `Unavailable`, as for every refused membership
        // change); the leader's log says which refusal it was.
        assert!(refused.is_err(), "add_observer accepted while a member runs the previous release");
        let ids: BTreeSet<u64> = members.iter().map(|m| m.id).collect();
        assert_eq!(ids, self.runs.keys().copied().collect(), "no member added: {members:?}");
        let says = "adding an observer needs every member at release level 3";
        wait_until("the leader logs why the observer was refused", DEADLINE, || async {
            self.ensemble.log_tail(leader).contains(says)
        })
        .await;
        let line = self.ensemble.log_tail(leader).lines().rev().find(|l| l.contains(says)).map(str::to_owned);
        println!("  leader {leader} logged: {}", line.unwrap_or_default());
    }

    /// Every member runs this release: the leader's ensemble level reaches 3 and it reports
    /// every member at 3; each member says it is at 3 itself.
    async fn check_level_raised(&self) {
        assert!(self.runs.values().all(|r| *r == Release::Current), "every member upgraded");
        let at = Instant::now();
        let seen = wait_for("the leader's ward_ensemble_level reaches 3", DEADLINE, || async {
            let seen = self.leader_levels().await.expect("a leader of this release");
            let every = self.runs.keys().all(|id| seen.api_members.get(id) == Some(&Some(3)));
            (seen.metric == Some(3) && seen.api_level == Some(3) && every).then_some(seen)
        })
        .await;
        println!("every member upgraded; after {:?}: {seen}", at.elapsed());
        for &id in self.runs.keys() {
            assert_eq!(seen.metric_members.get(&id), Some(&3), "the leader's ward_member_level of member {id}: {seen}");
            let view = wait_for(&format!("member {id}'s /api/ensemble"), DEADLINE, || {
                ensemble_view(self.ensemble.admin_addr(id))
            })
            .await;
            assert_eq!(view["this_member"]["level"].as_u64(), Some(3), "member {id}'s own level: {view}");
        }
    }
}

/// What a leader of this release says of release levels.
struct LeaderLevels {
    leader: u64,
    /// `/metrics`: `ward_ensemble_level` and each `ward_member_level{member="N"}`.
    metric: Option<u64>,
    metric_members: BTreeMap<u64, u64>,
    /// `/api/ensemble`: `this_member.ensemble_level` and `member_levels` (`None`: not heard).
    api_level: Option<u64>,
    api_members: BTreeMap<u64, Option<u64>>,
}

impl std::fmt::Display for LeaderLevels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "leader {}: ward_ensemble_level {:?}, ward_member_level {:?}; /api/ensemble ensemble_level {:?}, \
             member_levels {:?}",
            self.leader, self.metric, self.metric_members, self.api_level, self.api_members
        )
    }
}

/// Member `id`'s `/metrics`, if it answers.
async fn metrics(ensemble: &Ensemble, id: u64) -> Option<String> {
    let admin: SocketAddr = ensemble.admin_addr(id);
    let asked =
        tokio::task::spawn_blocking(move || ward_testkit::http::try_get(admin, "/metrics", Duration::from_secs(10)));
    let (status, body) = asked.await.ok()?.ok()?;
    (status == 200).then_some(body)
}

/// The value of the sample named exactly `name` (labels included) in a `/metrics` body.
fn figure(metrics: &str, name: &str) -> Option<u64> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.rsplit_once(' ').filter(|(n, _)| *n == name).and_then(|(_, v)| v.trim().parse().ok()))
}

/// Waits until member `id` takes clients and has caught up with a sync.
async fn wait_serving(ensemble: &Ensemble, id: u64) {
    let addr = ensemble.addr(id);
    wait_until(&format!("member {id} serves"), DEADLINE, || async {
        let Some(client) = try_connect(&addr, Duration::from_secs(4)).await else { return false };
        let synced = matches!(timeout(Duration::from_secs(5), client.sync("/")).await, Ok(Ok(())));
        let _ = timeout(Duration::from_secs(5), client.close()).await;
        synced
    })
    .await
}

/// Returns once `client` is connected, or after [`RETRY_PACE`]: pacing, not correctness.
async fn reconnected(client: &Client) {
    let mut states = client.state_changes();
    let _ = timeout(RETRY_PACE, states.wait_for(|s| *s == SessionState::Connected)).await;
    // A connected client whose request was refused: the next one need not follow at once.
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// The [`SESSIONS`] sessions, each with an ephemeral node `/t117-s/K`, and whether any ever
/// saw its session expire.
struct Sessions {
    clients: Vec<Client>,
    expired: Arc<Mutex<Vec<usize>>>,
    disconnects: Arc<AtomicUsize>,
    _watchers: JoinSet<()>,
}

impl Sessions {
    async fn open(all: &str) -> Sessions {
        let mut opening = JoinSet::new();
        for k in 0..SESSIONS {
            let all = all.to_string();
            opening.spawn(async move {
                let client = connect_serving(&all, SESSION).await;
                let path = format!("{EPHEMERALS}/{k}");
                match answered(&format!("create {path}"), || client.create(&path, b"", CreateMode::Ephemeral)).await {
                    Ok(_) | Err(Error::NodeExists) => {}
                    Err(e) => panic!("create {path}: {e:?}"),
                }
                (k, client)
            });
        }
        let mut clients: Vec<(usize, Client)> = Vec::new();
        while let Some(opened) = within("the sessions open", DEADLINE * 2, opening.join_next()).await {
            clients.push(opened.expect("open a session"));
        }
        clients.sort_by_key(|(k, _)| *k);
        let clients: Vec<Client> = clients.into_iter().map(|(_, c)| c).collect();
        let (expired, disconnects) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicUsize::new(0)));
        let mut watchers = JoinSet::new();
        for (k, client) in clients.iter().enumerate() {
            let (mut states, expired, disconnects) = (client.state_changes(), expired.clone(), disconnects.clone());
            watchers.spawn(async move {
                let mut connected = true;
                while states.changed().await.is_ok() {
                    let state = *states.borrow_and_update();
                    if connected && state != SessionState::Connected {
                        disconnects.fetch_add(1, Ordering::Relaxed);
                    }
                    connected = state == SessionState::Connected;
                    if state == SessionState::Expired {
                        expired.lock().expect("expired").push(k);
                        return;
                    }
                }
            });
        }
        Sessions { clients, expired, disconnects, _watchers: watchers }
    }

    /// No session expired: none was seen `Expired`, each still answers, and each one's
    /// ephemeral is there, owned by it.
    async fn check(&self, reader: &Client) {
        let seen = self.expired.lock().expect("expired").clone();
        assert!(seen.is_empty(), "sessions seen expired: {seen:?}");
        let expired: Vec<usize> = (0..SESSIONS).filter(|&k| self.clients[k].state() == SessionState::Expired).collect();
        assert!(expired.is_empty(), "sessions expired: {expired:?}");
        for (k, client) in self.clients.iter().enumerate() {
            let root = answered(&format!("session {k} answers"), || client.exists("/")).await;
            assert!(
                matches!(root, Ok(Some(_))),
                "session {k} ({:?}): exists(\"/\") gave {root:?}",
                client.session_id()
            );
        }
        let children = answered("list the ephemerals", || reader.get_children(EPHEMERALS)).await.expect("list");
        assert_eq!(children.len(), SESSIONS, "ephemerals left: {children:?}");
        for (k, client) in self.clients.iter().enumerate() {
            let path = format!("{EPHEMERALS}/{k}");
            let stat = answered("exists", || reader.exists(&path)).await.expect("exists");
            let owner = stat.unwrap_or_else(|| panic!("{path} is gone")).ephemeral_owner;
            assert_eq!(owner, Some(client.session_id()), "{path} is owned by another session");
        }
        println!(
            "{SESSIONS} sessions alive with their ephemerals ({} disconnections seen along the way, none expired)",
            self.disconnects.load(Ordering::Relaxed)
        );
        for client in &self.clients {
            let _ = timeout(Duration::from_secs(5), client.close()).await;
        }
    }
}

/// What one writer had acknowledged.
#[derive(Default)]
struct Written {
    /// Nodes created (`/t117-w/W-I`, data `c`).
    created: Vec<String>,
    /// Nodes whose set to `s-I` was acknowledged (only the writer writes its nodes).
    set: Vec<(String, Vec<u8>)>,
    /// Requests whose outcome is unknown (connection lost, or no answer in time).
    unknown: usize,
    /// Requests refused.
    refused: usize,
}

/// What the lock contenders recorded.
#[derive(Default)]
struct Locks {
    /// "enter TOKEN cK" after each grant and "exit TOKEN" before each release, in the order
    /// they happened (one lock shared by every contender of this process).
    record: String,
    /// Fenced writes of the resource made inside a section: accepted, outcome unknown.
    fenced_ok: usize,
    fenced_unknown: usize,
    /// Tokens whose fenced write was refused as stale while their guard held the lock.
    stale: Vec<u64>,
    /// Guards that reported the lock lost before their section ended.
    lost: usize,
    /// Lock or unlock calls that failed (and were retried).
    errors: usize,
}

/// Writers and lock contenders, each with a session of its own, until told to stop.
struct Workload {
    stop: Arc<AtomicBool>,
    acks: Arc<AtomicUsize>,
    /// Grants per contender.
    grants: Arc<Vec<AtomicUsize>>,
    locks: Arc<Mutex<Locks>>,
    writers: JoinSet<Written>,
    contenders: JoinSet<()>,
}

impl Workload {
    async fn start(all: &str) -> Workload {
        let stop = Arc::new(AtomicBool::new(false));
        let acks = Arc::new(AtomicUsize::new(0));
        let grants = Arc::new((0..CONTENDERS).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
        let locks = Arc::new(Mutex::new(Locks::default()));
        let mut writers = JoinSet::new();
        for w in 0..WRITERS {
            let client = connect_serving(all, SESSION).await;
            writers.spawn(write_loop(w, client, stop.clone(), acks.clone()));
        }
        let mut contenders = JoinSet::new();
        for c in 0..CONTENDERS {
            let client = connect_serving(all, SESSION).await;
            contenders.spawn(lock_loop(c, client, stop.clone(), grants.clone(), locks.clone()));
        }
        Workload { stop, acks, grants, locks, writers, contenders }
    }

    fn acks(&self) -> usize {
        self.acks.load(Ordering::Relaxed)
    }

    fn grants(&self) -> Vec<usize> {
        self.grants.iter().map(|g| g.load(Ordering::Relaxed)).collect()
    }

    async fn stop(mut self) -> (Vec<Written>, Locks) {
        self.stop.store(true, Ordering::Relaxed);
        let mut written = Vec::new();
        while let Some(done) = within("the writers stop", DEADLINE * 2, self.writers.join_next()).await {
            written.push(done.expect("writer task"));
        }
        while let Some(done) = within("the lock contenders stop", DEADLINE * 2, self.contenders.join_next()).await {
            done.expect("lock contender task");
        }
        let locks = std::mem::take(&mut *self.locks.lock().expect("locks"));
        (written, locks)
    }
}

/// Creates `/t117-w/W-I` (data `c`) and, once acknowledged, sets it to `s-I` (version 0),
/// recording what was acknowledged.
async fn write_loop(w: usize, client: Client, stop: Arc<AtomicBool>, acks: Arc<AtomicUsize>) -> Written {
    let mut out = Written::default();
    for i in 0..MAX_WRITES {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let path = format!("{WRITES}/{w}-{i}");
        match timeout(DEADLINE, client.create(&path, b"c", CreateMode::Persistent)).await {
            Ok(Ok(_)) => {
                out.created.push(path.clone());
                acks.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(Error::ConnectionLoss)) | Err(_) => {
                out.unknown += 1;
                reconnected(&client).await;
                continue;
            }
            Ok(Err(_)) => {
                out.refused += 1;
                reconnected(&client).await;
                continue;
            }
        }
        let data = format!("s-{i}").into_bytes();
        match timeout(DEADLINE, client.set_data(&path, &data, Some(0))).await {
            Ok(Ok(_)) => {
                out.set.push((path, data));
                acks.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(Error::ConnectionLoss)) | Err(_) => {
                out.unknown += 1;
                reconnected(&client).await;
            }
            Ok(Err(_)) => {
                out.refused += 1;
                reconnected(&client).await;
            }
        }
    }
    let _ = timeout(DEADLINE, client.close()).await;
    out
}

/// Loops lock → "enter TOKEN cK" → a fenced write of the resource → "exit TOKEN" → unlock on
/// [`LOCK`], recording into `locks`.
async fn lock_loop(
    c: usize,
    client: Client,
    stop: Arc<AtomicBool>,
    grants: Arc<Vec<AtomicUsize>>,
    locks: Arc<Mutex<Locks>>,
) {
    let note = |f: &dyn Fn(&mut Locks)| f(&mut locks.lock().expect("locks"));
    while !stop.load(Ordering::Relaxed) {
        let guard = match timeout(DEADLINE, client.lock(LOCK)).await {
            Ok(Ok(guard)) => guard,
            Ok(Err(_)) | Err(_) => {
                note(&|l| l.errors += 1);
                reconnected(&client).await;
                continue;
            }
        };
        let token = guard.fencing_token();
        note(&|l| l.record.push_str(&format!("enter {token} c{c}\n")));
        grants[c].fetch_add(1, Ordering::Relaxed);
        let (fence, data) = (guard.fence(), token.to_string());
        match timeout(DEADLINE, client.set_data_fenced(&fence, RESOURCE, data.as_bytes(), None)).await {
            Ok(Ok(_)) => note(&|l| l.fenced_ok += 1),
            Ok(Err(Error::StaleFence)) if !guard.is_lost() => note(&|l| l.stale.push(token)),
            _ => note(&|l| l.fenced_unknown += 1),
        }
        let lost = guard.is_lost();
        note(&|l| {
            l.record.push_str(&format!("exit {token}\n"));
            l.lost += usize::from(lost);
        });
        if !matches!(timeout(DEADLINE, guard.unlock()).await, Ok(Ok(()))) {
            note(&|l| l.errors += 1);
            reconnected(&client).await;
        }
    }
    let _ = timeout(DEADLINE, client.close()).await;
}

/// Every acknowledged write reads back: each created node exists, each acknowledged set
/// holds its data, each write made through a restarted member exists.
async fn check_writes(reader: &Client, writes: &[Written], step_writes: &[String]) {
    let listed = answered("list the writes", || reader.get_children(WRITES)).await.expect("list the writes");
    let listed: BTreeSet<String> = listed.into_iter().map(|name| format!("{WRITES}/{name}")).collect();
    let mut missing: Vec<&String> = writes.iter().flat_map(|w| &w.created).filter(|p| !listed.contains(*p)).collect();
    missing.truncate(20);
    assert!(missing.is_empty(), "acknowledged creates missing (first 20): {missing:?}");
    let sets: Vec<&(String, Vec<u8>)> = writes.iter().flat_map(|w| &w.set).collect();
    for chunk in sets.chunks(200) {
        let reads = chunk.iter().map(|(path, _)| answered("read back a set", move || reader.get_data(path)));
        let reads = within("a chunk of reads", DEADLINE, futures_util::future::join_all(reads)).await;
        for ((path, data), read) in chunk.iter().zip(reads) {
            let (got, _) = read.unwrap_or_else(|e| panic!("read {path}: {e:?}"));
            assert_eq!(
                &got,
                data,
                "{path} holds {:?}, acknowledged {:?}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(data)
            );
        }
    }
    for path in step_writes {
        let stat = answered("exists", || reader.exists(path)).await.expect("exists");
        assert!(stat.is_some(), "{path}, acknowledged through a restarted member, is missing");
    }
    let (created, set) = (writes.iter().map(|w| w.created.len()).sum::<usize>(), sets.len());
    let (unknown, refused) =
        (writes.iter().map(|w| w.unknown).sum::<usize>(), writes.iter().map(|w| w.refused).sum::<usize>());
    println!(
        "writes: {created} acknowledged creates and {set} acknowledged sets all read back, and {} writes through \
         restarted members; {unknown} of unknown outcome, {refused} refused",
        step_writes.len()
    );
}
