//! Failover at the process level: ensemble members killed with kill -9 or stopped with
//! SIGSTOP while writers and sessions run. What was acknowledged must survive, nothing may
//! be applied twice, and sessions must outlive the fault.

use crate::harness::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;
use ward_client::{Client, CreateMode, Error, SessionState, Stat};
use ward_proto::Zxid;
use ward_testkit::{assert_same_tree, tree_digest, Ensemble};

/// The session timeout of writers and readers: the client's default.
const SESSION: Duration = Duration::from_secs(10);
/// Concurrent writers, each with a session of its own.
const WRITERS: usize = 8;
/// Writes per writer at most, so a fast machine does not pile up more nodes than the final
/// read-back can check quickly.
const MAX_WRITES: usize = 2500;
/// Writers stop by themselves after this long even if the test never tells them to.
const WRITE_TIME: Duration = Duration::from_secs(90);
/// Acknowledgements after a fault that show the ensemble serves writes again.
const RESUMED: usize = 100;
/// How long a writer waits for its client to reconnect before trying again: pacing only, so
/// a disconnected client does not spin on instant `ConnectionLoss`es.
const RETRY_PACE: Duration = Duration::from_millis(300);

/// What one writer saw, in the order it wrote.
struct Outcomes {
    writer: usize,
    /// Data values acknowledged (`Ok`), with the czxid the reply carried.
    acked: Vec<(String, Zxid)>,
    /// Data values whose outcome is unknown (`ConnectionLoss`, which includes writes never
    /// sent because the client was reconnecting): applied at most once.
    unknown: Vec<String>,
    /// Data values refused (`Unavailable` or another error): never applied.
    failed: Vec<(String, Error)>,
}

impl Outcomes {
    fn new(writer: usize) -> Outcomes {
        Outcomes { writer, acked: Vec::new(), unknown: Vec::new(), failed: Vec::new() }
    }

    /// Creates the node of `data` under `/w` through `client` and records the outcome;
    /// true when acknowledged. Bounded, so a write that never answers counts as unknown
    /// instead of hanging the test; Ward itself must answer or close the connection.
    async fn write(&mut self, client: &Client, data: String) -> bool {
        let create = client.create_with_stat("/w/n-", data.as_bytes(), CreateMode::PersistentSequential);
        match tokio::time::timeout(DEADLINE, create).await {
            Ok(Ok((_, stat))) => {
                self.acked.push((data, stat.czxid));
                return true;
            }
            Ok(Err(Error::ConnectionLoss)) | Err(_) => self.unknown.push(data),
            Ok(Err(e)) => self.failed.push((data, e)),
        }
        false
    }
}

/// [`WRITERS`] tasks creating `PersistentSequential` nodes under `/w` with unique data
/// `"{writer}-{i}"` until told to stop (or bounded out).
struct Writers {
    stop: Arc<AtomicBool>,
    acks: Arc<AtomicUsize>,
    tasks: JoinSet<Outcomes>,
}

impl Writers {
    /// Every writer gets the full connect string, so it moves to a survivor by itself.
    async fn start(connect_string: &str) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let acks = Arc::new(AtomicUsize::new(0));
        let mut tasks = JoinSet::new();
        for writer in 0..WRITERS {
            let client = session(connect_string, SESSION).await;
            tasks.spawn(write_loop(writer, client, stop.clone(), acks.clone()));
        }
        Writers { stop, acks, tasks }
    }

    fn acks(&self) -> usize {
        self.acks.load(Ordering::Relaxed)
    }

    /// Waits until `more` writes beyond the `since` acknowledged so far were acknowledged;
    /// returns how long that took.
    async fn wait_acks(&self, what: &str, since: usize, more: usize) -> Duration {
        let start = Instant::now();
        wait_until(what, DEADLINE, || async { self.acks() >= since + more }).await;
        start.elapsed()
    }

    async fn stop(mut self) -> Vec<Outcomes> {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        while let Some(done) = within("the writers stop", DEADLINE, self.tasks.join_next()).await {
            all.push(done.expect("writer task"));
        }
        all.sort_by_key(|o| o.writer);
        all
    }
}

