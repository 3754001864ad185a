//! `--log-floor`: Ward's durable log alone, in process. Creates are submitted straight to the
//! log the server uses (openraft 0.9 over the fsynced segments, the real state machine,
//! default options), on a runtime of one worker as the server's default, with no sockets, no
//! connection tasks and no client library in front of it. Whatever the server does with
//! connections in front of this log, it cannot beat these figures: they are the floor the
//! log's own cycle sets under workloads a (one write at a time), b (64 outstanding) and g1m
//! (the rate of each tenth of a million creates).
//!
//! Each figure is a fresh data directory under the system's temporary directory, removed
//! afterwards.

use crate::report::{Results, WARD};
use crate::stats::{Figures, Samples};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use ward_proto::{CreateMode, Op, SessionId, SessionSecret};
use ward_server::command::{Command, CommandOp, Outcome};
use ward_server::local::Local;
use ward_server::metrics::Metrics;
use ward_server::raft::{self as durable, RaftLog, RaftOptions};
use ward_server::replication::Replication;

/// b's shape: 64 writers, 800 creates each.
const OUTSTANDING: usize = 64;
const PER_WRITER: usize = 800;
/// g1m's shape: ten steps of a tenth of a million creates, 64 outstanding.
const STEPS: usize = 10;

pub fn run(results: &mut Results, runs: usize, quick: bool, tmp: &Path) -> Result<(), String> {
    for run in 1..=runs {
        let dir = tmp.join(format!("log-floor-{run}"));
        // The server's default: one runtime worker, the log's I/O on a thread of its own.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        let measured = runtime.block_on(measure(&dir, quick));
        runtime.shutdown_timeout(Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&dir);
        for (title, figures) in measured? {
            eprintln!("  {title:<44} run {run}/{runs} done");
            results.record(&title, WARD, &figures);
        }
    }
    Ok(())
}

async fn measure(dir: &Path, quick: bool) -> Result<Vec<(String, Figures)>, String> {
    let lone = if quick { 500 } else { 5_000 };
    let mut out = Vec::new();
    let log = Log::open(&dir.join("a"), RaftOptions::default()).await?;
    out.push(("a. lone creates, log alone (in process)".to_string(), log.lone(lone).await?));
    log.close().await;
    let log = Log::open(&dir.join("b"), RaftOptions::default()).await?;
    let per_writer = if quick { PER_WRITER / 8 } else { PER_WRITER };
    let (rate, per_fsync) = log.outstanding(per_writer).await?;
    let mut figures = Figures::default();
    figures.add("create/s, 64 outstanding", rate);
    figures.add("creates per fsync", per_fsync);
    out.push(("b. creates, log alone (in process)".to_string(), figures));
    log.close().await;
    if !quick {
        let log = Log::open(&dir.join("g1m"), RaftOptions::default()).await?;
        out.push(("g1m. a million creates, log alone (in process)".to_string(), log.steps().await?));
        log.close().await;
        // The same without snapshots: what the tree and the log cost without them.
        let never = RaftOptions { snapshot_log_percent: 0, snapshot_every: None, ..RaftOptions::default() };
        let log = Log::open(&dir.join("g1m-no-snapshots"), never).await?;
        out.push(("g1m. the same, no snapshots (in process)".to_string(), log.steps().await?));
        log.close().await;
    }
    Ok(out)
}

#[derive(Clone)]
struct Log {
    log: Arc<RaftLog>,
    /// One session per writer, as each of b's connections has its own; a session's write
    /// xids must grow, so each keeps its last.
    sessions: Arc<Vec<(SessionId, AtomicU64)>>,
    /// The log's server's figures: its fsyncs.
    metrics: Arc<Metrics>,
}

