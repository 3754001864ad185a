//! Linearizable registers on an ensemble: clients on every member read (after `sync`),
//! write and compare-and-set a few keys while the leader is killed and members are cut off,
//! and `ward-check` finds a linearization of everything they saw.

use crate::harness::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::time::{error::Elapsed, timeout};
use ward_check::{check, Clock, History, Node, Op, Outcome};
use ward_client::{Client, CreateMode, Error, SessionState, Stat};
use ward_testkit::{seed, serial, Ensemble, Rng};

const KEYS: [&str; 3] = ["/g17-a", "/g17-b", "/g17-c"];
const INITIAL: &[u8] = b"init";
const WORKERS: u64 = 6;
/// One call's bound: past it the outcome is unknown. Generous, because a write forwarded to
/// a leader that has just been cut off waits out the member's commit timeout (10 s).
const OP_LIMIT: Duration = Duration::from_secs(15);
/// The clients run at least this long, and on until the nemesis is done.
const MIN_RUN: Duration = Duration::from_secs(20);
/// Steps the search may take per key: a linearizable key of a few thousand operations at
/// this concurrency takes a few times its size.
const BUDGET: u64 = 50_000_000;

/// One operation as a client saw it; `outcome` is `None` when it is unknown.
struct Done {
    process: u64,
    key: &'static str,
    op: Op,
    invoked: u64,
    outcome: Option<(Outcome, u64)>,
}

/// What the clients share: the clock, when to stop, and how many operations had a known
/// outcome (the nemesis waits for it to grow under each fault).
#[derive(Clone)]
struct Shared {
    clock: Clock,
    stop: Arc<AtomicBool>,
    known: Arc<AtomicU64>,
}

/// What a write's result says about it.
enum Fate {
    Known(Outcome),
    /// Refused before it was logged (`Unavailable`): it never happened.
    NotApplied,
    /// Connection lost, session gone or no answer in time: it may take effect at any later
    /// moment, or never.
    Unknown,
}

fn fate(result: Result<Result<Stat, Error>, Elapsed>) -> Fate {
    match result {
        Ok(Ok(stat)) => Fate::Known(Outcome::Written { version: version(&stat) }),
        Ok(Err(Error::BadVersion)) => Fate::Known(Outcome::BadVersion),
        Ok(Err(Error::NoNode)) => Fate::Known(Outcome::NoNode),
        Ok(Err(Error::Unavailable)) => Fate::NotApplied,
        Ok(Err(_)) | Err(_) => Fate::Unknown,
    }
}

fn version(stat: &Stat) -> u64 {
    u64::try_from(stat.version).unwrap_or_else(|_| panic!("negative version in {stat:?}"))
}

/// One client process: random synced reads, writes and compare-and-sets on [`KEYS`] until
/// told to stop. Every value it writes is its own (`p3-17`), so a read names its write.
struct Worker {
    process: u64,
    addrs: String,
    client: Client,
    rng: Rng,
    /// The version this worker last saw of each key: what its next CAS expects.
    seen: [u64; KEYS.len()],
    writes: u64,
    done: Vec<Done>,
    /// Sessions this worker had to replace (expired or closed under it).
    sessions_lost: u32,
}

impl Worker {
    async fn new(process: u64, addrs: String, seed: u64) -> Worker {
        let client = connect_with(&addrs, Duration::from_secs(10)).await;
        Worker {
            process,
            addrs,
            client,
            rng: Rng::new(seed),
            seen: [0; KEYS.len()],
            writes: 0,
            done: Vec::new(),
            sessions_lost: 0,
        }
    }

    async fn run(mut self, shared: Shared) -> Worker {
        while !shared.stop.load(Ordering::Relaxed) {
            let k = self.rng.below(KEYS.len() as u64) as usize;
            let known = match self.rng.below(10) {
                0..=3 => self.read(k, &shared.clock).await,
                4..=6 => self.write(k, None, &shared.clock).await,
                _ => self.write(k, Some(self.seen[k]), &shared.clock).await,
            };
            if known {
                shared.known.fetch_add(1, Ordering::Relaxed);
            } else {
                self.recover().await;
            }
        }
        self
    }

