//! `ward-server`: runs a Ward server until Ctrl-C or SIGTERM.

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use ward_server::local::Local;
use ward_server::raft::{self, EnsembleOptions};
use ward_server::replication::{MemoryLog, Replication};

mod args;
mod dev;
mod error;
mod listen;
mod logging;
mod reload;

use args::Args;
use error::StartError;

fn main() -> ExitCode {
    // `--help`, `--version`: stdout, exit 0; a bad flag: stderr, exit 2.
    let cli = args::Cli::parse();
    let args = match args::load(cli) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("ward-server: {error}");
            return ExitCode::from(StartError::from(error).exit_code());
        }
    };
    logging::init(args.log_format);
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = worker_threads(args.worker_threads) {
        runtime.worker_threads(n);
    }
    let outcome =
        runtime.enable_all().build().map_err(StartError::Runtime).and_then(|runtime| runtime.block_on(run(args)));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "ward-server stopped");
            ExitCode::from(error.exit_code())
        }
    }
}

/// How many workers the runtime gets; `None`: tokio's own choice (TOKIO_WORKER_THREADS).
///
/// Unless told, one per core but one: the log's I/O thread, which does every write and
/// fdatasync, needs a core under write load, and on a machine with few cores a second
/// worker mostly steals tasks woken on the first, a wake-up each time (docs/benchmarks.md,
/// "Worker threads": on 2 cores one worker was faster on every workload measured).
fn worker_threads(given: Option<usize>) -> Option<usize> {
    if given.is_some() {
        return given;
    }
    if args::env::tokio_sizes_workers() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some(cores.saturating_sub(1).max(1))
}

/// Seeds `dir` from `backup` as this start's member (`--restore`).
async fn restore(
    backup: &std::path::Path,
    dir: &std::path::Path,
    ensemble: Option<&EnsembleOptions>,
    options: &raft::RaftOptions,
) -> Result<(), StartError> {
    let single = std::collections::BTreeMap::from([(1, String::new())]);
    let (me, members) = match ensemble {
        Some(e) => ((e.id, e.name.as_str(), true), &e.members),
        None => ((1, "ward", false), &single),
    };
    let restored = raft::restore(backup, dir, me, members, options.segment_bytes).await?;
    let h = restored.header;
    tracing::info!(from = %h.ensemble, member = h.member, zxid = h.zxid, index = h.index, "restored from a backup");
    Ok(())
}

async fn run(args: Args) -> Result<(), StartError> {
    args.config.validate()?;
    if let Some(n) = args.dev_ensemble {
        return Ok(dev::run(n, &args).await?);
    }
    // Before anything listens: a TLS file the server cannot use stops the start.
    let tls = args.tls.clone().map(|files| files.load().map(Arc::new)).transpose()?;
    let peer_tls = args.peer_tls.clone().map(|files| files.load().map(Arc::new)).transpose()?;
    reload::on_sighup(tls.clone(), peer_tls.clone());
    let (core, local) = Local::serving();
    // Before the log is replayed: the replay fills the history.
    local.watches.set_history_limit(args.config.watch_history_bytes);
    let mut peer_addr = None;
    let durable = match &args.data_dir {
        Some(dir) => {
            let ensemble = match args.ensemble {
                None => None,
                Some(e) => {
                    let peer_listener = listen::bind_tokio(&e.peer_listen, "peer")?;
                    peer_addr = Some(peer_listener.local_addr().map_err(ward_server::Error::from)?);
                    let routes = e.routes.into_iter().collect();
                    Some(EnsembleOptions {
                        id: e.id,
                        name: e.name,
                        members: e.members,
                        peer_listener,
                        routes,
                        peer_tls: peer_tls.clone(),
                    })
                }
            };
            if let Some(backup) = &args.restore {
                restore(backup, dir, ensemble.as_ref(), &args.raft).await?;
            }
            if let Some(e) = ensemble.as_ref().filter(|_| args.force_new_ensemble) {
                let addr = e.members.get(&e.id).map_or("", String::as_str);
                let me = (e.id, e.name.as_str(), addr);
                let forced = raft::force_new_ensemble(dir, me, args.raft.segment_bytes, args.raft.on_loss).await?;
                tracing::warn!(
                    from = %forced.from,
                    index = forced.index,
                    zxid = forced.zxid,
                    replayed = forced.replayed,
                    kept_at = %forced.kept_at.display(),
                    "--force-new-ensemble: this member alone is the ensemble now; add members back with `ward members add`, and remove the directory kept aside once satisfied"
                );
            }
            if args.raft.on_loss == raft::OnLoss::Accept {
                tracing::warn!(
                    dir = %dir.display(),
                    "accept-data-loss is set: a log found with missing or cut files starts with what remains"
                );
            }
            Some(Arc::new(
                raft::open_member(dir, core.clone(), local.clone(), args.raft.clone(), ensemble)
                    .await
                    .map_err(ward_server::Error::from)?,
            ))
        }
        None => {
            tracing::warn!("--in-memory: nothing is written to disk; a restart loses every node and session");
            None
        }
    };
    let mut log: Arc<dyn Replication> = match &durable {
        Some(raft) => raft.clone(),
        None => Arc::new(MemoryLog::new(core.clone())),
    };
    if let Some(broken) = args.unsafe_break {
        tracing::warn!(%broken, "unsafe break: this server breaks a promise on purpose, for a test");
        log = ward_server::unsafe_break::wrap(log, broken);
    }
    let listener = listen::bind_tokio(&args.listen, "client")?;
    let mut config = args.config;
    // Default listeners that could not bind, said on stdout after the listening lines.
    let mut not_started = String::new();
    config.zookeeper = listen::bind_optional(args.zk_listen.as_ref(), "zookeeper", &mut not_started)?;
    config.admin = listen::bind_optional(args.admin_listen.as_ref(), "admin", &mut not_started)?;
    config.tls = tls;
    config.zookeeper_tls = listen::bind_optional(args.zk_tls_listen.as_ref(), "zookeeper tls", &mut not_started)?;
    print_listening(&listener, &config, peer_addr, &not_started)?;
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel();
    if let Some(raft) = durable.clone() {
        tokio::spawn(async move {
            let _ = failed_tx.send(raft.failed().await);
        });
    }
    let failure = Arc::new(std::sync::OnceLock::new());
    let failure_seen = failure.clone();
    let leading = durable.clone();
    let stop = async move {
        tokio::select! {
            _ = shutdown_signal() => {
                // Still serving: writes submitted while the leadership moves go on to the
                // new leader, and only then do this member's clients move elsewhere.
                if let Some(raft) = leading {
                    raft.hand_over_leadership(HAND_OVER_WAIT).await;
                }
            }
            Ok(why) = failed_rx => {
                tracing::error!(reason = %why, "the log failed; stopping rather than acknowledge writes that may not be durable");
                let _ = failure_seen.set(why);
            }
        }
    };
    ward_server::serve_with(listener, config, core, local, log, stop).await?;
    if let Some(raft) = durable {
        if failure.get().is_none() {
            raft.snapshot_before_stop(SNAPSHOT_AT_STOP_WAIT).await;
        }
        raft.shutdown().await;
    }
    match failure.get() {
        Some(why) => Err(ward_server::Error::from(why.clone()).into()),
        None => Ok(()),
    }
}

