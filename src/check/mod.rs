//! `ward check`: runs real workloads against an ensemble while injecting faults, records the
//! history, and checks it against docs/guarantees.md.
//!
//! With [`Target::Ensemble`] it starts that many local `ward-server` processes (durable data
//! directories under the system temp dir, removed at the end) behind one proxy per directed
//! peer link (`ward-procs`' `Ensemble`, the same one the ensemble tests use), and
//! inflicts [`FaultKind`]s on them; with [`Target::Servers`] it runs the workloads only,
//! against servers it cannot touch. The same seed gives the same fault schedule and the same
//! workload choices.
//!
//! # Layout
//! * [`registers`], [`locks`], [`sessions`], [`watches`], [`sequential`]: the workloads and
//!   what each operation came to; `workers`: starting and stopping them together.
//! * [`nemesis`]: the faults and their seeded schedule.
//! * `finals`: what the servers show after healing (synced reads, listings, digests).
//! * [`checkers`]: linearizability, lock safety, sessions, watches, sequential creates,
//!   durability, convergence.
//! * [`history`]: the history as JSON lines in the output directory.
//! * [`report`]: a verdict per checker, with counts and the slices of history that show
//!   each violation; [`svg`]: the run drawn as a timeline (`timeline`: its bars).
//! * `cluster`: the servers; `shared`: the clock, the stop flag and bounded connecting.

pub mod checkers;
mod cluster;
mod error;
mod finals;
pub mod history;
pub mod locks;
pub mod nemesis;
pub mod registers;
pub mod report;
pub mod sequential;
pub mod sessions;
mod shared;
pub mod svg;
mod timeline;
pub mod watches;
mod workers;

pub use error::CheckError;
pub use nemesis::FaultKind;
pub use report::{Finding, Mark, Report, Verdict};
pub use shared::{connect, Shared, OP_LIMIT, SETTLE};

use cluster::Cluster;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::{Client, CreateMode, Error};
use ward_linearizability::History;
use workers::{Done, Paths};

/// Where the workloads run.
#[derive(Clone, Debug)]
pub enum Target {
    /// Start this many local members, running `server_binary`.
    Ensemble { members: u64, server_binary: PathBuf },
    /// A connect string of servers that are already running, and their admin listeners
    /// when known (for the convergence checker); no faults.
    Servers { addrs: String, admin: Vec<SocketAddr> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Registers,
    Locks,
    Sessions,
    Watches,
    Sequential,
}

impl Workload {
    pub const ALL: [Workload; 5] =
        [Workload::Registers, Workload::Locks, Workload::Sessions, Workload::Watches, Workload::Sequential];
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
    /// Where `history.jsonl` goes (made if missing), and the logs of the members
    /// `--ensemble` starts (`member-ID.log`).
    pub out: PathBuf,
    /// Where to draw the run's timeline, if anywhere.
    pub svg: Option<PathBuf>,
    /// Added to every local member's command line (tests use it to break a promise on
    /// purpose; see `ward_server::unsafe_break`).
    pub server_args: Vec<String>,
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
    let paths = Paths::new(&root);
    let history = prepare(&admin, &config.workloads, &paths).await?;

    let shared = Shared::new();
    let members = cluster.member_addrs();
    let running = workers::start(&config.workloads, &addrs, &members, &paths, config.seed, &shared).await?;
    let started = Instant::now();
    let until = started + config.duration;
    let faults = match &mut cluster {
        Cluster::Local(ensemble) if !config.faults.is_empty() => {
            let members = ensemble.ids().len();
            let mut schedule = nemesis::Schedule::new(config.seed, &config.faults, members);
            nemesis::run(ensemble, &mut schedule, until, &shared, say).await?
        }
        _ => Vec::new(),
    };
    tokio::time::sleep_until(until.into()).await;
    // Every fault is healed: the clients must get on again, and every node is then also
    // read on a healthy cluster.
    if !shared.progressed(5, SETTLE).await {
        say(&format!("warning: no operation completed within {SETTLE:?} after the faults"));
    }
    shared.stop.store(true, Ordering::Relaxed);
    let done = workers::join(running).await?;
    let ran = started.elapsed();
    let _ = timeout(OP_LIMIT, admin.close()).await;

