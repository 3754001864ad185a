//! Ward's server: a tree of znodes for many client sessions, changed only by commands
//! applied in log order.
//!
//! ```text
//! connection ─► reader ─► reads ──────────────────────────────► writer ─► reply
//!                    └──► writes: prep ─► Replication::submit ─► Core::apply ─► writer
//!                                                                   └─► watches fire
//! ```
//!
//! # Layout
//! * [`command`]: `Command` (what is logged), `Outcome`, `Change`.
//! * [`state`]: the state machine (tree + session table + last zxid) and its pure `apply`.
//! * [`tree`]: the data tree and its mutations, with undo for multi.
//! * [`lock`]: lock queues derived from the tree: holders, and grants after deletes.
//! * [`replication`]: the replication handle every write passes through (`Replication`:
//!   submit, barrier, membership, figures); a single server's log in memory.
//! * [`peer`]: the link between ensemble members (framing, hello, pooled connections).
//! * [`raft`]: the durable, replicated log: openraft over fsynced segments, snapshots, group
//!   commit, forwarding to the leader, leader-only duties.
//! * [`metrics`]: requests per listener and operation, log fsyncs and batches, lock waits,
//!   connections refused or overflowed, open connections, Raft figures.
//! * [`admin`]: the admin HTTP listener: Prometheus `/metrics`, `/healthz`, `/readyz`,
//!   `/digest`, and the web console with its JSON API.
//! * [`digest`]: a digest of the replicated state, to compare members.
//! * [`core`]: the state machine behind its lock, and the sink its effects go to.
//! * [`local`]: this server's own registries (watches, session deadlines), the sink of a
//!   serving server.
//! * [`prep`]: pure checks before a write is logged.
//! * [`read`]: reads, and arming watches in the same view.
//! * [`watch`]: the watch registry.
//! * [`session`]: deadlines, touch rounds, readiness to lead, and the expiry sweep.
//! * [`cleanup`]: the leader's deletion of unused containers and TTL nodes.
//! * [`lock_delay`]: the leader's end of lock-delays: deleting held-over lock contenders.
//! * [`conn`]: a client's connection: its types, the order of its replies and pushes, its
//!   outbox, writer, parking and byte counts.
//! * [`net`]: Ward's protocol: accept loop and connection limits, handshake, the reader.
//! * [`zk`]: the optional ZooKeeper-protocol listener on the same core.
//! * [`acl`]: ACLs, identities and `AddAuth`, ZooKeeper's rules for who may do what.
//! * [`tls`]: TLS for the client listeners and the peer link: certificates from PEM files,
//!   reloaded on SIGHUP; a client certificate's subject.
//! * [`unsafe_break`]: promises broken on purpose for the tests that show `ward check`
//!   catching each (hidden, refused unless a test's environment allows it).
//! * [`config`], [`error`].
//!
//! # What the crate exports
//! Only what the `ward-server` binary, the tests, the `ward` CLI and the bench use; the rest
//! is `pub(crate)` (`server/tests/surface.rs` checks it):
//! * [`serve`], [`serve_with`], [`Server`], [`Config`], [`Error`]: a server in process.
//! * [`core::Core`], [`local::Local`], [`state::StateMachine`], [`command`]'s `Command`,
//!   `CommandOp`, `Outcome`: the state and the commands that change it, for tests that drive
//!   the log directly.
//! * [`replication`]: `Replication`, `MemoryLog`, `Pending`.
//! * [`raft`]: `open`, `open_member`, `RaftLog`, `RaftOptions`, `EnsembleOptions`,
//!   `BatchLimits`, `OnLoss`, `OpenError`, `FileError`; and, for the storage tests and the
//!   bench, `wal`, `record`, `log_store`, `state_machine`, `snapshot_file` and `types`.
//! * [`tls`]: the certificate files and configurations the binary loads; [`acl`]'s
//!   `identity::SuperDigest`; [`admin`]'s `DEFAULT_ADDR` and console token; [`zk`]'s
//!   `DEFAULT_ADDR`; [`net`]'s `listener::Prebound`; [`metrics::Metrics`];
//!   [`session::SessionTracker`]; [`unsafe_break`] for the tests of `ward check`.

// What nothing outside the crate uses is `pub(crate)` (docs/architecture.md, "What the
// crate exports"); the module map above and the modules' own maps still link to the
// crate-private modules, for whoever reads the code with `--document-private-items`.
#![deny(unreachable_pub)]
#![allow(rustdoc::private_intra_doc_links)]

