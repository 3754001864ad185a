//! `ward-bench`: Ward and Apache ZooKeeper side by side on one machine, in one run.
//!
//! By default it starts its own durable `ward-server` (every acknowledged write fsynced) on a
//! temporary data directory and runs every workload against it; `--zk HOST:PORT` runs each
//! workload against that ZooKeeper too, alternating systems workload by workload, and prints
//! one table with the Ward/ZooKeeper ratio. `--ensemble N` instead starts N `ward-server`
//! members as a local ensemble, runs the write and lock workloads through all of them, and
//! times leader failovers, planned leader restarts and follower partitions. See
//! docs/benchmarks.md.
//!
//! - `main.rs`: arguments, the single-server run, output.
//! - `workloads.rs`: the workloads, written once against `sys::System`; `sys.rs`: Ward and
//!   ZooKeeper behind that trait; `stats.rs`: samples and figures; `report.rs`: the table,
//!   JSON, Markdown and SVG; `floors.rs`: loopback and fsync floors; `procinfo.rs`: PIDs and
//!   memory of server processes; `server.rs`: the single `ward-server` this program starts.
//! - `replicated.rs`: the `--ensemble` run; `ensemble.rs`: its member processes (ports,
//!   kill -9, SIGTERM, restart, partition, leader); `failover.rs`: the leader kills and what
//!   they cost; `failover_writes.rs`: what its writer tasks share (with the rivals' in
//!   `rivals.rs`);
//!   `restarts.rs`: planned leader restarts (SIGTERM), Ward's and the rivals';
//!   `partitions.rs`: a follower partitioned and healed, over `peer_links.rs`'s proxies;
//!   `steady_writer.rs`: the one writer both run, and `gaps.rs` the longest stretch between
//!   its acknowledgements; `admin_metrics.rs`: a member's Raft term from its `/metrics`.
//! - `tables.rs`: `--tables`, the session table in memory (no server); `snapshots.rs`:
//!   `--snapshots`, what a snapshot of a large tree costs the writers (no server);
//!   `log_floor.rs`: `--log-floor`, the durable log alone in process (no connections).
//! - `scale.rs`: the scale workloads (a million znodes, a thousand lock waiters).
//! - `recovery.rs`: `--recovery N`, a server of N znodes stopped and started again: how long
//!   until it answers, and its memory before and after.
//! - `sync_reads.rs`: `--sync-reads N`, a `sync`'s latency on three members, by read index
//!   and by lease (`--lease-read`).

mod admin_metrics;
mod ensemble;
#[cfg(feature = "etcd")]
mod etcd;
mod failover;
mod failover_writes;
mod floors;
mod gaps;
mod idle;
mod log_floor;
mod partitions;
mod peer_links;
mod procinfo;
mod race;
mod recovery;
mod replicated;
mod report;
mod restarts;
mod rivals;
mod scale;
mod server;
mod snapshots;
mod stats;
mod steady_writer;
mod sync_reads;
mod sys;
mod tables;
mod workloads;

use report::{Results, WARD, ZK};
use rivals::Cluster;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;
use sys::{Error, System};
use workloads::{Sizes, WORKLOADS};