    let report = judge(config, &cluster, &paths, history, &done, faults, ran).await?;
    if let Some(file) = &config.svg {
        let title = format!(
            "ward check, seed {}: {} operations, {} faults",
            config.seed,
            report.operations,
            report.faults.len()
        );
        let findings: Vec<&Finding> = report.verdicts.iter().flat_map(|v| &v.violations).collect();
        let lanes = workers::lanes(&config.workloads, members.len());
        let drawn = svg::render(&title, &lanes, &timeline::spans(&done), &report.faults, &findings);
        std::fs::write(file, drawn).map_err(|source| CheckError::Io { path: file.clone(), source })?;
    }
    Ok(report)
}

/// Creates the nodes the workloads start from; the registers' history starts there.
async fn prepare(client: &Client, workloads: &[Workload], paths: &Paths) -> Result<History, CheckError> {
    let on = |w| workloads.contains(&w);
    let mut history = History::new();
    if on(Workload::Registers) {
        history = registers::prepare_keys(client, &paths.keys).await?;
    }
    let mut nodes: Vec<(&str, &[u8])> = Vec::new();
    if on(Workload::Locks) {
        // The counter starts at 0, version 0.
        nodes.extend([(paths.lock_dir.as_str(), &b""[..]), (paths.counter.as_str(), &b"0"[..])]);
    }
    if on(Workload::Sessions) {
        nodes.push((&paths.ephemerals, b""));
    }
    if on(Workload::Watches) {
        nodes.extend(paths.watch_keys.iter().map(|k| (k.as_str(), &b""[..])));
    }
    if on(Workload::Sequential) {
        nodes.push((&paths.sequence, b""));
    }
    for (path, data) in nodes {
        shared::create(client, path, data).await?;
    }
    Ok(history)
}

/// Reads what the servers show at the end, runs every checker, writes the history.
async fn judge(
    config: &Config,
    cluster: &Cluster,
    paths: &Paths,
    mut history: History,
    done: &Done,
    faults: Vec<nemesis::FaultEvent>,
    ran: Duration,
) -> Result<Report, CheckError> {
    let on = |w| config.workloads.contains(&w);
    let members = cluster.member_addrs();
    let mut read: Vec<String> = if on(Workload::Registers) { paths.keys.to_vec() } else { Vec::new() };
    read.extend(on(Workload::Locks).then(|| paths.counter.clone()));
    let finals = finals::reads(&members, &read).await;
    let claimed: HashSet<&str> =
        done.creates.iter().filter_map(|c| c.created.as_ref().map(|(n, _)| n.as_str())).collect();
    let listings = match on(Workload::Sequential) {
        true => finals::listings(&members, &paths.sequence, &claimed).await,
        false => Vec::new(),
    };
    let admins = cluster.admin_addrs();
    let digests = if admins.is_empty() { Vec::new() } else { finals::digests(&admins).await };

    registers::record(&mut history, &paths.keys, &done.ops);
    let mut verdicts = Vec::new();
    if on(Workload::Registers) {
        verdicts.push(checkers::linearizability(&history));
    }
    if on(Workload::Locks) {
        verdicts.push(checkers::lock_safety(&done.holds));
    }
    if on(Workload::Sessions) {
        verdicts.push(checkers::ephemerals(&done.ephemerals));
    }
    if on(Workload::Watches) {
        verdicts.push(checkers::watch_order(&paths.watch_keys, &done.watch_writes, &done.armed));
    }
    if on(Workload::Sequential) {
        verdicts.push(checkers::sequential(&done.creates, &listings));
    }
    let counted = on(Workload::Locks).then_some((paths.counter.as_str(), done.holds.as_slice()));
    verdicts.push(checkers::durability(&paths.keys, &done.ops, counted, &finals));
    let mut notes = Vec::new();
    match digests.is_empty() {
        true => notes.push("convergence: not checked (give --admin ADDR,... with --servers)".to_owned()),
        false => verdicts.push(checkers::convergence(&digests)),
    }
    let recorded = history::Recorded {
        keys: &paths.keys,
        ops: &done.ops,
        holds: &done.holds,
        ephemerals: &done.ephemerals,
        watch_keys: &paths.watch_keys,
        watch_writes: &done.watch_writes,
        armed: &done.armed,
        creates: &done.creates,
        faults: &faults,
        finals: &finals,
        listings: &listings,
        digests: &digests,
    };
    history::write(&config.out, &recorded)?;
    let operations = done.ops.len()
        + done.holds.len()
        + done.ephemerals.len()
        + done.watch_writes.len()
        + done.armed.len()
        + done.creates.len();
    Ok(Report {
        seed: config.seed,
        ran,
        operations,
        faults,
        workloads: done.summaries.clone(),
        notes,
        verdicts,
        history: config.out.join("history.jsonl"),
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
