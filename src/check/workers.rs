//! The workload clients of a run: started together, stopped together, and what each
//! workload came to.

use super::shared::{Shared, OP_LIMIT, SETTLE};
use super::{locks, registers, sequential, sessions, watches, CheckError, Workload};
use std::sync::Arc;
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// Register clients that read, write and compare-and-set (on any member); then one per
/// member that only reads, from that member alone.
const REGISTER_WORKERS: u64 = 4;
const LOCK_WORKERS: u64 = 3;
const SESSION_WORKERS: u64 = 2;
const WATCHERS: u64 = 2;
const SEQUENCE_WORKERS: u64 = 2;

/// Each workload's processes are numbered from its own base, so that a process number says
/// which workload it ran.
pub const LOCK_BASE: u64 = 100;
pub const SESSION_BASE: u64 = 200;
pub const WATCH_BASE: u64 = 300;
pub const SEQUENCE_BASE: u64 = 400;

/// Where a run's nodes live, under its root.
pub struct Paths {
    pub keys: Arc<[String]>,
    pub lock_dir: String,
    pub counter: String,
    pub ephemerals: String,
    pub watch_keys: Arc<[String]>,
    pub sequence: String,
}

impl Paths {
    pub fn new(root: &str) -> Paths {
        Paths {
            keys: (0..3).map(|i| format!("{root}/reg-{i}")).collect(),
            lock_dir: format!("{root}/lock"),
            counter: format!("{root}/counter"),
            ephemerals: format!("{root}/ephemerals"),
            watch_keys: (0..2).map(|i| format!("{root}/watched-{i}")).collect(),
            sequence: format!("{root}/sequence"),
        }
    }
}

/// The running clients.
#[derive(Default)]
pub struct Running {
    registers: Vec<JoinHandle<registers::Worker>>,
    locks: Vec<JoinHandle<locks::Worker>>,
    sessions: Vec<JoinHandle<sessions::Worker>>,
    writers: Vec<JoinHandle<watches::Writer>>,
    watchers: Vec<JoinHandle<watches::Watcher>>,
    sequence: Vec<JoinHandle<sequential::Worker>>,
}

/// What the clients recorded, once stopped.
#[derive(Default)]
pub struct Done {
    pub ops: Vec<registers::RegisterOp>,
    pub holds: Vec<locks::Hold>,
    pub ephemerals: Vec<sessions::Ephemeral>,
    pub watch_writes: Vec<watches::WatchWrite>,
    pub armed: Vec<watches::Armed>,
    pub creates: Vec<sequential::SeqCreate>,
    /// One line of figures per workload run.
    pub summaries: Vec<String>,
}

/// Starts the clients of `workloads` against `addrs` (each of the `members` alone, for the
/// readers).
pub async fn start(
    workloads: &[Workload],
    addrs: &str,
    members: &[String],
    paths: &Paths,
    seed: u64,
    shared: &Shared,
) -> Result<Running, CheckError> {
    let on = |w| workloads.contains(&w);
    let mut r = Running::default();
    let seeded = |p: u64| seed.wrapping_add(p);
    for p in (1..=REGISTER_WORKERS).filter(|_| on(Workload::Registers)) {
        let worker = registers::Worker::new(p, addrs, Arc::clone(&paths.keys), seeded(p)).await?;
        r.registers.push(tokio::spawn(worker.run(shared.clone())));
    }
    // Every member's answers to `sync` are read at once, whichever member a fault hits.
    for (p, member) in (REGISTER_WORKERS + 1..).zip(members).filter(|_| on(Workload::Registers)) {
        let worker = registers::Worker::new(p, member, Arc::clone(&paths.keys), seeded(p)).await?;
        r.registers.push(tokio::spawn(worker.reading_only().run(shared.clone())));
    }
    for p in (LOCK_BASE + 1..=LOCK_BASE + LOCK_WORKERS).filter(|_| on(Workload::Locks)) {
        let worker = locks::Worker::new(p, addrs, &paths.lock_dir, &paths.counter).await?;
        r.locks.push(tokio::spawn(worker.run(shared.clone())));
    }
    for p in (SESSION_BASE + 1..=SESSION_BASE + SESSION_WORKERS).filter(|_| on(Workload::Sessions)) {
        let worker = sessions::Worker::new(p, addrs, &paths.ephemerals, seeded(p)).await?;
        r.sessions.push(tokio::spawn(worker.run(shared.clone())));
    }
    if on(Workload::Watches) {
        let p = WATCH_BASE + 1;
        let writer = watches::Writer::new(p, addrs, Arc::clone(&paths.watch_keys), seeded(p)).await?;
        r.writers.push(tokio::spawn(writer.run(shared.clone())));
        for p in WATCH_BASE + 2..WATCH_BASE + 2 + WATCHERS {
            let watcher = watches::Watcher::new(p, addrs, Arc::clone(&paths.watch_keys), seeded(p)).await?;
            r.watchers.push(tokio::spawn(watcher.run(shared.clone())));
        }
    }
    for p in (SEQUENCE_BASE + 1..=SEQUENCE_BASE + SEQUENCE_WORKERS).filter(|_| on(Workload::Sequential)) {
        let worker = sequential::Worker::new(p, addrs, &paths.sequence).await?;
        r.sequence.push(tokio::spawn(worker.run(shared.clone())));
    }
    Ok(r)
}

