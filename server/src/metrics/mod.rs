//! The server's own figures, kept where they are produced and read by `/metrics`
//! ([`crate::admin::exposition`]) and ZooKeeper's four-letter words.
//!
//! * [`histogram`]: lock-free fixed-bucket histograms for hot paths.
//! * [`requests`]: per listener and operation: answered requests, latency, errors, bytes.
//! * [`log`]: log fsync latency and append batch sizes.
//! * [`locks`]: lock wait times and involuntary releases.
//! * [`snapshots`]: when the next snapshot is due, and how long the last one took.
//!
//! All of them belong to one server ([`Metrics`], held by its [`crate::local::Local`]), so
//! that servers sharing a process (tests, a simulated ensemble) count apart.

pub(crate) mod histogram;
pub(crate) mod locks;
pub(crate) mod log;
pub(crate) mod requests;
pub(crate) mod snapshots;

pub use requests::{Failure, Listener, Op};
pub(crate) use requests::{ListenerFigures, Stamp};

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Every figure of one server.
#[derive(Debug, Default)]
pub struct Metrics {
    pub ward: ListenerFigures,
    pub zookeeper: ListenerFigures,
    pub log: std::sync::Arc<log::LogFigures>,
    pub locks: locks::LockFigures,
    pub snapshots: std::sync::Arc<snapshots::SnapshotFigures>,
    /// Connections closed for passing their bound on queued outbound bytes.
    outbound_overflows: AtomicU64,
    /// Connections refused at accept for passing a connection limit (per address or in total).
    refused_connections: AtomicU64,
    /// Connections parked now (no request in flight, nothing queued; `conn::park`).
    pub parked: AtomicU64,
}

impl Metrics {
    pub fn listener(&self, listener: Listener) -> &ListenerFigures {
        match listener {
            Listener::Ward => &self.ward,
            Listener::ZooKeeper => &self.zookeeper,
        }
    }

    /// `fdatasync` calls that made log appends durable.
    pub fn log_fsyncs(&self) -> u64 {
        self.log.fsync.count()
    }

    pub(crate) fn count_outbound_overflow(&self) {
        self.outbound_overflows.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn outbound_overflows(&self) -> u64 {
        self.outbound_overflows.load(Ordering::Relaxed)
    }

    pub(crate) fn count_refused_connection(&self) {
        self.refused_connections.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn refused_connections(&self) -> u64 {
        self.refused_connections.load(Ordering::Relaxed)
    }
}

/// Connections open on one client listener, and who is at the other end of each (for the
/// console's sessions view).
#[derive(Debug, Default)]
pub struct OpenConnections {
    pub ward: AtomicU64,
    pub zookeeper: AtomicU64,
    /// Per connection: the client's address and the listener's protocol. A std mutex: one
    /// insert at accept and one removal at close, never held across an await.
    peers: std::sync::Mutex<HashMap<u64, (SocketAddr, &'static str)>>,
}

impl OpenConnections {
    /// Counts connection `conn` from `peer` on the listener of `protocol` (as the accept
    /// loops name it) until the guard drops.
    pub fn open(self: &std::sync::Arc<Self>, protocol: &'static str, conn: u64, peer: SocketAddr) -> OpenGuard {
        self.counter(protocol).fetch_add(1, Ordering::Relaxed);
        self.peers_lock().insert(conn, (peer, protocol));
        let zookeeper = std::ptr::eq(self.counter(protocol), &self.zookeeper);
        OpenGuard { counts: self.clone(), conn, zookeeper }
    }

    /// The client address and protocol of connection `conn`, while it is open.
    pub fn peer(&self, conn: u64) -> Option<(SocketAddr, &'static str)> {
        self.peers_lock().get(&conn).copied()
    }

    fn peers_lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (SocketAddr, &'static str)>> {
        // Single inserts and removals: a panic elsewhere cannot leave the map half-updated.
        self.peers.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    conn: u64,
    /// Which counter: a flag rather than the protocol's name, as it is kept in every
    /// connection's task.
    zookeeper: bool,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let counter = if self.zookeeper { &self.counts.zookeeper } else { &self.counts.ward };
        counter.fetch_sub(1, Ordering::Relaxed);
        self.counts.peers_lock().remove(&self.conn);
    }
}

/// What the replicated log knows of its Raft group (openraft's metrics), for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RaftFigures {
    /// This member's id.
    pub id: u64,
    /// The leader this member knows of, if any.
    pub leader: Option<u64>,
    /// `leader`, `follower`, `candidate`, `learner` or `shutdown`.
    pub role: &'static str,
    pub term: u64,
    pub last_log_index: u64,
    pub(crate) applied_index: u64,
    /// On the leader: each other member's id and how many entries it lags behind the
    /// leader's last log index.
    pub lag: Vec<(u64, u64)>,
    /// Elections this member started at once because its leader's peer port refused
    /// connections (`raft::gone_leader`).
    pub fast_elections: u64,
    /// On the leader: the other members it hears from.
    pub heard: Option<HeardFrom>,
    /// The ensemble's release level as this member knows it: the lowest of its members'
    /// (`crate::peer::level`); only the leader hears from every member.
    pub(crate) ensemble_level: u32,
    /// Each member's release level, `None` where this member has not heard it.
    pub(crate) member_levels: Vec<(u64, Option<u32>)>,
}

/// How many other members a leader has heard from within its lease, as `mntr` counts
/// ZooKeeper's learners.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeardFrom {
    /// Voters (ZooKeeper's synced followers).
    pub(crate) voters: usize,
    /// Members that do not vote (ZooKeeper's non-voting followers).
    pub(crate) learners: usize,
}