    /// A read preceded by `sync`, timed from before the sync: the read must see every write
    /// completed before that moment. A read that fails tells nothing and is left out.
    async fn read(&mut self, k: usize, clock: &Clock) -> bool {
        let invoked = clock.now();
        if !matches!(timeout(OP_LIMIT, self.client.sync(KEYS[k])).await, Ok(Ok(()))) {
            return false;
        }
        let Ok(Ok((value, stat))) = timeout(OP_LIMIT, self.client.get_data(KEYS[k])).await else { return false };
        let at = clock.now();
        self.seen[k] = version(&stat);
        let outcome = Outcome::Value(Node { value, version: version(&stat) });
        self.done.push(Done {
            process: self.process,
            key: KEYS[k],
            op: Op::Read,
            invoked,
            outcome: Some((outcome, at)),
        });
        true
    }

    /// An unconditional write, or a compare-and-set expecting version `expected`.
    async fn write(&mut self, k: usize, expected: Option<u64>, clock: &Clock) -> bool {
        self.writes += 1;
        let value = format!("p{}-{}", self.process, self.writes).into_bytes();
        let op = match expected {
            None => Op::Write { value: value.clone() },
            Some(expected_version) => Op::Cas { expected_version, value: value.clone() },
        };
        let expected = expected.map(|v| i32::try_from(v).expect("a version fits ZooKeeper's i32"));
        let invoked = clock.now();
        let result = timeout(OP_LIMIT, self.client.set_data(KEYS[k], &value, expected)).await;
        let at = clock.now();
        let (process, key) = (self.process, KEYS[k]);
        match fate(result) {
            Fate::Known(outcome) => {
                if let Outcome::Written { version } = outcome {
                    self.seen[k] = version;
                }
                self.done.push(Done { process, key, op, invoked, outcome: Some((outcome, at)) });
                true
            }
            Fate::NotApplied => false,
            Fate::Unknown => {
                self.done.push(Done { process, key, op, invoked, outcome: None });
                false
            }
        }
    }

    /// After a failure: wait (bounded) for the client to be connected again rather than
    /// spin on requests that fail at once while it reconnects; replace a session that ended.
    async fn recover(&mut self) {
        let mut states = self.client.state_changes();
        let state = *states.borrow_and_update();
        if state == SessionState::Connected {
            // Refused by a member without a leader yet: give the election a moment.
            tokio::time::sleep(Duration::from_millis(50)).await;
            return;
        }
        let connected = timeout(DEADLINE, async {
            loop {
                let now = *states.borrow_and_update();
                if now == SessionState::Connected || now.is_terminal() || states.changed().await.is_err() {
                    return now;
                }
            }
        })
        .await;
        match connected {
            Ok(SessionState::Connected) => {}
            Ok(ended) => {
                eprintln!(
                    "p{}: session {:?} ended ({ended:?}); opening another",
                    self.process,
                    self.client.session_id()
                );
                self.sessions_lost += 1;
                self.client = connect_with(&self.addrs, Duration::from_secs(10)).await;
            }
            Err(_) => panic!("p{}: client not reconnected within {DEADLINE:?}", self.process),
        }
    }
}

/// Creates [`KEYS`] holding [`INITIAL`] (version 0) and returns a history that starts there.
async fn prepare_keys(addrs: &str) -> History {
    let client = connect(addrs).await;
    let mut history = History::new();
    for key in KEYS {
        client.create(key, INITIAL, CreateMode::Persistent).await.expect("create a key");
        history.set_initial(key, Some(Node { value: INITIAL.to_vec(), version: 0 }));
    }
    client.close().await.expect("close");
    history
}

/// Starts [`WORKERS`] clients, each given every member's address, their choices drawn from
/// `run_seed`.
async fn start_workers(addrs: &str, shared: &Shared, run_seed: u64) -> Vec<tokio::task::JoinHandle<Worker>> {
    let mut tasks = Vec::new();
    for process in 1..=WORKERS {
        let worker = Worker::new(process, addrs.to_string(), run_seed.wrapping_add(process)).await;
        tasks.push(tokio::spawn(worker.run(shared.clone())));
    }
    tasks
}

/// Stops the workers and records what they saw.
async fn finish(tasks: Vec<tokio::task::JoinHandle<Worker>>, shared: &Shared, history: &mut History) -> Vec<Worker> {
    shared.stop.store(true, Ordering::Relaxed);
    let mut workers = Vec::new();
    for task in tasks {
        // Each is at most one call (OP_LIMIT) or one reconnect (DEADLINE) from stopping.
        let worker = within("a worker stops", DEADLINE + OP_LIMIT, task).await.expect("worker task");
        for d in &worker.done {
            let id = history.invoke(d.process, d.key, d.op.clone(), d.invoked);
            if let Some((outcome, at)) = &d.outcome {
                history.complete(id, outcome.clone(), *at).expect("a well-formed history");
            }
        }
        workers.push(worker);
    }
    workers
}