async fn write_loop(writer: usize, client: Client, stop: Arc<AtomicBool>, acks: Arc<AtomicUsize>) -> Outcomes {
    let mut out = Outcomes::new(writer);
    let start = Instant::now();
    for i in 0..MAX_WRITES {
        if stop.load(Ordering::Relaxed) || start.elapsed() > WRITE_TIME {
            break;
        }
        if out.write(&client, format!("{writer}-{i}")).await {
            acks.fetch_add(1, Ordering::Relaxed);
        } else {
            reconnected(&client).await;
        }
    }
    let _ = tokio::time::timeout(DEADLINE, client.close()).await;
    out
}

/// Returns once `client` is connected, or after [`RETRY_PACE`]: pacing, not correctness.
async fn reconnected(client: &Client) {
    let mut states = client.state_changes();
    let _ = tokio::time::timeout(RETRY_PACE, states.wait_for(|s| *s == SessionState::Connected)).await;
    // A connected client whose write was refused: the next one need not follow at once.
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// A client of `addrs` once one of them takes handshakes: a member refuses them until a
/// leader has acknowledged it, and again when it has lost contact with the leader.
async fn session(addrs: &str, session_timeout: Duration) -> Client {
    wait_for(&format!("a member of {addrs} takes a session"), DEADLINE, || async {
        Client::builder(addrs)
            .connect_timeout(Duration::from_secs(5))
            .session_timeout(session_timeout)
            .connect()
            .await
            .ok()
    })
    .await
}

/// `Ensemble::start(3, ..)`, started again (at most twice) when a member could not bind its
/// peer port: the testkit probes free ports and releases them before the members bind them,
/// and on a busy machine another socket can take one in between. That is a race of the
/// harness, not a fault of the server; any other failure to start fails the test.
/// `--heartbeat-ms` and `--election-timeout-ms` well below their defaults: leases, grace
/// and elections all scale with them (docs/operations.md "Timing").
const SHORT_TIMEOUTS: &[&str] = &["--heartbeat-ms", "100", "--election-timeout-ms", "300"];

async fn start_ensemble() -> Ensemble {
    start_ensemble_with(&[]).await
}

async fn start_ensemble_with(flags: &'static [&'static str]) -> Ensemble {
    const TRIES: u32 = 3;
    for attempt in 1..=TRIES {
        let failure = match tokio::spawn(Ensemble::start(3, flags)).await {
            Ok(ensemble) => return ensemble,
            Err(e) => e.into_panic(),
        };
        let message = failure.downcast_ref::<String>().map_or("", String::as_str);
        if attempt == TRIES || !message.contains("Address already in use") {
            std::panic::resume_unwind(failure);
        }
        println!("ensemble start {attempt} lost a port race, starting another");
    }
    unreachable!("the last attempt returns or panics")
}

/// A member of `ids` that does not lead.
fn follower(ids: &[u64], leader: u64) -> u64 {
    *ids.iter().find(|id| **id != leader).expect("a follower")
}

/// Member ids other than `id`.
fn others(ensemble: &Ensemble, id: u64) -> Vec<u64> {
    ensemble.ids().into_iter().filter(|other| *other != id).collect()
}

/// Each writer's acknowledged czxids strictly increase: a writer sends its next write only
/// after the previous one was answered, so it is applied later, whichever leader applies it.
fn assert_zxids_increase(outcomes: &[Outcomes]) {
    for o in outcomes {
        for pair in o.acked.windows(2) {
            assert!(pair[0].1 < pair[1].1, "writer {}: zxid went back from {:?} to {:?}", o.writer, pair[0], pair[1]);
        }
    }
}

