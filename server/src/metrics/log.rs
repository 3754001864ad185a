//! The durable log's figures: how long each `fdatasync` took, and how much each append
//! carried (group commit: many commands per Raft entry, several entries per append on a
//! follower catching up).

use super::histogram::{Histogram, Latency, LATENCY_NS};
use std::time::Duration;

/// Upper bounds of a batch's size: powers of two up to the proposer's 1024 commands.
pub(crate) const BATCH: [u64; 12] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, u64::MAX];

#[derive(Debug)]
pub struct LogFigures {
    /// Each `fdatasync` of a log segment (appends, truncations and purges), in nanoseconds.
    pub fsync: Latency,
    /// Raft entries per durable append.
    pub(crate) append_entries: Histogram<{ BATCH.len() }>,
    /// Client and session commands per durable append (summed over its entries).
    pub(crate) append_commands: Histogram<{ BATCH.len() }>,
}

impl Default for LogFigures {
    fn default() -> Self {
        LogFigures {
            fsync: Histogram::new(&LATENCY_NS),
            append_entries: Histogram::new(&BATCH),
            append_commands: Histogram::new(&BATCH),
        }
    }
}

impl LogFigures {
    /// An `fdatasync` of the log returned after `took`.
    pub fn fsynced(&self, took: Duration) {
        self.fsync.observe(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    }

    /// An append of `entries` Raft entries holding `commands` commands is durable.
    pub fn appended(&self, entries: usize, commands: usize) {
        self.append_entries.observe(entries as u64);
        self.append_commands.observe(commands as u64);
    }
}
