//! Snapshots: when the next one is due ([`crate::raft::snapshot_trigger`]) and how the last
//! ones went. Process-wide, like the log.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Bytes written to the log since the last snapshot began.
pub static LOG_BYTES: AtomicU64 = AtomicU64::new(0);
/// The last snapshot's size in bytes (0: none yet).
pub static SNAPSHOT_BYTES: AtomicU64 = AtomicU64::new(0);
/// The log size at which the next snapshot is due.
pub static THRESHOLD_BYTES: AtomicU64 = AtomicU64::new(0);
/// Snapshots begun: the state captured at an applied index.
pub static BEGUN: AtomicU64 = AtomicU64::new(0);
/// Snapshots written (or failed): serialized, fsynced and renamed into place.
pub static FINISHED: AtomicU64 = AtomicU64::new(0);
/// How long the last capture held the state's lock, in nanoseconds: how long writes waited.
pub static CAPTURE_NS: AtomicU64 = AtomicU64::new(0);
/// How long the last snapshot took from capture to rename, in nanoseconds (writes go on).
pub static BUILD_NS: AtomicU64 = AtomicU64::new(0);

/// A snapshot began; capturing the state held its lock for `held`.
pub fn begun(held: Duration) {
    CAPTURE_NS.store(nanos(held), Ordering::Relaxed);
    BEGUN.fetch_add(1, Ordering::Relaxed);
}

/// The snapshot begun last is written (or failed) after `took`.
pub fn finished(took: Duration) {
    BUILD_NS.store(nanos(took), Ordering::Relaxed);
    FINISHED.fetch_add(1, Ordering::Relaxed);
}

/// Snapshots begun and finished so far: a snapshot is in progress while they differ.
pub fn progress() -> (u64, u64) {
    (BEGUN.load(Ordering::Relaxed), FINISHED.load(Ordering::Relaxed))
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