/// Checks `/w` as every member has it after `sync`: the same tree everywhere; every
/// acknowledged value exactly once (with the czxid its ack carried), none applied twice,
/// unknown ones at most once, refused ones never, and nothing nobody wrote. Prints counts.
async fn assert_writes_kept(ensemble: &Ensemble, outcomes: &[Outcomes]) {
    let mut digests = Vec::new();
    for id in ensemble.ids() {
        let reader = session(&ensemble.addr(id), SESSION).await;
        within("sync", DEADLINE, reader.sync("/")).await.expect("sync");
        let start = Instant::now();
        let digest = within("read the tree", DEADLINE, tree_digest(&reader)).await.expect("tree digest");
        println!("member {id}: read {} nodes in {:?}", digest.len(), start.elapsed());
        let _ = reader.close().await;
        digests.push((id, digest));
    }
    for (id, digest) in &digests[1..] {
        assert_same_tree(&digests[0].1, digest, &format!("member {} vs member {id}", digests[0].0));
    }
    let mut found: HashMap<String, Vec<(String, Stat)>> = HashMap::new();
    for (path, data, stat) in &digests[0].1 {
        if path.starts_with("/w/") {
            found.entry(String::from_utf8(data.clone()).expect("utf-8 data")).or_default().push((path.clone(), *stat));
        }
    }
    let twice: Vec<_> = found.iter().filter(|(_, nodes)| nodes.len() > 1).collect();
    assert!(twice.is_empty(), "applied more than once: {twice:?}");
    let (mut acked, mut unknown, mut unknown_applied, mut refused) = (0, 0, 0, BTreeMap::<String, usize>::new());
    for o in outcomes {
        for (data, czxid) in &o.acked {
            let nodes = found.remove(data).unwrap_or_else(|| panic!("acknowledged write {data} (czxid {czxid}) lost"));
            assert_eq!(nodes[0].1.czxid, *czxid, "{data}: its node is not the one acknowledged");
            acked += 1;
        }
        for data in &o.unknown {
            unknown += 1;
            unknown_applied += usize::from(found.remove(data).is_some());
        }
        for (data, e) in &o.failed {
            assert!(!found.contains_key(data), "{data} was refused with {e:?} but applied");
            *refused.entry(format!("{e:?}")).or_default() += 1;
        }
    }
    assert!(found.is_empty(), "nodes nobody wrote: {found:?}");
    println!(
        "writes: {acked} acknowledged (all present once), {unknown} unknown ({unknown_applied} applied), refused: {refused:?}"
    );
}

/// The G14 failover run: 8 writers; `pick(ids, leader)` picks the member to kill -9 while they
/// write; writes must resume through the survivors, then the victim is restarted.
async fn kill_one_while_writing(pick: impl Fn(&[u64], u64) -> u64, flags: &'static [&'static str]) {
    let mut ensemble = start_ensemble_with(flags).await;
    let setup = session(&ensemble.connect_string(), SESSION).await;
    setup.create("/w", b"", CreateMode::Persistent).await.expect("create /w");
    let leader = ensemble.leader(&[]).await;
    let victim = pick(&ensemble.ids(), leader);
    let writers = Writers::start(&ensemble.connect_string()).await;
    writers.wait_acks("the writers are under way", 0, RESUMED).await;

    ensemble.member(victim).kill9_now();
    // Counted once the victim is reaped: every later acknowledgement came through a survivor.
    let at_kill = writers.acks();
    let resumed = writers.wait_acks("writes resume through the survivors", at_kill, RESUMED).await;
    let new_leader = ensemble.leader(&others(&ensemble, victim)).await;
    println!(
        "killed member {victim} (leader was {leader}) after {at_kill} acks; {RESUMED} more acks {resumed:?} after the kill; leader now {new_leader}"
    );

    ensemble.member(victim).restart_now();
    let at_restart = writers.acks();
    writers.wait_acks("writes go on after the restart", at_restart, RESUMED).await;
    let outcomes = writers.stop().await;
    for id in ensemble.ids() {
        ensemble.member(id).assert_running();
    }
    assert_zxids_increase(&outcomes);
    assert_writes_kept(&ensemble, &outcomes).await;
}

// G14: kill -9 of the leader while 8 writers run loses no acknowledged write, applies none
// twice, and zxids seen by each writer keep growing across the two leaders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_kill_with_eight_writers_keeps_every_acknowledged_write() {
    bounded(kill_one_while_writing(|_, leader| leader, &[])).await
}

// G14, G16: with heartbeats and election timeouts well below their defaults (a faster
// failover), a leader kill still loses no acknowledged write and applies none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_kill_under_short_timeouts_keeps_every_acknowledged_write() {
    bounded(kill_one_while_writing(|_, leader| leader, SHORT_TIMEOUTS)).await
}