const USAGE: &str =
    "usage: ward-bench [--ward HOST:PORT] [--zk HOST:PORT] [--json FILE] [--svg FILE] [--quick] [--runs N] [--only IDS]
  --ward HOST:PORT  use this running Ward server (default: start a durable ward-server on a temp dir)
  --zk HOST:PORT    also run every workload against this ZooKeeper server, alternating systems
  --json FILE       write every figure as {workload, metric, system, value} objects in one array
  --svg FILE        draw the Ward/ZooKeeper ratio of the headline figures as a bar chart
  --markdown FILE   write the table as Markdown
  --quick           shorten every workload (a smoke run)
  --runs N          run every workload N times per system and report medians (default 1)
  --only IDS        run only these workloads, comma-separated: a,b,c,d,e10,e100,f,g,h,w,i,g1m,e1000
  --replot FILE     measure nothing: print the table of a --json FILE again and redraw
                    --svg/--markdown from it (--runs N only sets the chart's title)
  --ward-pid PID, --zk-pid PID   server PIDs for memory figures (default: found by port)
  --ensemble N      start N ward-server members as a local ensemble instead (clients spread
                    over them); run workloads a,b,w,d,e10 (or --only) and time leader kills
  --kills N         with --ensemble: leader kill -9s to time (default 5, 1 with --quick; 0: none)
  --restarts N      with --ensemble: planned leader restarts (SIGTERM, then started again) under a
                    writer with one write outstanding (default 3, 1 with --quick; 0: none); with
                    --zk-ensemble, ZooKeeper's too (needs --revive)
  --partitions N    with --ensemble: a follower partitioned 5 s and healed, under such a writer, on
                    a second ensemble whose peer links run through proxies (default 3, 1 with
                    --quick; 0: none)
  --zk-ensemble HOST:PORT,...  with --ensemble: race this ZooKeeper ensemble too (same workloads,
                    leader kills found with `srvr`); see bench/peers.sh
  --etcd URL,...    with --ensemble: race this etcd cluster too (a build with --features etcd)
  --revive CMD      after each rival leader kill, run CMD (e.g. \"bench/peers.sh start\") to bring
                    the killed member back; needed for more than one kill
  --idle-sessions N  measure only the server's memory per idle session, N sessions on each
                    protocol (native, then ZooKeeper), each against a ward-server of its own;
                    with --zk, also Apache ZooKeeper's live heap per idle session
  --recovery N      measure only a restart: a ward-server of its own filled with N znodes of
                    100 B, stopped with SIGTERM and started again on its data; the time until
                    it answers, and its RSS before and after
  --crash           with --recovery: stop it with kill -9 instead (the restart replays the log
                    since the last snapshot)
  --sync-reads N     measure only N syncs one after another through the leader and through a
                    follower of a three-member ensemble, by read index and by lease (--lease-read)
  --tables          measure only the in-memory session table (std Mutex<HashMap> against DashMap)
  --snapshots       measure only what a snapshot of 100k and 1M znodes costs the writers, in process
  --log-floor       measure only the durable log alone, in process (no connections): a's lone
                    creates, b's 64 outstanding and (without --quick) g1m's million, step by step
  --scale           run the scale workloads (f, h, g1m, e1000: each prints its cost per item);
                    they run only with --scale or when named in --only";

/// Workloads that report the server's memory growth.
const MEMORY_WORKLOADS: &[&str] = &["f", "g", "h", "g1m", "e1000"];
/// The scale workloads (`--scale`), each printing its cost per item.
const SCALE_WORKLOADS: &[&str] = &["f", "h", "g1m", "e1000"];
/// Of those, the ones that run only when asked for (`--scale` or `--only`): too long for
/// every run.
const SCALE_ONLY: &[&str] = &["g1m", "e1000"];

struct Args {
    ward: Option<String>,
    zk: Option<String>,
    json: Option<PathBuf>,
    svg: Option<PathBuf>,
    markdown: Option<PathBuf>,
    replot: Option<PathBuf>,
    quick: bool,
    runs: usize,
    only: Option<Vec<String>>,
    ward_pid: Option<u32>,
    zk_pid: Option<u32>,
    ensemble: Option<u64>,
    kills: Option<usize>,
    restarts: Option<usize>,
    partitions: Option<usize>,
    zk_ensemble: Option<String>,
    etcd: Option<String>,
    revive: Option<String>,
    tables: bool,
    snapshots: bool,
    log_floor: bool,
    scale: bool,
    idle_sessions: Option<usize>,
    recovery: Option<usize>,
    crash: bool,
    sync_reads: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        ward: None,
        zk: None,
        json: None,
        svg: None,
        markdown: None,
        replot: None,
        quick: false,
        runs: 1,
        only: None,
        ward_pid: None,
        zk_pid: None,
        ensemble: None,
        kills: None,
        restarts: None,
        partitions: None,
        zk_ensemble: None,
        etcd: None,
        revive: None,
        tables: false,
        snapshots: false,
        log_floor: false,
        scale: false,
        idle_sessions: None,
        recovery: None,
        crash: false,
        sync_reads: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--ward" => a.ward = Some(value()?),
            "--zk" => a.zk = Some(value()?),
            "--json" => a.json = Some(value()?.into()),
            "--svg" => a.svg = Some(value()?.into()),
            "--markdown" => a.markdown = Some(value()?.into()),
            "--replot" => a.replot = Some(value()?.into()),
            "--quick" => a.quick = true,
            "--runs" => a.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--only" => a.only = Some(value()?.split(',').map(|s| s.trim().to_string()).collect()),
            "--ward-pid" => a.ward_pid = Some(value()?.parse().map_err(|e| format!("--ward-pid: {e}"))?),
            "--zk-pid" => a.zk_pid = Some(value()?.parse().map_err(|e| format!("--zk-pid: {e}"))?),
            "--ensemble" => a.ensemble = Some(value()?.parse().map_err(|e| format!("--ensemble: {e}"))?),
            "--kills" => a.kills = Some(value()?.parse().map_err(|e| format!("--kills: {e}"))?),
            "--restarts" => a.restarts = Some(value()?.parse().map_err(|e| format!("--restarts: {e}"))?),
            "--partitions" => a.partitions = Some(value()?.parse().map_err(|e| format!("--partitions: {e}"))?),
            "--zk-ensemble" => a.zk_ensemble = Some(value()?),
            "--etcd" => a.etcd = Some(value()?),
            "--revive" => a.revive = Some(value()?),
            "--tables" => a.tables = true,
            "--snapshots" => a.snapshots = true,
            "--log-floor" => a.log_floor = true,
            "--scale" => a.scale = true,
            "--idle-sessions" => a.idle_sessions = Some(value()?.parse().map_err(|e| format!("--idle-sessions: {e}"))?),
            "--recovery" => a.recovery = Some(value()?.parse().map_err(|e| format!("--recovery: {e}"))?),
            "--crash" => a.crash = true,
            "--sync-reads" => a.sync_reads = Some(value()?.parse().map_err(|e| format!("--sync-reads: {e}"))?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    if let Some(only) = &a.only {
        if let Some(bad) = only.iter().find(|id| !WORKLOADS.iter().any(|(w, _)| w == id)) {
            return Err(format!("--only: no workload {bad:?}"));
        }
    }
    match a.ensemble {
        Some(n) if !(1..=9).contains(&n) => return Err("--ensemble takes 1 to 9 members".into()),
        Some(n) if n < 3 && (a.kills.unwrap_or(1) > 0 || a.restarts.unwrap_or(1) > 0 || a.partitions.unwrap_or(1) > 0) => {
            return Err("leader kills, restarts and partitions need at least 3 members (a majority must remain): add --kills 0 --restarts 0 --partitions 0".into())
        }
        Some(_) if a.ward.is_some() || a.zk.is_some() || a.replot.is_some() => {
            return Err("--ensemble starts its own members: leave out --ward, --zk and --replot".into())
        }
        None if a.kills.is_some() || a.restarts.is_some() || a.partitions.is_some() => {
            return Err("--kills, --restarts and --partitions need --ensemble".into())
        }
        None if a.zk_ensemble.is_some() || a.etcd.is_some() => {
            return Err("--zk-ensemble and --etcd race against --ensemble N".into())
        }
        _ => {}
    }
    let racing = a.zk_ensemble.is_some() || a.etcd.is_some();
    if racing && a.revive.is_none() && a.kills.unwrap_or(if a.quick { 1 } else { 5 }) > 1 {
        return Err("more than one rival leader kill needs --revive CMD (e.g. \"bench/peers.sh start\")".into());
    }
    if a.zk_ensemble.is_some() && a.revive.is_none() && a.restarts.unwrap_or(1) > 0 {
        return Err("ZooKeeper's planned restarts need --revive CMD to start its leader again (or --restarts 0)".into());
    }
    if a.etcd.is_some() && !cfg!(feature = "etcd") {
        return Err("--etcd needs a build with the etcd feature: cargo run --release -p ward-bench --features etcd (protoc: apt-get install protobuf-compiler)".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("ward-bench: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ward-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.tables || args.snapshots || args.log_floor {
        let mut results = Results::default();
        let measured = match (args.tables, args.snapshots) {
            (true, _) => {
                tables::run(&mut results, args.quick);
                Ok(())
            }
            (false, true) => {
                snapshots::run(&mut results, args.quick);
                Ok(())
            }
            (false, false) => log_floor::run(&mut results, args.runs, args.quick, &std::env::temp_dir()),
        };
        return match measured.map_err(Error).and_then(|()| output(&args, &results)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ward-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(path) = &args.replot {
        let results = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| Results::from_json(&text))
            .map_err(|e| Error(format!("{}: {e}", path.display())))
            .and_then(|results| output(&args, &results));
        return match results {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ward-bench: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let tmp = std::env::temp_dir().join(format!("ward-bench-{}", std::process::id()));
    let outcome = match std::fs::create_dir_all(&tmp) {
        Ok(()) => match (args.idle_sessions, args.recovery, args.sync_reads) {
            (Some(n), _, _) => runtime.block_on(idle::run(&tmp, n, zookeeper(&args))).map(|()| true),
            (None, Some(n), _) => runtime.block_on(recovery::run(&tmp, n, args.crash)).map(|()| true),
            (None, None, Some(n)) => runtime.block_on(sync_reads::run(&tmp, n)).map(|()| true),
            (None, None, None) => runtime.block_on(run(&args, &tmp)),
        },
        Err(e) => Err(Error(format!("{}: {e}", tmp.display()))),
    };
    let _ = std::fs::remove_dir_all(&tmp);
    drop(runtime);
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("ward-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The ZooKeeper named by `--zk`, its pid from `--zk-pid` or the process listening there.
fn zookeeper(args: &Args) -> Option<sys::ZooKeeper> {
    args.zk.as_ref().map(|addr| sys::ZooKeeper {
        addr: addr.clone(),
        pid: args.zk_pid.or_else(|| procinfo::pid_listening_on(addr)),
        lock_events: Arc::new(AtomicU64::new(0)),
    })
}

/// Runs everything; `Ok(false)` if a workload failed or a lock was violated.
async fn run(args: &Args, tmp: &std::path::Path) -> Result<bool, Error> {
    if let Some(members) = args.ensemble {
        return run_ensemble(args, tmp, members).await;
    }
    let started = Instant::now();
    let mut owned = None;
    let mut ward = match &args.ward {
        Some(addr) => sys::Ward { addr: addr.clone(), pid: args.ward_pid.or_else(|| procinfo::pid_listening_on(addr)) },
        None => {
            let s = server::start(&tmp.join("ward-data"))?;
            let ward = sys::Ward { addr: s.addr.clone(), pid: Some(s.pid) };
            owned = Some(s);
            ward
        }
    };
    let zk = zookeeper(args);
    eprintln!(
        "ward-bench: Ward at {} (pid {}){}; {} mode, {} run(s) per workload",
        ward.addr,
        ward.pid.map_or("unknown".into(), |p| p.to_string()),
        zk.as_ref().map_or(String::new(), |z| format!(
            ", ZooKeeper at {} (pid {})",
            z.addr,
            z.pid.map_or("unknown".into(), |p| p.to_string())
        )),
        if args.quick { "quick" } else { "full" },
        args.runs
    );
    let sizes = if args.quick { Sizes::quick() } else { Sizes::full() };
    let mut results = Results::default();
    let mut ok = true;

    let floors = floors::measure(tmp, args.quick).await?;
    results.record("floors", WARD, &floors);
    if zk.is_some() {
        results.record("floors", ZK, &floors);
    }

    let tag = std::process::id();
    let mut restarts = 0;
    for (id, title) in WORKLOADS {
        let wanted = match &args.only {
            Some(only) => only.iter().any(|o| o == id),
            None if args.scale => SCALE_WORKLOADS.contains(id),
            None => !SCALE_ONLY.contains(id),
        };
        if !wanted {
            continue;
        }
        for round in 0..args.runs {
            let base = format!("/bench-{tag}-{round}");
            // Memory is measured as the server's RSS growth, which memory freed by earlier
            // workloads (and kept by the allocator) would hide: a fresh server for these.
            if owned.is_some() && MEMORY_WORKLOADS.contains(id) {
                drop(owned.take()); // stop the old server before the new one starts
                restarts += 1;
                let s = server::start(&tmp.join(format!("ward-data-{restarts}")))?;
                ward = sys::Ward { addr: s.addr.clone(), pid: Some(s.pid) };
                owned = Some(s);
            }
            // Alternate which system goes first from round to round.
            let zk_first = round % 2 == 1;
            let mut order: Vec<bool> = vec![false];
            if zk.is_some() {
                if zk_first {
                    order.insert(0, true);
                } else {
                    order.push(true);
                }
            }
            for is_zk in order {
                let t0 = Instant::now();
                let (name, outcome) = match (&zk, is_zk) {
                    (Some(z), true) => (z.name(), workloads::run(z, id, &base, &sizes).await),
                    _ => (ward.name(), workloads::run(&ward, id, &base, &sizes).await),
                };
                match outcome {
                    Ok(figures) => {
                        let violations = figures.violations();
                        if violations > 0.0 {
                            eprintln!("ward-bench: {title} on {name}: {violations} lock violations");
                            ok = false;
                        }
                        results.record(title, name, &figures);
                        eprintln!("  {title:<36} {name:<9} run {}  {:6.1} s", round + 1, t0.elapsed().as_secs_f64());
                    }
                    Err(e) => {
                        eprintln!("ward-bench: {title} on {name} failed: {e}");
                        ok = false;
                    }
                }
            }
        }
    }
    drop(owned);
    results.add_memory_rows();
    output(args, &results)?;
    eprintln!("ward-bench: finished in {:.1} s", started.elapsed().as_secs_f64());
    Ok(ok)
}

/// `--ensemble N`: the floors, then the ensemble's workloads and failovers.
async fn run_ensemble(args: &Args, tmp: &std::path::Path, members: u64) -> Result<bool, Error> {
    let started = Instant::now();
    let options = replicated::Options {
        members,
        kills: args.kills.unwrap_or(if args.quick { 1 } else { 5 }),
        restarts: args.restarts.unwrap_or(if args.quick { 1 } else { 3 }),
        partitions: args.partitions.unwrap_or(if args.quick { 1 } else { 3 }),
        quick: args.quick,
        runs: args.runs,
        only: args.only.clone(),
    };
    eprintln!(
        "ward-bench: local ensemble of {members}; {} mode, {} run(s) per workload, {} leader kill(s), {} planned restart(s), {} partition(s)",
        if args.quick { "quick" } else { "full" },
        args.runs,
        options.kills,
        options.restarts,
        options.partitions
    );
    let mut results = Results::default();
    results.record("floors", WARD, &floors::measure(tmp, args.quick).await?);
    let (mut zk, mut etcd) = (Results::default(), Results::default());
    // A signal drops the run, and with it the ensemble, which kills every member.
    let outcome = tokio::select! {
        outcome = async {
            let ward_ok = replicated::run(&options, tmp, &mut results).await?;
            let rivals_ok = race_rivals(args, &options, &mut zk, &mut etcd).await?;
            Ok(ward_ok && rivals_ok)
        } => outcome,
        stopped = replicated::stop_signal() => Err(stopped),
    };
    // What was measured before a failure is still printed.
    if args.zk_ensemble.is_some() || args.etcd.is_some() {
        let race = race::Race {
            label: format!("{members} members"),
            ward: &results,
            zk: args.zk_ensemble.as_ref().map(|_| &zk),
            etcd: args.etcd.as_ref().map(|_| &etcd),
        };
        race_output(args, &race, &results, &zk, &etcd)?;
    } else {
        output(args, &results)?;
    }
    let ok = outcome?;
    eprintln!("ward-bench: finished in {:.1} s", started.elapsed().as_secs_f64());
    Ok(ok)
}

/// The rivals' workloads and leader kills, each system in turn after Ward's ensemble.
async fn race_rivals(
    args: &Args,
    options: &replicated::Options,
    zk: &mut Results,
    #[cfg_attr(not(feature = "etcd"), allow(unused_variables))] etcd: &mut Results,
) -> Result<bool, Error> {
    let mut ok = true;
    let revive = args.revive.as_deref();
    if let Some(addr) = &args.zk_ensemble {
        let sys = sys::ZooKeeper { addr: addr.clone(), pid: None, lock_events: Arc::new(AtomicU64::new(0)) };
        ok &= rivals::measure(&sys, options, revive, zk).await?;
        if let (Some(cmd), true) = (revive, options.restarts > 0) {
            let base = format!("/bench-{}-zookeeper-restarts", std::process::id());
            let figures = restarts::rival_leader_restarts(&sys, &base, options.restarts, cmd).await?;
            zk.record(&format!("{} members: {}", sys.members().len(), replicated::RESTART), sys.name(), &figures);
        }
    }
    #[cfg(feature = "etcd")]
    if let Some(urls) = &args.etcd {
        let sys = etcd::Etcd { urls: urls.split(',').map(|u| u.trim().to_string()).collect() };
        ok &= rivals::measure(&sys, options, revive, etcd).await?;
    }
    Ok(ok)
}

/// The race: the side-by-side table on stdout, then every system's full table; the files
/// asked for (`--json` holds every system's figures under its name).
fn race_output(args: &Args, race: &race::Race, ward: &Results, zk: &Results, etcd: &Results) -> Result<(), Error> {
    println!("{}", race.markdown());
    for (name, r) in [("Ward", ward), ("ZooKeeper", zk), ("etcd", etcd)] {
        if !r.rows.is_empty() {
            println!("{name}, every figure (second column: this system):\n{}", r.table(name != "Ward"));
        }
    }
    if let Some(path) = &args.json {
        std::fs::write(
            path,
            format!("{{\"ward\": {}, \"zookeeper\": {}, \"etcd\": {}}}\n", ward.json(), zk.json(), etcd.json()),
        )?;
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, race.markdown())?;
    }
    if let Some(path) = &args.svg {
        let runs = if args.runs > 1 { format!(", median of {} runs", args.runs) } else { String::new() };
        std::fs::write(path, race.svg(&format!("ward-bench: 3-member ensembles on one machine{runs}")))?;
    }
    Ok(())
}

/// Prints the table and the targets, and writes the files asked for.
fn output(args: &Args, results: &Results) -> Result<(), Error> {
    let zk = results.has_zk();
    println!("{}", results.table(zk));
    if zk {
        println!("Targets (docs/benchmarks.md):\n{}", report::targets(results));
        println!("memory per X: Ward's RSS delta against ZooKeeper's live heap delta after a full GC (its RSS delta without jcmd).");
    }
    if let Some(path) = &args.json {
        std::fs::write(path, results.json())?;
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, results.markdown())?;
    }
    if let Some(path) = &args.svg {
        let title = format!(
            "ward-bench: Ward vs ZooKeeper{}",
            if args.runs > 1 { format!(", median of {} runs", args.runs) } else { String::new() }
        );
        std::fs::write(path, report::svg(results, &title))?;
    }
    Ok(())
}
