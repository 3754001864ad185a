//! `--ensemble N`: a local ensemble of `ward-server` release processes, the single-server
//! workloads run against it unchanged, then the leader kills of [`crate::failover`] and the
//! planned leader restarts of [`crate::restarts`]; then a second ensemble whose peer links
//! run through proxies, for the follower partitions of [`crate::partitions`].
//!
//! Every session is given every member's address and starts at a random one (as
//! `ward_client` does), so the workloads' sessions spread over the members and writes taken
//! by followers are forwarded to the leader: the figures are what clients of an ensemble see.

use crate::ensemble::{Links, LocalEnsemble};
use crate::report::{Results, WARD};
use crate::stats::Figures;
use crate::sys::{Counters, Error, Result, System, Ward, SESSION_TIMEOUT};
use crate::{failover, partitions, restarts, server, workloads};
use std::path::Path;
use std::time::Instant;
use ward_client::Client;

/// The workloads run against an ensemble unless `--only` names others: the write paths and
/// the locks (reads are local to a member, as on a single server; memory is per process).
pub const DEFAULT_WORKLOADS: &[&str] = &["a", "b", "w", "d", "e10"];
/// The planned restart's workload name, the same for every system.
pub const RESTART: &str = "planned leader restart (SIGTERM)";
const PARTITIONED: &str = "follower partitioned 5 s";

pub struct Options {
    pub members: u64,
    pub kills: usize,
    pub restarts: usize,
    pub partitions: usize,
    pub quick: bool,
    pub runs: usize,
    pub only: Option<Vec<String>>,
}

/// The ensemble as one system under test.
struct Replicated {
    /// `addr` lists every member; no PID, as one member's memory is not the ensemble's.
    ward: Ward,
    /// One session on each member alone, for counters over the whole ensemble.
    members: Vec<Client>,
}

impl System for Replicated {
    type S = Client;

    fn name(&self) -> &'static str {
        WARD
    }

    async fn connect(&self) -> Result<Client> {
        self.ward.connect().await
    }

    fn server_pid(&self) -> Option<u32> {
        None
    }

    /// Lock grants summed over the members (each pushes the grants of its own clients);
    /// log fsyncs as the mean per member (each member syncs its own copy of the log).
    async fn counters(&self, _session: &Client) -> Result<Counters> {
        let (mut grants, mut fsyncs) = (0, 0);
        for member in &self.members {
            let stats = member.server_stats().await?;
            grants += stats.lock_grants;
            fsyncs += stats.log_fsyncs;
        }
        Ok(Counters { lock_notifications: Some(grants), log_fsyncs: Some(fsyncs / self.members.len().max(1) as u64) })
    }

    async fn live_sessions(&self, session: &Client) -> Option<u64> {
        // The session table is replicated: any member knows every session.
        self.ward.live_sessions(session).await
    }
}

/// Starts the ensemble under `tmp`, measures, and records the figures; `Ok(false)` if a
/// workload failed or a lock was violated. Every member is stopped before this returns.
pub async fn run(o: &Options, tmp: &Path, results: &mut Results) -> Result<bool> {
    // A copy: other builds of the workspace may replace target/'s binary during the run, and
    // every member, restarts included, must run the same one.
    let bin = tmp.join("ward-server");
    std::fs::copy(server::binary()?, &bin)?;
    let started = Instant::now();
    let mut ens = LocalEnsemble::start(o.members, &bin, &tmp.join("ensemble"), Links::Direct).await?;
    let pids: Vec<String> = ens.ids().iter().map(|&id| format!("{id}:{}", ens.pid(id).unwrap_or(0))).collect();
    eprintln!(
        "ward-bench: ensemble of {} at {} (member:pid {}), serving after {:.1} s",
        o.members,
        ens.all(),
        pids.join(" "),
        started.elapsed().as_secs_f64()
    );
    let outcome = measure(&mut ens, o, results).await;
    if outcome.is_err() {
        eprintln!("ward-bench: the members' last log lines:\n{}", ens.log_tails(15));
    }
    drop(ens);
    let ok = outcome?;
    if o.partitions > 0 {
        measure_partitions(o, &bin, tmp, results).await?;
    }
    Ok(ok)
}