/// Figures of a run, printed with the checker's report.
fn summary(workers: &[Worker]) -> String {
    let all = workers.iter().flat_map(|w| &w.done);
    let (mut reads, mut written, mut bad_version, mut unknown) = (0, 0, 0, 0);
    for d in all {
        match &d.outcome {
            None => unknown += 1,
            Some((Outcome::Value(_), _)) => reads += 1,
            Some((Outcome::Written { .. }, _)) => written += 1,
            Some((Outcome::BadVersion, _)) => bad_version += 1,
            Some(_) => {}
        }
    }
    let lost: u32 = workers.iter().map(|w| w.sessions_lost).sum();
    format!(
        "{reads} synced reads, {written} writes acknowledged, {bad_version} CAS refused (bad version), \
         {unknown} writes of unknown outcome, {lost} sessions replaced"
    )
}

/// Waits until the clients have completed `n` more operations: the ensemble serves.
async fn progressed(known: &AtomicU64, n: u64, while_what: &str) {
    let from = known.load(Ordering::Relaxed);
    wait_until(&format!("{n} operations complete {while_what}"), DEADLINE, || async {
        known.load(Ordering::Relaxed) >= from + n
    })
    .await;
}

/// True if a client of member `addr` alone gets a `sync` through: the member is in
/// contact with a leader that has a quorum.
async fn syncs_through(addr: &str) -> bool {
    let connecting = Client::builder(addr).connect_timeout(Duration::from_secs(2)).connect();
    let Ok(Ok(client)) = timeout(Duration::from_secs(5), connecting).await else { return false };
    let synced = matches!(timeout(Duration::from_secs(5), client.sync("/")).await, Ok(Ok(())));
    let _ = timeout(Duration::from_secs(5), client.close()).await;
    synced
}

async fn rejoined(ensemble: &Ensemble, id: u64) {
    let addr = ensemble.addr(id);
    wait_until(&format!("member {id} serves synced reads again"), DEADLINE, || syncs_through(&addr)).await;
}

/// Kills the leader with kill -9, waits for another and for the clients to go on, then
/// restarts it and waits until it serves again (so the next fault leaves a majority).
async fn kill_leader(ensemble: &mut Ensemble, known: &AtomicU64) -> String {
    let leader = ensemble.leader(&[]).await;
    let at = Instant::now();
    ensemble.member(leader).kill9_now();
    let rest: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
    let next = ensemble.leader(&rest).await;
    let elected = at.elapsed();
    progressed(known, 20, &format!("with leader {leader} killed")).await;
    ensemble.member(leader).restart_now();
    rejoined(ensemble, leader).await;
    format!(
        "kill -9 leader {leader}: {next} answers as leader after {elected:?}; {leader} back after {:?}",
        at.elapsed()
    )
}

/// Cuts member `id` off from its peers (its clients still reach it), waits for a leader
/// among the others and for the clients to go on, then heals.
async fn isolate(ensemble: &mut Ensemble, id: u64, known: &AtomicU64) -> String {
    let at = Instant::now();
    ensemble.isolate(id);
    let rest: Vec<u64> = ensemble.ids().into_iter().filter(|&m| m != id).collect();
    let leader = ensemble.leader(&rest).await;
    let elected = at.elapsed();
    progressed(known, 20, &format!("with member {id} cut off")).await;
    ensemble.heal();
    rejoined(ensemble, id).await;
    format!(
        "isolate {id}: {leader} answers as leader of the rest after {elected:?}; healed, {id} back after {:?}",
        at.elapsed()
    )
}

/// The faults: three rounds of a leader kill and an isolation (of the leader, then a
/// follower, then the leader again).
async fn nemesis(ensemble: &mut Ensemble, known: &AtomicU64, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut log = Vec::new();
    for round in 0..3 {
        log.push(kill_leader(ensemble, known).await);
        let leader = ensemble.leader(&[]).await;
        let victim = match round % 2 {
            0 => leader,
            _ => {
                let followers: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
                followers[rng.below(followers.len() as u64) as usize]
            }
        };
        log.push(isolate(ensemble, victim, known).await);
    }
    log
}

