//! `ward-server`: runs a Ward server until Ctrl-C or SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;
use ward_server::core::Core;
use ward_server::log::{CommandLog, MemoryLog};
use ward_server::raft::{self, RaftOptions};
use ward_server::Config;

const USAGE: &str = "usage: ward-server [--listen ADDR] [--zk-listen ADDR|off] [--data-dir DIR | --in-memory] [--min-session-timeout-ms N] [--max-session-timeout-ms N]
  --listen ADDR                 client address (default 127.0.0.1:7181; port 0 picks a free one)
  --zk-listen ADDR|off          ZooKeeper-protocol address (default 127.0.0.1:2181, skipped with a
                                warning if that is taken; an explicit ADDR must bind)
  --data-dir DIR                where the log and snapshots live (default ./ward-data)
  --in-memory                   keep nothing on disk: everything is lost when the server stops
  --segment-mb N                size of each preallocated log segment (default 64)
  --snapshot-every N            take a snapshot after N log entries, then purge the log (default 5000)
  --min-session-timeout-ms N    shortest session timeout granted (default 4000)
  --max-session-timeout-ms N    longest session timeout granted (default 40000)
Logs go to stderr; RUST_LOG sets the level (e.g. info, ward_server=debug).";

struct Args {
    listen: SocketAddr,
    /// `None`: no ZooKeeper listener; `Some((addr, explicit))`.
    zk_listen: Option<(SocketAddr, bool)>,
    raft: RaftOptions,
    /// `None`: in memory only.
    data_dir: Option<PathBuf>,
    config: Config,
}

fn parse_args() -> Result<Args, String> {
    let mut listen = SocketAddr::from(([127, 0, 0, 1], 7181));
    let mut zk_listen = Some((ward_server::zk::DEFAULT_ADDR, false));
    let mut config = Config::default();
    let mut data_dir = Some(PathBuf::from("ward-data"));
    let mut raft = RaftOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--listen" => listen = value()?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--zk-listen" => {
                zk_listen = match value()?.as_str() {
                    "off" => None,
                    addr => Some((addr.parse().map_err(|e| format!("--zk-listen: {e}"))?, true)),
                }
            }
            "--data-dir" => data_dir = Some(PathBuf::from(value()?)),
            "--in-memory" => data_dir = None,
            "--segment-mb" => {
                let mb: u64 = value()?.parse().map_err(|e| format!("--segment-mb: {e}"))?;
                if mb == 0 {
                    return Err("--segment-mb must be at least 1".into());
                }
                raft.segment_bytes = mb << 20;
            }
            "--snapshot-every" => {
                let n: u64 = value()?.parse().map_err(|e| format!("--snapshot-every: {e}"))?;
                if n == 0 {
                    return Err("--snapshot-every must be at least 1".into());
                }
                raft.snapshot_every = n;
                raft.keep_after_snapshot = raft.keep_after_snapshot.min(n);
            }
            "--min-session-timeout-ms" => config.min_session_timeout = millis(&value()?)?,
            "--max-session-timeout-ms" => config.max_session_timeout = millis(&value()?)?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Args { listen, zk_listen, raft, data_dir, config })
}

fn millis(s: &str) -> Result<Duration, String> {
    s.parse().map(Duration::from_millis).map_err(|e| format!("{s:?}: {e}"))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("ward-server: {why}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let filter = std::env::var("RUST_LOG").ok().and_then(|s| Targets::from_str(&s).ok());
    // openraft narrates every start and stop at info; keep its warnings only by default.
    let filter = filter.unwrap_or_else(|| {
        Targets::new().with_default(tracing::Level::INFO).with_target("openraft", tracing::Level::WARN)
    });
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(filter)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(error) => {
            tracing::error!(%error, "cannot start the runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "ward-server stopped");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), ward_server::Error> {
    args.config.validate()?;
    let core = Arc::new(Core::default());
    let durable = match &args.data_dir {
        Some(dir) => Some(Arc::new(raft::open(dir, core.clone(), args.raft.clone()).await?)),
        None => {
            tracing::warn!("--in-memory: nothing is written to disk; a restart loses every node and session");
            None
        }
    };
    let log: Arc<dyn CommandLog> = match &durable {
        Some(raft) => raft.clone(),
        None => Arc::new(MemoryLog::new(core.clone())),
    };
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let addr = listener.local_addr()?;
    let mut config = args.config;
    config.zookeeper = match args.zk_listen {
        None => None,
        Some((zk_addr, explicit)) => match ward_server::zk::ZkListener::bind(zk_addr) {
            Ok(zk) => Some(zk),
            // The default port is often taken (a real ZooKeeper, another Ward): serve without.
            Err(error) if !explicit => {
                tracing::warn!(addr = %zk_addr, %error, "ZooKeeper listener not started; use --zk-listen ADDR");
                None
            }
            Err(error) => return Err(error.into()),
        },
    };
    // The first line on stdout: scripts and tests read the address from it. The second, if
    // any, says where ZooKeeper clients connect. One write for both: a reader that stops
    // after the first line must not make a later write fail.
    let mut lines = format!("ward-server listening on {addr}\n");
    if let Some(zk) = &config.zookeeper {
        lines.push_str(&format!("ward-server zookeeper listening on {}\n", zk.local_addr()?));
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(lines.as_bytes())?;
    stdout.flush()?;
    drop(stdout);
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel::<String>();
    if let Some(raft) = durable.clone() {
        tokio::spawn(async move {
            let _ = failed_tx.send(raft.failed().await);
        });
    }
    let failure = Arc::new(std::sync::OnceLock::new());
    let failure_seen = failure.clone();
    let stop = async move {
        tokio::select! {
            _ = shutdown_signal() => {}
            Ok(why) = failed_rx => {
                tracing::error!(reason = %why, "the log failed; stopping rather than acknowledge writes that may not be durable");
                let _ = failure_seen.set(why);
            }
        }
    };
    ward_server::serve_with(listener, config, core, log, stop).await?;
    if let Some(raft) = durable {
        raft.shutdown().await;
    }
    match failure.get() {
        Some(why) => Err(ward_server::Error::Storage(why.clone())),
        None => Ok(()),
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
