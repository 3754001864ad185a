//! `ward-server`: runs a Ward server until Ctrl-C or SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;
use ward_server::core::Core;
use ward_server::log::{CommandLog, MemoryLog};
use ward_server::net::listener::Prebound;
use ward_server::raft::{self, EnsembleOptions};

mod args;
mod dev;

use args::{parse_args, Args, USAGE};

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
    if let Some(n) = args.dev_ensemble {
        return dev::run(n, &args).await.map_err(ward_server::Error::Config);
    }
    let (core, local) = Core::serving();
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
            Some(Arc::new(raft::open_member(dir, core.clone(), local.clone(), args.raft.clone(), ensemble).await?))
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
    // Default listeners that could not bind, said on stdout after the listening lines.
    let mut not_started = String::new();
    config.zookeeper = optional_listener(args.zk_listen, "zookeeper", "--zk-listen", &mut not_started)?;
    config.admin = optional_listener(args.admin_listen, "admin", "--admin-listen", &mut not_started)?;
    // The first line on stdout: scripts and tests read the address from it. The next ones,
    // if any, say where ZooKeeper clients, peers and the admin listener connect, then which
    // default listener could not start. One write for all: a reader that stops after the
    // first line must not make a later write fail.
    let mut lines = format!("ward-server listening on {addr}\n");
    if let Some(zk) = &config.zookeeper {
        lines.push_str(&format!("ward-server zookeeper listening on {}\n", zk.local_addr()?));
    }
    if let Some(peer) = peer_addr {
        lines.push_str(&format!("ward-server peer listening on {peer}\n"));
    }
    if let Some(admin) = &config.admin {
        lines.push_str(&format!("ward-server admin listening on {}\n", admin.local_addr()?));
    }
    lines.push_str(&not_started);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(lines.as_bytes())?;
    stdout.flush()?;
    drop(stdout);
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel();
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
    ward_server::serve_with(listener, config, core, local, log, stop).await?;
    if let Some(raft) = durable {
        raft.shutdown().await;
    }
    match failure.get() {
        Some(why) => Err(why.clone().into()),
        None => Ok(()),
    }
}

/// Binds a listener that has a default address. The default port is often taken (a real
/// ZooKeeper, another Ward): the server then runs without it, and says so in `not_started`
/// (printed on stdout with the listening lines). An explicit address must bind.
fn optional_listener(
    wanted: Option<(SocketAddr, bool)>,
    name: &str,
    flag: &str,
    not_started: &mut String,
) -> Result<Option<Prebound>, ward_server::Error> {
    let Some((addr, explicit)) = wanted else { return Ok(None) };
    match Prebound::bind(addr) {
        Ok(listener) => Ok(Some(listener)),
        Err(error) if !explicit => {
            tracing::warn!(%addr, %error, "{name} listener not started; use {flag} ADDR");
            not_started
                .push_str(&format!("ward-server {name} not listening: {addr} is taken ({error}); use {flag} ADDR\n"));
            Ok(None)
        }
        Err(error) => Err(ward_server::Error::Config(format!("{flag} {addr}: {error}"))),
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