/// The first line on stdout: scripts and tests read the address from it. The next ones, if
/// any, say where ZooKeeper clients (plain, then TLS), peers and the admin listener
/// connect, then which default listener could not start, and last what a newcomer can do
/// next: open the web console, list the tree with the CLI ([`next_steps`]). Readers find
/// the listening lines by their prefix, so the lines after them move none. One write for
/// all: a reader that stops after the first line must not make a later write fail.
fn print_listening(
    listener: &tokio::net::TcpListener,
    config: &ward_server::Config,
    peer_addr: Option<std::net::SocketAddr>,
    not_started: &str,
) -> Result<(), StartError> {
    let addr = |a: std::io::Result<std::net::SocketAddr>| a.map_err(ward_server::Error::from);
    let client = addr(listener.local_addr())?;
    let mut lines = format!("ward-server listening on {client}\n");
    if let Some(zk) = &config.zookeeper {
        lines.push_str(&format!("ward-server zookeeper listening on {}\n", addr(zk.local_addr())?));
    }
    if let Some(zk) = &config.zookeeper_tls {
        lines.push_str(&format!("ward-server zookeeper tls listening on {}\n", addr(zk.local_addr())?));
    }
    if let Some(peer) = peer_addr {
        lines.push_str(&format!("ward-server peer listening on {peer}\n"));
    }
    let admin = config.admin.as_ref().map(|admin| addr(admin.local_addr())).transpose()?;
    if let Some(admin) = admin {
        lines.push_str(&format!("ward-server admin listening on {admin}\n"));
    }
    lines.push_str(not_started);
    lines.push_str(&next_steps(client, admin, config.tls.is_some()));
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(lines.as_bytes()).and_then(|()| stdout.flush()).map_err(StartError::Stdout)
}

/// The lines after the listening ones: where the web console is (when the admin listener
/// runs) and a first CLI command against this server. An address bound to every interface
/// is shown as the loopback one, which a browser or `ward` on this machine can reach.
fn next_steps(client: std::net::SocketAddr, admin: Option<std::net::SocketAddr>, tls: bool) -> String {
    let reachable = |mut a: std::net::SocketAddr| {
        if a.ip().is_unspecified() {
            a.set_ip(match a {
                std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        a
    };
    let mut lines = String::new();
    if let Some(admin) = admin {
        lines.push_str(&format!("web console: http://{}/\n", reachable(admin)));
    }
    // A TLS listener needs the CA that signed its certificate (docs/security.md "TLS").
    let ca = if tls { " --tls-ca CA.pem" } else { "" };
    lines.push_str(&format!("try: ward --server {}{ca} ls /\n", reachable(client)));
    lines
}

/// How long a leader stopped cleanly waits for a follower to take its leadership before it
/// stops anyway (the others then elect one after their timeout).
const HAND_OVER_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// How long a clean stop waits for the snapshot it takes (a large tree takes seconds to
/// write); past it the stop goes on and the next start replays the log instead.
const SNAPSHOT_AT_STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

pub(crate) async fn shutdown_signal() {
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
