//! Lock handoffs: how long granted waiters waited, and holders that lost their lock because
//! their session expired.
//!
//! A wait runs from the creation of the waiter's contender node (its `ctime`, stamped by
//! the member that accepted the acquire) to the moment this server applies the release
//! that grants it and pushes the grant to the waiter's connection. The two instants come
//! from two clocks on an ensemble; a negative difference counts as no wait.

use super::histogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds of a lock wait, in milliseconds: 1 ms to an hour.
pub(crate) const WAIT_MS: [u64; 21] = [
    1,
    2,
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    30_000,
    60_000,
    120_000,
    300_000,
    600_000,
    1_800_000,
    3_600_000,
    u64::MAX,
];

/// Milliseconds per second, to expose [`WAIT_MS`] in seconds.
pub(crate) const MILLIS: f64 = 1e3;

#[derive(Debug)]
pub struct LockFigures {
    /// Waits of the grants this server delivered, in milliseconds.
    pub waits: Histogram<{ WAIT_MS.len() }>,
    /// Locks released because their holder's session expired.
    involuntary: AtomicU64,
    /// When this server started, by the wall clock: its log opens (and replays) after that.
    started_ms: i64,
}

impl Default for LockFigures {
    fn default() -> Self {
        LockFigures { waits: Histogram::new(&WAIT_MS), involuntary: AtomicU64::new(0), started_ms: crate::now_ms() }
    }
}

impl LockFigures {
    /// This server pushed a grant to a waiter whose contender was created at `ctime_ms`.
    pub fn granted(&self, ctime_ms: i64) {
        let waited = crate::now_ms().saturating_sub(ctime_ms).max(0);
        self.waits.observe(u64::try_from(waited).unwrap_or(0));
    }

    /// An expiry stamped at `stamped_ms` released `held` locks. Expiries stamped before this
    /// server started are history a restarted member replays from its log: they were counted
    /// (if at all) by the process that saw them happen.
    pub(crate) fn released_by_expiry(&self, held: usize, stamped_ms: i64) {
        if held > 0 && stamped_ms >= self.started_ms {
            self.involuntary.fetch_add(held as u64, Ordering::Relaxed);
        }
    }

    pub(crate) fn involuntary_releases(&self) -> u64 {
        self.involuntary.load(Ordering::Relaxed)
    }
}
