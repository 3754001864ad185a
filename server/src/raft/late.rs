//! `--unsafe-break ack-before-fsync` ([`crate::unsafe_break`]): appends acknowledged before
//! they are written. The log store keeps them here and writes them (with their
//! `fdatasync`) together with the first append at least [`LATE_BY`] after the oldest, or
//! before a truncation or purge (which must follow them in the file). Until then a
//! `kill -9` loses them, as a power cut loses what was acknowledged and never synced.

use super::types::Entry;
use std::time::{Duration, Instant};

/// How long an acknowledged append may wait unwritten.
pub(super) const LATE_BY: Duration = Duration::from_secs(1);

/// Entries acknowledged and not yet written, oldest first.
#[derive(Default)]
pub(super) struct Late {
    entries: Vec<Entry>,
    since: Option<Instant>,
}

impl Late {
    /// Holds `entries` back; returns what is due for writing now: all held, once the oldest
    /// has waited [`LATE_BY`], or when `entries` change the group (a membership or a new
    /// leader's blank entry: the break loses commands, not the group that a restart needs).
    pub(super) fn hold(&mut self, entries: Vec<Entry>) -> Vec<Entry> {
        let structural = entries.iter().any(|e| !matches!(e.payload, openraft::EntryPayload::Normal(_)));
        self.entries.extend(entries);
        let since = *self.since.get_or_insert_with(Instant::now);
        match structural || since.elapsed() >= LATE_BY {
            true => self.take(),
            false => Vec::new(),
        }
    }

    /// Everything held.
    pub(super) fn take(&mut self) -> Vec<Entry> {
        self.since = None;
        std::mem::take(&mut self.entries)
    }
}
