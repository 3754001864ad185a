//! `ward-server`: runs a Ward server until Ctrl-C or SIGTERM.

use std::collections::BTreeMap;
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
use ward_server::raft::{self, EnsembleOptions, RaftOptions};
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
  --ensemble 1=ADDR,2=ADDR,...  run as a member of a replicated ensemble: every member's id
                                and peer address (the same list on every member)
  --id N                        this member's id in --ensemble
  --peer-listen ADDR            where peers connect (default: this member's --ensemble address)
  --ensemble-name NAME          checked when members connect (default ward)
  --peer-route ID=ADDR,...      reach these members at ADDR instead of their listed address
                                (NAT, or a test's per-link proxy)
Logs go to stderr; RUST_LOG sets the level (e.g. info, ward_server=debug).";

struct Args {
    listen: SocketAddr,
    /// `None`: no ZooKeeper listener; `Some((addr, explicit))`.
    zk_listen: Option<(SocketAddr, bool)>,
    raft: RaftOptions,
    /// `None`: in memory only.
    data_dir: Option<PathBuf>,
    config: Config,
    ensemble: Option<Ensemble>,
}

struct Ensemble {
    id: u64,
    name: String,
    members: BTreeMap<u64, String>,
    peer_listen: String,
    routes: BTreeMap<u64, String>,
}

fn parse_args() -> Result<Args, String> {
    let mut listen = SocketAddr::from(([127, 0, 0, 1], 7181));
    let mut zk_listen = Some((ward_server::zk::DEFAULT_ADDR, false));
    let mut config = Config::default();
    let mut data_dir = Some(PathBuf::from("ward-data"));
    let mut raft = RaftOptions::default();
    let (mut members, mut id, mut peer_listen, mut name) = (None, None, None, String::from("ward"));
    let mut routes = BTreeMap::new();
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
            "--ensemble" => members = Some(parse_members(&value()?)?),
            "--id" => id = Some(value()?.parse::<u64>().map_err(|e| format!("--id: {e}"))?),
            "--peer-listen" => peer_listen = Some(value()?),
            "--ensemble-name" => name = value()?,
            "--peer-route" => {
                routes.extend(parse_members(&value()?).map_err(|e| e.replace("--ensemble", "--peer-route"))?)
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let ensemble = match (members, id) {
        (None, None) if peer_listen.is_none() && routes.is_empty() => None,
        (None, _) => return Err("--id and --peer-listen need --ensemble".into()),
        (Some(_), None) => return Err("--ensemble needs --id (this member's id in the list)".into()),
        (Some(members), Some(id)) => {
            let Some(own) = members.get(&id) else {
                return Err(format!("--id {id} is not in --ensemble ({:?})", members.keys().collect::<Vec<_>>()));
            };
            if data_dir.is_none() {
                return Err("--in-memory cannot be a member of an ensemble: a member's log must be durable".into());
            }
            let peer_listen = peer_listen.unwrap_or_else(|| own.clone());
            Some(Ensemble { id, name, members, peer_listen, routes })
        }
    };
    Ok(Args { listen, zk_listen, raft, data_dir, config, ensemble })
}

/// `1=host:port,2=host:port,...`: ids are unique and positive.
fn parse_members(list: &str) -> Result<BTreeMap<u64, String>, String> {
    let mut members = BTreeMap::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((id, addr)) = item.split_once('=') else {
            return Err(format!("--ensemble: {item:?} is not ID=ADDR"));
        };
        let id: u64 = id.trim().parse().map_err(|e| format!("--ensemble: member id {id:?}: {e}"))?;
        if id == 0 {
            return Err("--ensemble: member ids start at 1".into());
        }
        if members.insert(id, addr.trim().to_string()).is_some() {
            return Err(format!("--ensemble: member {id} is listed twice"));
        }
    }
    if members.is_empty() {
        return Err("--ensemble: no members".into());
    }
    Ok(members)
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
    let mut peer_addr = None;
    let durable = match &args.data_dir {
        Some(dir) => {
            let ensemble = match args.ensemble {
                None => None,
                Some(e) => {
                    let peer_listener = tokio::net::TcpListener::bind(&e.peer_listen).await.map_err(|error| {
                        ward_server::Error::Config(format!("--peer-listen {}: {error}", e.peer_listen))
                    })?;
                    peer_addr = Some(peer_listener.local_addr()?);
                    let routes = e.routes.into_iter().collect();
                    Some(EnsembleOptions { id: e.id, name: e.name, members: e.members, peer_listener, routes })
                }
            };
            Some(Arc::new(raft::open_member(dir, core.clone(), args.raft.clone(), ensemble).await?))
        }
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
    if let Some(peer) = peer_addr {
        lines.push_str(&format!("ward-server peer listening on {peer}\n"));
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
