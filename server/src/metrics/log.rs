//! The durable log's figures: how long each `fdatasync` took, and how much each append
//! carried (group commit: many commands per Raft entry, several entries per append on a
//! follower catching up). Process-wide, like the log itself.

use super::histogram::{Histogram, Latency, LATENCY_NS};
use std::time::Duration;

/// Upper bounds of a batch's size: powers of two up to the proposer's 1024 commands.
pub const BATCH: [u64; 12] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, u64::MAX];

/// Each `fdatasync` of a log segment (appends, truncations and purges), in nanoseconds.
pub static FSYNC: Latency = Histogram::new(&LATENCY_NS);
/// Raft entries per durable append.
pub static APPEND_ENTRIES: Histogram<{ BATCH.len() }> = Histogram::new(&BATCH);
/// Client and session commands per durable append (summed over its entries).
pub static APPEND_COMMANDS: Histogram<{ BATCH.len() }> = Histogram::new(&BATCH);

/// An `fdatasync` of the log returned after `took`.
pub fn fsynced(took: Duration) {
    FSYNC.observe(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
}

/// An append of `entries` Raft entries holding `commands` commands is durable.
pub fn appended(entries: usize, commands: usize) {
    APPEND_ENTRIES.observe(entries as u64);
    APPEND_COMMANDS.observe(commands as u64);
}