// G14: kill -9 of a follower while 8 writers run (some of them through it) loses no
// acknowledged write and applies none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_kill_with_eight_writers_keeps_every_acknowledged_write() {
    bounded(kill_one_while_writing(follower, &[])).await
}

/// Writes acknowledged before the kills, and again after the restart.
const BEFORE: usize = 20;
/// Writes attempted while only the survivor runs.
const MINORITY_WRITES: usize = 5;

/// The G14 no-majority run: kill -9 every member but the one `pick_survivor(ids, leader)`; writes sent to the survivor
/// meanwhile are never acknowledged; after both restart, writes resume and everything
/// acknowledged before the kills is there.
async fn kill_two_then_restart(pick_survivor: impl Fn(&[u64], u64) -> u64) {
    let mut ensemble = start_ensemble().await;
    let leader = ensemble.leader(&[]).await;
    let survivor = pick_survivor(&ensemble.ids(), leader);
    let writer = session(&ensemble.connect_string(), SESSION).await;
    writer.create("/w", b"", CreateMode::Persistent).await.expect("create /w");
    let mut ledger = Outcomes::new(0);
    for i in 0..BEFORE {
        assert!(ledger.write(&writer, format!("0-{i}")).await, "a write before the kills: {:?}", ledger.failed);
    }
    // Connected before the kills: once alone, the survivor refuses new sessions.
    let lone = session(&ensemble.addr(survivor), SESSION).await;
    within("sync through the survivor", DEADLINE, lone.sync("/")).await.expect("sync through the survivor");

    let killed = others(&ensemble, survivor);
    for id in &killed {
        ensemble.member(*id).kill9_now();
    }
    let killed_at = Instant::now();
    // Pipelined on one session at once, so they reach the survivor before it notices it is
    // alone (and then closes its client connections).
    let mut attempts = JoinSet::new();
    for i in 0..MINORITY_WRITES {
        let lone = lone.clone();
        attempts.spawn(async move {
            let data = format!("1-{i}");
            let result = lone.create_with_stat("/w/n-", data.as_bytes(), CreateMode::PersistentSequential).await;
            (data, result, Instant::now())
        });
    }
    // Each attempt must end: answered with an error, or failed by the connection closing.
    let mut minority = Vec::new();
    while let Some(done) = within("the writes without a majority end", DEADLINE, attempts.join_next()).await {
        minority.push(done.expect("attempt task"));
    }
    ensemble.member(survivor).assert_running();
    for (data, result, at) in &minority {
        println!("without a majority: {data} -> {result:?} after {:?}", *at - killed_at);
        assert!(result.is_err(), "{data} acknowledged while only member {survivor} ran: {result:?}");
    }
    let mut lonely = Outcomes::new(1);
    for (data, result, _) in minority {
        match result {
            Err(Error::ConnectionLoss) => lonely.unknown.push(data),
            Err(e) => lonely.failed.push((data, e)),
            Ok(_) => unreachable!("checked above"),
        }
    }

    for id in &killed {
        ensemble.member(*id).restart_now();
    }
    let restarted_at = Instant::now();
    let after = session(&ensemble.connect_string(), SESSION).await;
    // A write may still meet an election among the restarted members; each attempt has a
    // value of its own, so every value's outcome stays known.
    for i in BEFORE..BEFORE * 3 {
        if ledger.acked.len() == BEFORE * 2 {
            break;
        }
        if !ledger.write(&after, format!("0-{i}")).await {
            reconnected(&after).await;
        }
    }
    assert_eq!(ledger.acked.len(), BEFORE * 2, "writes do not resume: {:?} {:?}", ledger.unknown, ledger.failed);
    println!(
        "survivor {survivor} (leader was {leader}); {BEFORE} writes acknowledged {:?} after the restart",
        restarted_at.elapsed()
    );
    assert_zxids_increase(std::slice::from_ref(&ledger));
    assert_writes_kept(&ensemble, &[ledger, lonely]).await;
}

