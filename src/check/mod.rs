//! `ward check`: runs real workloads against an ensemble while injecting faults, records the
//! history, and checks it against docs/guarantees.md.
//!
//! With [`Target::Ensemble`] it starts that many local `ward-server` processes (durable data
//! directories under the system temp dir, removed at the end) behind one proxy per directed
//! peer link (`ward-testkit`'s `Ensemble`, the same harness the
//! ensemble tests use), and inflicts [`FaultKind`]s on them; with [`Target::Servers`] it runs
//! the workloads only, against servers it cannot touch. The same seed gives the same fault
//! schedule and the same workload choices.
//!
//! # Layout
//! * [`registers`], [`locks`]: the workloads and what each operation came to.
//! * [`nemesis`]: the faults and their seeded schedule.
//! * [`checkers`]: linearizability, lock safety, durability.
//! * [`history`]: the history as JSON lines in the output directory.
//! * [`report`]: a verdict per checker, with counts and the slices of history that show
//!   each violation.
//! * `shared`: the clock, the stop flag and bounded connecting, shared by the workers.

pub mod checkers;
mod error;
pub mod history;
pub mod locks;
pub mod nemesis;
pub mod registers;
pub mod report;
mod shared;

pub use error::CheckError;
pub use nemesis::FaultKind;
pub use report::{Finding, Report, Verdict};
pub use shared::{connect, Shared, OP_LIMIT, SETTLE};

use checkers::FinalRead;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use ward_check::History;
use ward_client::{Client, CreateMode, Error};
use ward_testkit::{Ensemble, EnsembleOptions};

/// Where the workloads run.
#[derive(Clone, Debug)]
pub enum Target {
    /// Start this many local members, running `server_binary`.
    Ensemble { members: u64, server_binary: PathBuf },
    /// A connect string of servers that are already running; no faults.
    Servers(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Registers,
    Locks,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub target: Target,
    /// How long the workloads run (faults included).
    pub duration: Duration,
    pub seed: u64,
    pub workloads: Vec<Workload>,
    /// Only with [`Target::Ensemble`].
    pub faults: Vec<FaultKind>,
    /// Where `history.jsonl` goes (made if missing).
    pub out: PathBuf,
}

const REGISTER_WORKERS: u64 = 4;
const LOCK_WORKERS: u64 = 3;
const KEYS: usize = 3;
/// Lock workers' process numbers start here, apart from the register workers'.
const LOCK_PROCESS_BASE: u64 = 100;

/// The servers of a run.
enum Cluster {
    Local(Box<Ensemble>),
    Remote(String),
}

impl Cluster {
    async fn start(config: &Config) -> Result<Cluster, CheckError> {
        match &config.target {
            Target::Servers(addrs) => Ok(Cluster::Remote(addrs.clone())),
            Target::Ensemble { members, server_binary } => {
                let options = EnsembleOptions {
                    members: *members,
                    flags: Vec::new(),
                    seed: config.seed,
                    binary: Some(server_binary.clone()),
                };
                let ensemble = Ensemble::launch(&options).await?;
                ensemble.try_leader(&[], SETTLE).await?;
                Ok(Cluster::Local(Box::new(ensemble)))
            }
        }
    }

    fn connect_string(&self) -> String {
        match self {
            Cluster::Local(ensemble) => ensemble.connect_string(),
            Cluster::Remote(addrs) => addrs.clone(),
        }
    }