// G17: reads preceded by `sync`, writes and compare-and-sets on three keys, from six
// clients spread over a three-member ensemble, stay linearizable while the leader is killed
// with kill -9 (and restarted) and members, the leader among them, are cut off from their
// peers and healed, three times each. Writes whose outcome is unknown are left open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synced_reads_writes_and_cas_stay_linearizable_through_kills_and_partitions() {
    let _serial = serial().await;
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        ensemble.leader(&[]).await;
        let addrs = ensemble.connect_string();
        let mut history = prepare_keys(&addrs).await;
        let shared = Shared { clock: Clock::start(), stop: Arc::default(), known: Arc::default() };
        let run_seed = seed();
        eprintln!("clients and faults: WARD_TEST_SEED={run_seed}");
        let started = Instant::now();
        let tasks = start_workers(&addrs, &shared, run_seed).await;
        let faults = nemesis(&mut ensemble, &shared.known, run_seed).await;
        let more = MIN_RUN.saturating_sub(started.elapsed());
        // The faults are over; clients keep going until the minimum run is done, on a
        // healthy ensemble, so that every key is also read after the last fault.
        progressed(&shared.known, 20, "after the faults").await;
        tokio::time::sleep(more).await;
        let workers = finish(tasks, &shared, &mut history).await;
        let ran = started.elapsed();

        let checking = Instant::now();
        let report = check(&history, BUDGET);
        println!("{}", faults.join("\n"));
        println!("{ran:?} of clients: {}", summary(&workers));
        println!("checked in {:?}:\n{report}", checking.elapsed());
        assert_eq!(report.violations().count(), 0, "G17 violated:\n{report}");
        assert!(report.is_linearizable(), "the checker could not decide within its budget:\n{report}");
        let synced_reads = workers.iter().flat_map(|w| &w.done).filter(|d| d.op == Op::Read).count();
        assert!(synced_reads > 0 && report.keys.iter().all(|k| k.completed > 0), "{report}");
    })
    .await
}

/// The read that a stale member would serve: `key` as it was before its last completed
/// write (at an older completed write, or its initial value), read after every operation of
/// the history has returned.
fn stale_read(history: &History, key: &str) -> (Node, u64) {
    let mut written: Vec<Node> = history
        .records()
        .iter()
        .filter(|r| r.key == key)
        .filter_map(|r| match (&r.op, &r.completion) {
            (Op::Write { value } | Op::Cas { value, .. }, Some(c)) => match c.outcome {
                Outcome::Written { version } => Some(Node { value: value.clone(), version }),
                _ => None,
            },
            _ => None,
        })
        .collect();
    written.sort_by_key(|n| n.version);
    assert!(!written.is_empty(), "no completed write on {key}");
    written.pop();
    let stale = written.pop().unwrap_or(Node { value: INITIAL.to_vec(), version: 0 });
    let end = history.records().iter().filter_map(|r| r.completion.as_ref().map(|c| c.at)).max().unwrap_or(0);
    (stale, end)
}

// G17, the checker's side: the history of a real run (three members, no faults) is
// linearizable, and the same history with one stale read added (after every write has
// returned, a read of the value before the last write) is rejected, naming that read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_rejects_a_real_history_with_one_stale_read() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        ensemble.leader(&[]).await;
        let addrs = ensemble.connect_string();
        let mut history = prepare_keys(&addrs).await;
        let shared = Shared { clock: Clock::start(), stop: Arc::default(), known: Arc::default() };
        let run_seed = seed();
        eprintln!("clients: WARD_TEST_SEED={run_seed}");
        let tasks = start_workers(&addrs, &shared, run_seed).await;
        progressed(&shared.known, 300, "on a healthy ensemble").await;
        let workers = finish(tasks, &shared, &mut history).await;
        println!("real run: {}", summary(&workers));
        let real = check(&history, BUDGET);
        println!("real history:\n{real}");
        assert!(real.is_linearizable(), "G17 violated by the real run:\n{real}");

        let key = KEYS[0];
        let (stale, end) = stale_read(&history, key);
        let read = history.invoke(99, key, Op::Read, end + 1);
        history.complete(read, Outcome::Value(stale.clone()), end + 2).expect("a well-formed read");
        let doctored = check(&history, BUDGET);
        println!("with a stale read of {stale:?}:\n{doctored}");
        assert!(!doctored.is_linearizable(), "the stale read went unnoticed");
        let violation = doctored.violations().next().expect("a violation, not an unknown verdict");
        assert_eq!(violation.blocked, Some(read), "the violation names the stale read:\n{}", violation.explanation);
        for other in KEYS.iter().filter(|k| **k != key) {
            assert_eq!(doctored.get(other).map(|k| &k.verdict), Some(&ward_check::Verdict::Linearizable));
        }
    })
    .await
}