/// The partitions, on an ensemble of their own whose peer links run through proxies.
async fn measure_partitions(o: &Options, bin: &Path, tmp: &Path, results: &mut Results) -> Result<()> {
    let t0 = Instant::now();
    let ens = LocalEnsemble::start(o.members, bin, &tmp.join("ensemble-proxied"), Links::Proxied).await?;
    let base = format!("/bench-{}-partitions", std::process::id());
    let figures = partitions::follower_partitions(&ens, &base, o.partitions).await.inspect_err(|_| {
        eprintln!("ward-bench: the members' last log lines:\n{}", ens.log_tails(15));
    })?;
    let label = format!("{} members", o.members);
    results.record(&format!("{label}: {PARTITIONED}"), WARD, &figures);
    eprintln!("  {PARTITIONED:<36} {label:<9}        {:6.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}

async fn measure(ens: &mut LocalEnsemble, o: &Options, results: &mut Results) -> Result<bool> {
    let mut members = Vec::new();
    for id in ens.ids() {
        members.push(Client::builder(&ens.connect_string(&[id])).session_timeout(SESSION_TIMEOUT).connect().await?);
    }
    let sys = Replicated { ward: Ward { addr: ens.all(), pid: None }, members };
    let label = format!("{} members", o.members);
    let tag = std::process::id();
    let ok = run_workloads(&sys, &label, o, results, per_member_fsyncs).await;
    for member in sys.members {
        let _ = member.close().await;
    }
    if o.kills > 0 {
        let t0 = Instant::now();
        let figures = failover::leader_kills(ens, &format!("/bench-{tag}-failover"), o.kills).await?;
        results.record(&format!("{label}: leader kill -9"), WARD, &figures);
        eprintln!("  {:<36} {label:<9}        {:6.1} s", "leader kill -9", t0.elapsed().as_secs_f64());
    }
    if o.restarts > 0 {
        let t0 = Instant::now();
        let figures = restarts::ward_leader_restarts(ens, &format!("/bench-{tag}-restarts"), o.restarts).await?;
        results.record(&format!("{label}: {RESTART}"), WARD, &figures);
        eprintln!("  {RESTART:<36} {label:<9}        {:6.1} s", t0.elapsed().as_secs_f64());
    }
    Ok(ok)
}

/// Runs the selected workloads against `sys`, `o.runs` times each, and records them as
/// "<label>: <title>" under the system's name; `false` if one failed or a lock was violated.
pub async fn run_workloads<Y: System>(
    sys: &Y,
    label: &str,
    o: &Options,
    results: &mut Results,
    adjust: fn(Figures) -> Figures,
) -> bool {
    let sizes = if o.quick { workloads::Sizes::quick() } else { workloads::Sizes::full() };
    let tag = std::process::id();
    let selected = |id: &str| match &o.only {
        Some(only) => only.iter().any(|o| o == id),
        None => DEFAULT_WORKLOADS.contains(&id),
    };
    let name = sys.name();
    let mut ok = true;
    for (id, title) in workloads::WORKLOADS.iter().filter(|(id, _)| selected(id)) {
        for round in 0..o.runs {
            let t0 = Instant::now();
            let base = format!("/bench-{tag}-{name}-{round}");
            match workloads::run(sys, id, &base, &sizes).await {
                Ok(figures) => {
                    let figures = adjust(figures);
                    let violations = figures.violations();
                    if violations > 0.0 {
                        eprintln!("ward-bench: {title} on {name}, {label}: {violations} lock violations");
                        ok = false;
                    }
                    results.record(&format!("{label}: {title}"), name, &figures);
                    eprintln!(
                        "  {title:<36} {name:<9} {label} run {}  {:6.1} s",
                        round + 1,
                        t0.elapsed().as_secs_f64()
                    );
                }
                Err(e) => {
                    eprintln!("ward-bench: {title} on {name}, {label} failed: {e}");
                    ok = false;
                }
            }
        }
    }
    ok
}

/// The workloads name fsync counts as on a single server; here they are a member's.
fn per_member_fsyncs(figures: Figures) -> Figures {
    let rows = figures
        .rows
        .into_iter()
        .map(|(metric, value)| match metric.strip_prefix("log fsyncs") {
            Some(rest) => (format!("log fsyncs (mean per member){rest}"), value),
            None => (metric, value),
        })
        .collect();
    Figures { rows }
}

/// Resolves on SIGINT or SIGTERM, naming it: the caller then drops the run, which stops
/// every member it started.
pub async fn stop_signal() -> Error {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => term.recv().await,
            Err(_) => std::future::pending().await,
        }
    };
    let int = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = term => Error("stopped by SIGTERM".into()),
        () = int => Error("stopped by SIGINT".into()),
    }
}