// G14: with the leader and a follower killed, the surviving follower acknowledges no write;
// after both restart, writes resume and every earlier acknowledged write is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_three_killed_with_the_leader_acknowledge_nothing_until_restarted() {
    bounded(kill_two_then_restart(follower)).await
}

// G14: with both followers killed, the leader left alone acknowledges no write (it cannot
// commit); after both restart, writes resume and every earlier acknowledged write is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_three_killed_leaving_the_leader_acknowledge_nothing_until_restarted() {
    bounded(kill_two_then_restart(|_, leader| leader)).await
}

/// Sessions in the G15 runs, spread over the members.
const SESSIONS: usize = 100;
/// A new leader's grace on top of every session's fresh timeout.
const GRACE: Duration = Duration::from_secs(2);

/// [`SESSIONS`] clients, each given every member's address (the client starts from a random
/// one, which spreads them: a member serves none of 100 with odds (2/3)^100), each holding
/// the ephemeral `/s/{k}`.
async fn open_sessions(ensemble: &Ensemble, timeout: Duration) -> Vec<Client> {
    let setup = session(&ensemble.connect_string(), SESSION).await;
    setup.create("/s", b"", CreateMode::Persistent).await.expect("create /s");
    let mut opening = JoinSet::new();
    for k in 0..SESSIONS {
        let addrs = ensemble.connect_string();
        opening.spawn(async move {
            let client = session(&addrs, timeout).await;
            let path = format!("/s/{k}");
            within("create an ephemeral", DEADLINE, client.create(&path, b"", CreateMode::Ephemeral))
                .await
                .unwrap_or_else(|e| panic!("create {path}: {e:?}"));
            (k, client)
        });
    }
    let mut clients = Vec::new();
    while let Some(opened) = opening.join_next().await {
        clients.push(opened.expect("open a session"));
    }
    clients.sort_by_key(|(k, _)| *k);
    let _ = setup.close().await;
    clients.into_iter().map(|(_, c)| c).collect()
}

/// Waits until every client is connected and its member answers it through the leader
/// (`sync`); returns how long that took.
async fn all_answering(clients: &[Client]) -> Duration {
    let start = Instant::now();
    let mut waits = JoinSet::new();
    for (k, client) in clients.iter().enumerate() {
        let client = client.clone();
        waits.spawn(async move {
            wait_until(&format!("session {k} is connected and answered"), DEADLINE, || async {
                client.state() == SessionState::Connected && client.sync("/").await.is_ok()
            })
            .await
        });
    }
    while let Some(done) = waits.join_next().await {
        done.expect("wait for a session");
    }
    start.elapsed()
}