/// Waits for the clients to stop (the caller has told them): each is at most a call, a
/// reconnect or an expiry watch away.
pub async fn join(running: Running) -> Result<Done, CheckError> {
    let mut done = Done::default();
    let registers = all(running.registers).await?;
    if !registers.is_empty() {
        done.ops = registers.iter().flat_map(|w| w.done.iter().cloned()).collect();
        let lost = registers.iter().map(|w| w.sessions_lost).sum();
        done.summaries.push(format!("registers: {}", registers::summary(&done.ops, lost)));
    }
    let lockers = all(running.locks).await?;
    if !lockers.is_empty() {
        done.holds = lockers.iter().flat_map(|w| w.holds.iter().cloned()).collect();
        let failed = lockers.iter().map(|w| w.failed_acquires).sum();
        let lost = lockers.iter().map(|w| w.sessions_lost).sum();
        done.summaries.push(format!("locks: {}", locks::summary(&done.holds, failed, lost)));
    }
    let owners = all(running.sessions).await?;
    if !owners.is_empty() {
        done.ephemerals = owners.iter().flat_map(|w| w.nodes.iter().cloned()).collect();
        let lost = owners.iter().map(|w| w.sessions_lost).sum();
        done.summaries.push(format!("sessions: {}", sessions::summary(&done.ephemerals, lost)));
    }
    let writers = all(running.writers).await?;
    let watchers = all(running.watchers).await?;
    if !watchers.is_empty() {
        done.watch_writes = writers.iter().flat_map(|w| w.writes.iter().cloned()).collect();
        done.armed = watchers.iter().flat_map(|w| w.armed.iter().cloned()).collect();
        let lost = watchers.iter().map(|w| w.sessions_lost).sum();
        done.summaries.push(format!("watches: {}", watches::summary(&done.watch_writes, &done.armed, lost)));
    }
    let sequence = all(running.sequence).await?;
    if !sequence.is_empty() {
        done.creates = sequence.iter().flat_map(|w| w.creates.iter().cloned()).collect();
        let lost = sequence.iter().map(|w| w.sessions_lost).sum();
        done.summaries.push(format!("sequential: {}", sequential::summary(&done.creates, lost)));
    }
    Ok(done)
}

async fn all<W>(tasks: Vec<JoinHandle<W>>) -> Result<Vec<W>, CheckError> {
    let mut workers = Vec::new();
    // A sessions worker may be watching an expiry when told to stop: it looks once more.
    let limit = SETTLE + OP_LIMIT * 4;
    for task in tasks {
        match timeout(limit, task).await {
            Ok(Ok(worker)) => workers.push(worker),
            Ok(Err(e)) => return Err(CheckError::Task(e.to_string())),
            Err(_) => return Err(CheckError::Timeout("a workload client did not stop".into())),
        }
    }
    Ok(workers)
}

/// Each process's lane on the timeline, in process order.
pub fn lanes(workloads: &[Workload], members: usize) -> Vec<(u64, String)> {
    let on = |w| workloads.contains(&w);
    let mut lanes = Vec::new();
    let mut add = |name: &str, from: u64, n: u64| lanes.extend((from..from + n).map(|p| (p, format!("{name} p{p}"))));
    if on(Workload::Registers) {
        add("registers", 1, REGISTER_WORKERS);
        add("reader", REGISTER_WORKERS + 1, members as u64);
    }
    if on(Workload::Locks) {
        add("locks", LOCK_BASE + 1, LOCK_WORKERS);
    }
    if on(Workload::Sessions) {
        add("sessions", SESSION_BASE + 1, SESSION_WORKERS);
    }
    if on(Workload::Watches) {
        add("watch writer", WATCH_BASE + 1, 1);
        add("watcher", WATCH_BASE + 2, WATCHERS);
    }
    if on(Workload::Sequential) {
        add("sequential", SEQUENCE_BASE + 1, SEQUENCE_WORKERS);
    }
    lanes
}