pub mod acl;
pub mod admin;
pub(crate) mod cleanup;
pub mod command;
pub mod config;
pub(crate) mod conn;
pub mod core;
pub(crate) mod digest;
pub(crate) mod error;
pub mod local;
pub(crate) mod lock;
pub(crate) mod lock_delay;
pub mod metrics;
pub mod net;
pub(crate) mod peer;
pub(crate) mod prep;
pub mod raft;
pub(crate) mod read;
pub mod replication;
pub mod session;
pub mod state;
mod sync;
pub mod tls;
pub(crate) mod tree;
pub mod unsafe_break;
pub(crate) mod watch;
pub mod zk;

pub use config::Config;
pub use error::Error;

use crate::core::Core;
use crate::local::Local;
use crate::replication::{MemoryLog, Replication};
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What every connection shares.
pub struct Server {
    pub core: Arc<Core>,
    /// This server's watches and sessions: what `core` publishes to.
    pub local: Arc<Local>,
    /// The log every change is ordered by.
    pub replication: Arc<dyn Replication>,
    pub config: Config,
    /// Connections open on each client listener (for `/metrics`).
    pub connections: Arc<metrics::OpenConnections>,
    /// Connections open against the limits, over both client listeners.
    pub limits: Arc<net::limits::ConnLimits>,
    next_conn: AtomicU64,
}

/// Serves clients on `listener` from an in-memory log (nothing survives a restart) until
/// `shutdown` completes. For tests and throwaway servers; see [`serve_with`].
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let (core, local) = Local::serving();
    let log: Arc<dyn Replication> = Arc::new(MemoryLog::new(core.clone()));
    serve_with(listener, config, core, local, log, shutdown).await
}

/// Serves clients on `listener`, with every change going through `log` into `core` (which
/// publishes to `local`), until
/// `shutdown` completes; then closes every connection and returns once their tasks have
/// ended.
pub async fn serve_with(
    listener: TcpListener,
    config: Config,
    core: Arc<Core>,
    local: Arc<Local>,
    log: Arc<dyn Replication>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    local.watches.set_history_limit(config.watch_history_bytes);
    config.validate()?;
    let limits = Arc::new(net::limits::ConnLimits::new(
        config.max_connections,
        config.max_connections_per_ip,
        local.metrics.clone(),
    ));
    let server = Arc::new(Server {
        core,
        local,
        replication: log,
        config,
        connections: Arc::default(),
        limits,
        next_conn: AtomicU64::new(1),
    });
    let cancel = CancellationToken::new();
    let tasks = TaskTracker::new();
    tasks.spawn(session::expiry::run(
        server.local.clone(),
        server.replication.clone(),
        server.config.expiry_tick,
        cancel.clone(),
    ));
    tasks.spawn(cleanup::run(server.clone(), cancel.clone()));
    tasks.spawn(lock_delay::run(server.clone(), cancel.clone()));
    if let Ok(addr) = listener.local_addr() {
        let c = &server.config;
        tracing::info!(
            %addr,
            max_connections = c.max_connections,
            max_connections_per_ip = c.max_connections_per_ip,
            max_outbound_bytes = c.max_outbound_bytes,
            max_in_flight_per_connection = c.max_inflight_per_conn,
            watch_history_bytes = c.watch_history_bytes,
            tls = c.tls.is_some(),
            worker_threads = tokio::runtime::Handle::current().metrics().num_workers(),
            "serving"
        );
    }
    if let Some(zk) = &server.config.zookeeper {
        let zk_listener = zk.to_tokio()?;
        tasks.spawn(zk::accept_loop(server.clone(), zk_listener, None, tasks.clone(), cancel.clone()));
    }
    if let (Some(zk), Some(tls)) = (&server.config.zookeeper_tls, &server.config.tls) {
        let zk_listener = zk.to_tokio()?;
        let tls = Some(tls.clone());
        tasks.spawn(zk::accept_loop(server.clone(), zk_listener, tls, tasks.clone(), cancel.clone()));
    }
    if let Some(admin) = &server.config.admin {
        let admin_listener = admin.to_tokio()?;
        tasks.spawn(admin::serve(server.clone(), admin_listener, cancel.clone()));
    }
    let local = server.local.clone();
    tokio::select! {
        _ = shutdown => tracing::info!("shutting down"),
        _ = net::listener::accept_loop(server, listener, tasks.clone(), cancel.clone()) => {}
    }
    cancel.cancel();
    // Parked connections wait on their sockets and outboxes, not on their tokens.
    local.watches.wake_parked();
    tasks.close();
    tasks.wait().await;
    Ok(())
}

/// Wall-clock milliseconds since the Unix epoch, stamped on commands by the accepting
/// server (apply never reads a clock).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod state_tests;

#[cfg(test)]
mod cleanup_tests;

#[cfg(test)]
mod lock_delay_tests;

// The loom models of the state connection tasks and apply share (`--cfg ward_loom`).
#[cfg(all(test, ward_loom))]
mod loom_tests;

#[cfg(test)]
mod acl_tests;
