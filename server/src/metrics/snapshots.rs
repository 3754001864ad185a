//! Snapshots: when the next one is due ([`crate::raft::snapshot_trigger`]) and how the last
//! ones went.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct SnapshotFigures {
    /// Bytes written to the log since the last snapshot began.
    pub(crate) log_bytes: AtomicU64,
    /// The last snapshot's size in bytes (0: none yet).
    pub snapshot_bytes: AtomicU64,
    /// The log size at which the next snapshot is due.
    pub(crate) threshold_bytes: AtomicU64,
    /// Snapshots begun: the state captured at an applied index.
    pub begun: AtomicU64,
    /// Snapshots written (or failed): serialized, fsynced and renamed into place.
    pub finished: AtomicU64,
    /// How long the last capture held the state's lock, in nanoseconds: how long writes waited.
    pub(crate) capture_ns: AtomicU64,
    /// How long the last snapshot took from capture to rename, in nanoseconds (writes go on).
    pub(crate) build_ns: AtomicU64,
}

impl SnapshotFigures {
    /// A snapshot began; capturing the state held its lock for `held`.
    pub fn begun(&self, held: Duration) {
        self.capture_ns.store(nanos(held), Ordering::Relaxed);
        self.begun.fetch_add(1, Ordering::Relaxed);
    }

    /// The snapshot begun last is written (or failed) after `took`.
    pub fn finished(&self, took: Duration) {
        self.build_ns.store(nanos(took), Ordering::Relaxed);
        self.finished.fetch_add(1, Ordering::Relaxed);
    }

    /// Snapshots begun and finished so far: a snapshot is in progress while they differ.
    pub fn progress(&self) -> (u64, u64) {
        (self.begun.load(Ordering::Relaxed), self.finished.load(Ordering::Relaxed))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
