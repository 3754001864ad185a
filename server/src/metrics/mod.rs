//! The server's own figures, kept where they are produced and read by `/metrics`
//! ([`crate::admin::exposition`]) and ZooKeeper's four-letter words.
//!
//! * [`histogram`]: lock-free fixed-bucket histograms for hot paths.
//! * [`requests`]: per listener and operation: answered requests, latency, errors, bytes
//!   (process-wide).
//! * [`log`]: log fsync latency and append batch sizes (process-wide).
//! * [`locks`]: lock wait times and involuntary releases (process-wide).
//!
//! Process-wide figures are that server's in production, where one server runs per process;
//! several in-process test servers share them.

pub mod histogram;
pub mod locks;
pub mod log;
pub mod requests;

pub use requests::{Failure, Listener, ListenerFigures, Op, Stamp};

use std::sync::atomic::{AtomicU64, Ordering};

/// `fdatasync` calls that made log appends durable.
pub fn log_fsyncs() -> u64 {
    log::FSYNC.count()
}

/// Connections closed for passing their bound on queued outbound bytes.
static OUTBOUND_OVERFLOWS: AtomicU64 = AtomicU64::new(0);

pub fn count_outbound_overflow() {
    OUTBOUND_OVERFLOWS.fetch_add(1, Ordering::Relaxed);
}

pub fn outbound_overflows() -> u64 {
    OUTBOUND_OVERFLOWS.load(Ordering::Relaxed)
}

/// Connections refused at accept for passing a connection limit (per address or in total).
static REFUSED_CONNECTIONS: AtomicU64 = AtomicU64::new(0);

pub fn count_refused_connection() {
    REFUSED_CONNECTIONS.fetch_add(1, Ordering::Relaxed);
}

pub fn refused_connections() -> u64 {
    REFUSED_CONNECTIONS.load(Ordering::Relaxed)
}

/// Connections open on one client listener.
#[derive(Debug, Default)]
pub struct OpenConnections {
    pub ward: AtomicU64,
    pub zookeeper: AtomicU64,
}

impl OpenConnections {
    /// Counts a connection of `protocol` (as the accept loops name it) until the guard drops.
    pub fn open(self: &std::sync::Arc<Self>, protocol: &'static str) -> OpenGuard {
        self.counter(protocol).fetch_add(1, Ordering::Relaxed);
        OpenGuard { counts: self.clone(), protocol }
    }

    fn counter(&self, protocol: &str) -> &AtomicU64 {
        match protocol {
            "ZooKeeper" => &self.zookeeper,
            _ => &self.ward,
        }
    }
}

/// One open connection; dropped when its task ends.
pub struct OpenGuard {
    counts: std::sync::Arc<OpenConnections>,
    protocol: &'static str,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.counts.counter(self.protocol).fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the replicated log knows of its Raft group (openraft's metrics), for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RaftFigures {
    /// `leader`, `follower`, `candidate`, `learner` or `shutdown`.
    pub role: &'static str,
    pub term: u64,
    pub last_log_index: u64,
    pub applied_index: u64,
    /// On the leader: each other member's id and how many entries it lags behind the
    /// leader's last log index.
    pub lag: Vec<(u64, u64)>,
}