    fn member_addrs(&self) -> Vec<String> {
        match self {
            Cluster::Local(ensemble) => ensemble.ids().into_iter().map(|id| ensemble.addr(id)).collect(),
            Cluster::Remote(addrs) => {
                addrs.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect()
            }
        }
    }
}

/// Runs the workloads (and faults) of `config`, then the checkers. `say` hears progress
/// lines (the servers, each fault). A violation is in the report, not an error.
pub async fn run(config: &Config, say: &(dyn Fn(&str) + Sync)) -> Result<Report, CheckError> {
    let out = &config.out;
    std::fs::create_dir_all(out).map_err(|source| CheckError::Io { path: out.clone(), source })?;
    let mut cluster = Cluster::start(config).await?;
    let addrs = cluster.connect_string();
    say(&format!("servers: {addrs}"));
    let admin = connect(&addrs).await?;
    let root = run_root(&admin).await?;
    say(&format!("nodes under {root}"));
    let keys: Arc<[String]> = (0..KEYS).map(|i| format!("{root}/reg-{i}")).collect();
    let (lock_dir, counter) = (format!("{root}/lock"), format!("{root}/counter"));
    let registers = config.workloads.contains(&Workload::Registers);
    let with_locks = config.workloads.contains(&Workload::Locks);
    let mut history = History::new();
    if registers {
        history = registers::prepare_keys(&admin, &keys).await?;
    }
    if with_locks {
        locks::prepare(&admin, &lock_dir, &counter).await?;
    }

    let shared = Shared::new();
    let mut register_tasks = Vec::new();
    for p in (1..=REGISTER_WORKERS).filter(|_| registers) {
        let worker = registers::Worker::new(p, &addrs, Arc::clone(&keys), config.seed.wrapping_add(p)).await?;
        register_tasks.push(tokio::spawn(worker.run(shared.clone())));
    }
    let mut lock_tasks = Vec::new();
    for p in (1..=LOCK_WORKERS).filter(|_| with_locks) {
        let worker = locks::Worker::new(LOCK_PROCESS_BASE + p, &addrs, &lock_dir, &counter).await?;
        lock_tasks.push(tokio::spawn(worker.run(shared.clone())));
    }
    let started = Instant::now();
    let until = started + config.duration;
    let faults = match &mut cluster {
        Cluster::Local(ensemble) if !config.faults.is_empty() => {
            let mut schedule = nemesis::Schedule::new(config.seed, &config.faults);
            nemesis::run(ensemble, &mut schedule, until, &shared, say).await?
        }
        _ => Vec::new(),
    };
    tokio::time::sleep_until(until.into()).await;
    // Every fault is healed: the clients must get on again, and every key is then also
    // read on a healthy cluster.
    if !shared.progressed(5, SETTLE).await {
        say(&format!("warning: no operation completed within {SETTLE:?} after the faults"));
    }
    shared.stop.store(true, Ordering::Relaxed);
    let register_workers = join(register_tasks).await?;
    let lock_workers = join(lock_tasks).await?;
    let ran = started.elapsed();

    let ops: Vec<_> = register_workers.iter().flat_map(|w| w.done.iter().cloned()).collect();
    let holds: Vec<_> = lock_workers.iter().flat_map(|w| w.holds.iter().cloned()).collect();
    let mut paths: Vec<String> = if registers { keys.to_vec() } else { Vec::new() };
    paths.extend(with_locks.then(|| counter.clone()));
    let finals = final_reads(&cluster.member_addrs(), &paths).await;
    let _ = timeout(OP_LIMIT, admin.close()).await;

    registers::record(&mut history, &keys, &ops);
    let mut verdicts = Vec::new();
    let mut workloads = Vec::new();
    if registers {
        verdicts.push(checkers::linearizability(&history));
        let lost = register_workers.iter().map(|w| w.sessions_lost).sum();
        workloads.push(format!("registers: {}", registers::summary(&ops, lost)));
    }
    if with_locks {
        verdicts.push(checkers::lock_safety(&holds));
        let failed = lock_workers.iter().map(|w| w.failed_acquires).sum();
        let lost = lock_workers.iter().map(|w| w.sessions_lost).sum();
        workloads.push(format!("locks: {}", locks::summary(&holds, failed, lost)));
    }
    let counted = with_locks.then_some((counter.as_str(), holds.as_slice()));
    verdicts.push(checkers::durability(&keys, &ops, counted, &finals));
    let recorded = history::Recorded { keys: &keys, ops: &ops, holds: &holds, faults: &faults, finals: &finals };
    history::write(out, &recorded)?;
    Ok(Report {
        seed: config.seed,
        ran,
        operations: ops.len() + holds.len(),
        faults,
        workloads,
        verdicts,
        history: out.join("history.jsonl"),
    })
}

/// A fresh node for this run's keys: `/ward-check/run-NNNNNNNNNN`, so that runs against
/// the same servers never share state.
async fn run_root(client: &Client) -> Result<String, CheckError> {
    let top = "/ward-check";
    match timeout(OP_LIMIT, client.create(top, b"", CreateMode::Persistent)).await {
        Ok(Ok(_) | Err(Error::NodeExists)) => {}
        Ok(Err(e)) => return Err(CheckError::Client { what: format!("create {top}"), source: e }),
        Err(_) => return Err(CheckError::Timeout(format!("create {top} took over {OP_LIMIT:?}"))),
    }
    let prefix = format!("{top}/run-");
    match timeout(OP_LIMIT, client.create(&prefix, b"", CreateMode::PersistentSequential)).await {
        Ok(Ok(path)) => Ok(path),
        Ok(Err(e)) => Err(CheckError::Client { what: format!("create {prefix}N"), source: e }),
        Err(_) => Err(CheckError::Timeout(format!("create {prefix}N took over {OP_LIMIT:?}"))),
    }
}

/// Waits for the workers to stop: each is at most one call or one reconnect away.
async fn join<W>(tasks: Vec<JoinHandle<W>>) -> Result<Vec<W>, CheckError> {
    let mut workers = Vec::new();
    for task in tasks {
        match timeout(SETTLE + OP_LIMIT * 2, task).await {
            Ok(Ok(worker)) => workers.push(worker),
            Ok(Err(e)) => return Err(CheckError::Task(e.to_string())),
            Err(_) => return Err(CheckError::Timeout("a workload client did not stop".into())),
        }
    }
    Ok(workers)
}

/// What each member shows of `paths` at the end: its own client, `sync`, then a read.
async fn final_reads(members: &[String], paths: &[String]) -> Vec<FinalRead> {
    let mut finals = Vec::new();
    for member in members {
        let client = connect(member).await;
        for path in paths {
            let read = match &client {
                Err(e) => Err(e.to_string()),
                Ok(client) => read_synced(client, path).await,
            };
            finals.push(FinalRead { member: member.clone(), path: path.clone(), read });
        }
        if let Ok(client) = client {
            let _ = timeout(OP_LIMIT, client.close()).await;
        }
    }
    finals
}

async fn read_synced(client: &Client, path: &str) -> Result<(Vec<u8>, u64), String> {
    match timeout(OP_LIMIT, client.sync(path)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("sync: {e}")),
        Err(_) => return Err(format!("sync took over {OP_LIMIT:?}")),
    }
    match timeout(OP_LIMIT, client.get_data(path)).await {
        Ok(Ok((data, stat))) => Ok((data, registers::version(&stat))),
        Ok(Err(e)) => Err(format!("read: {e}")),
        Err(_) => Err(format!("read took over {OP_LIMIT:?}")),
    }
}