/// Counts the clients that lose their connection from now on (a figure to print: a quick
/// reconnect may go unseen). The counting stops when the returned set is dropped.
fn count_disconnects(clients: &[Client]) -> (Arc<AtomicUsize>, JoinSet<()>) {
    let count = Arc::new(AtomicUsize::new(0));
    let mut watchers = JoinSet::new();
    for client in clients {
        let (mut states, count) = (client.state_changes(), count.clone());
        watchers.spawn(async move {
            if states.wait_for(|s| *s != SessionState::Connected).await.is_ok() {
                count.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    (count, watchers)
}

/// No session expired: every client is still connected under its first session (a client
/// whose session ended is `Expired` for good), and every ephemeral is there, owned by it.
async fn assert_sessions_alive(ensemble: &Ensemble, clients: &[Client]) {
    let expired: Vec<usize> = (0..clients.len()).filter(|k| clients[*k].state() == SessionState::Expired).collect();
    assert!(expired.is_empty(), "sessions expired: {expired:?}");
    let observer = session(&ensemble.connect_string(), SESSION).await;
    within("sync", DEADLINE, observer.sync("/")).await.expect("sync");
    let children = within("list /s", DEADLINE, observer.get_children("/s")).await.expect("list /s");
    assert_eq!(children.len(), clients.len(), "ephemerals left: {children:?}");
    for (k, client) in clients.iter().enumerate() {
        let path = format!("/s/{k}");
        let stat = within("exists", DEADLINE, observer.exists(&path)).await.expect("exists");
        let owner = stat.unwrap_or_else(|| panic!("{path} is gone")).ephemeral_owner;
        assert_eq!(owner, Some(client.session_id()), "{path} is owned by another session");
    }
    let _ = observer.close().await;
}

/// Lets every session run until `fault_at + timeout + GRACE` and a margin: a session whose
/// heartbeats stopped counting at the fault would have expired by then. This waits out the
/// window in which a lost session would show; it decides no race.
async fn outlast_timeout(fault_at: Instant, timeout: Duration) {
    tokio::time::sleep_until((fault_at + timeout + GRACE + Duration::from_secs(1)).into()).await;
}

// G15: 100 sessions with ephemerals, spread over the members, survive kill -9 of the leader:
// each client resumes its session on a survivor, the new leader gives every session a
// fresh timeout, and no ephemeral is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_sessions_survive_a_leader_kill() {
    bounded(sessions_survive_a_leader_kill(&[])).await
}

// G15, G16: the same under short heartbeats and election timeouts, where the new leader's
// grace (openraft's lease) is shorter too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_sessions_survive_a_leader_kill_under_short_timeouts() {
    bounded(sessions_survive_a_leader_kill(SHORT_TIMEOUTS)).await
}

async fn sessions_survive_a_leader_kill(flags: &'static [&'static str]) {
    let timeout = Duration::from_secs(10);
    let mut ensemble = start_ensemble_with(flags).await;
    let clients = open_sessions(&ensemble, timeout).await;
    let leader = ensemble.leader(&[]).await;
    let (moved, _watchers) = count_disconnects(&clients);
    ensemble.member(leader).kill9_now();
    let killed_at = Instant::now();
    let new_leader = ensemble.leader(&others(&ensemble, leader)).await;
    let elected = killed_at.elapsed();
    let answering = all_answering(&clients).await;
    println!(
        "killed leader {leader}: member {new_leader} leads after {elected:?}; all {SESSIONS} sessions answered {answering:?} after that, {} of them after losing their connection",
        moved.load(Ordering::Relaxed)
    );
    assert_sessions_alive(&ensemble, &clients).await;
    outlast_timeout(killed_at, timeout).await;
    all_answering(&clients).await;
    assert_sessions_alive(&ensemble, &clients).await;
}

/// The G15 pause run: 100 sessions of `timeout`; `pick(leader)` is SIGSTOPped for 3/4 of
/// the timeout (the fault's duration, a deliberate sleep), then resumed.
async fn pause_one_member(pick: impl Fn(&[u64], u64) -> u64) {
    let timeout = Duration::from_secs(8);
    let pause = timeout * 3 / 4;
    let mut ensemble = start_ensemble().await;
    let clients = open_sessions(&ensemble, timeout).await;
    let leader = ensemble.leader(&[]).await;
    let paused = pick(&ensemble.ids(), leader);
    let (moved, _watchers) = count_disconnects(&clients);
    ensemble.member(paused).pause();
    let paused_at = Instant::now();
    tokio::time::sleep(pause).await;
    ensemble.member(paused).resume();
    let answering = all_answering(&clients).await;
    let now_leader = ensemble.leader(&[]).await;
    println!(
        "member {paused} (leader was {leader}) paused {pause:?}; all {SESSIONS} sessions answered {answering:?} after the resume, {} of them after losing their connection; leader now {now_leader}",
        moved.load(Ordering::Relaxed)
    );
    assert_sessions_alive(&ensemble, &clients).await;
    outlast_timeout(paused_at, timeout).await;
    all_answering(&clients).await;
    assert_sessions_alive(&ensemble, &clients).await;
    ensemble.member(paused).assert_running();
}

// G15: a follower stopped (SIGSTOP) for 3/4 of the session timeout, while serving some of
// 100 sessions, expires none of them: its clients resume when it runs again or on another
// member, and every ephemeral stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_sessions_survive_a_paused_follower() {
    bounded(pause_one_member(follower)).await
}

// G15: the leader stopped (SIGSTOP) for 3/4 of the session timeout loses the lead; the new
// leader gives every session a fresh timeout, so none of 100 expires and every ephemeral
// stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_sessions_survive_a_paused_leader() {
    bounded(pause_one_member(|_, leader| leader)).await
}
