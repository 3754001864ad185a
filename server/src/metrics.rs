//! Process-wide counters that do not belong to any one piece of state.
//!
//! One server runs per process in production, so these are that server's figures; several
//! in-process test servers share them.

use std::sync::atomic::{AtomicU64, Ordering};

/// `fdatasync` calls that made log appends durable.
static LOG_FSYNCS: AtomicU64 = AtomicU64::new(0);

pub fn count_log_fsync() {
    LOG_FSYNCS.fetch_add(1, Ordering::Relaxed);
}

pub fn log_fsyncs() -> u64 {
    LOG_FSYNCS.load(Ordering::Relaxed)
}