impl Log {
    async fn open(dir: &Path, options: RaftOptions) -> Result<Log, String> {
        let (core, local) = Local::serving();
        let metrics = local.metrics.clone();
        let log = durable::open(dir, core, local, options).await.map_err(|e| format!("open {}: {e}", dir.display()))?;
        let mut sessions = Vec::with_capacity(OUTSTANDING);
        for _ in 0..OUTSTANDING {
            let open = CommandOp::CreateSession { timeout_ms: 600_000, secret: SessionSecret([9; 16]), owner: None };
            match log.submit(command(SessionId(0), 0, open)).await.map_err(|e| e.to_string())?.outcome {
                Outcome::SessionCreated(id) => sessions.push((id, AtomicU64::new(0))),
                other => return Err(format!("creating a session: {other:?}")),
            }
        }
        let log = Log { log: Arc::new(log), sessions: Arc::new(sessions), metrics };
        log.create(0, "/w".into()).await?;
        Ok(log)
    }

    /// A create by writer `w`'s session.
    async fn create(&self, w: usize, path: String) -> Result<(), String> {
        let (session, last) = &self.sessions[w];
        let xid = last.fetch_add(1, Ordering::Relaxed) + 1;
        let op = Op::Create { path, data: vec![b'w'; 100], mode: CreateMode::Persistent };
        let applied = self.log.submit(command(*session, xid, CommandOp::Op(op))).await;
        match applied.map_err(|e| e.to_string())?.outcome {
            Outcome::Reply(Ok(_)) => Ok(()),
            other => Err(format!("create: {other:?}")),
        }
    }

    /// a's shape: one create at a time.
    async fn lone(&self, n: usize) -> Result<Figures, String> {
        let mut lat = Samples::with_capacity(n);
        let fsyncs = self.metrics.log_fsyncs();
        for i in 0..n {
            let t0 = Instant::now();
            self.create(0, format!("/w/a{i:07}")).await?;
            lat.push(t0.elapsed());
        }
        let mut f = Figures::default();
        f.latency("create", &mut lat);
        f.add("fsyncs per create", (self.metrics.log_fsyncs() - fsyncs) as f64 / n as f64);
        Ok(f)
    }

    /// b's shape: 64 writers, each with one create outstanding: creates per second, and
    /// creates per fsync.
    async fn outstanding(&self, per_writer: usize) -> Result<(f64, f64), String> {
        let fsyncs = self.metrics.log_fsyncs();
        let t0 = Instant::now();
        // Names no other call of this uses.
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let tag = CALLS.fetch_add(1, Ordering::Relaxed);
        let mut writers = Vec::with_capacity(OUTSTANDING);
        for w in 0..OUTSTANDING {
            let log = self.clone();
            writers.push(tokio::spawn(async move {
                for i in 0..per_writer {
                    log.create(w, format!("/w/b{tag}-{w:02}-{i:06}")).await?;
                }
                Ok::<(), String>(())
            }));
        }
        for writer in writers {
            writer.await.map_err(|e| format!("writer: {e}"))??;
        }
        let took = t0.elapsed().as_secs_f64().max(1e-9);
        let n = (OUTSTANDING * per_writer) as f64;
        Ok((n / took, n / (self.metrics.log_fsyncs() - fsyncs).max(1) as f64))
    }

    /// g1m's shape: a million creates, 64 outstanding, in ten steps; the rate of each.
    async fn steps(&self) -> Result<Figures, String> {
        let per_writer = 1_000_000 / STEPS / OUTSTANDING;
        let mut rates = Vec::with_capacity(STEPS);
        let mut f = Figures::default();
        for s in 0..STEPS {
            let (rate, _) = self.outstanding(per_writer).await?;
            rates.push(rate);
            f.add(format!("create/s, step {} of {STEPS}", s + 1), rate);
        }
        let (first, last) = (rates[0], rates[STEPS - 1]);
        f.add("create rate, last step / first step", last / first.max(1e-9));
        Ok(f)
    }

    async fn close(self) {
        if let Ok(log) = Arc::try_unwrap(self.log) {
            log.shutdown().await;
        }
    }
}

fn command(session: SessionId, xid: u64, op: CommandOp) -> Command {
    Command { time_ms: 1_000, session, xid, op }
}
