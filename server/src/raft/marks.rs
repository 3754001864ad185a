//! Where in the segment files a reader of applied entries may start: a mark every
//! [`MARK_BYTES`] of records, kept by the log's I/O thread as it writes them.
//!
//! A new leader finds where each follower's log ends by openraft's binary search, and every
//! probe reads a few applied entries back from the segments (`raft/readback.rs`). Scanning
//! and decoding every record from the oldest segment took about 45 ms a probe after a few
//! tens of thousands of entries, six or seven probes per failover. From a mark, a probe reads
//! a megabyte or so.
//!
//! Why any record is a safe start: openraft appends entries only right after the log's last
//! one (after truncating, if it must). So when a record of entries from index `f` was
//! written, the log ended at `f - 1`, and every entry at or above `f` written earlier had
//! been truncated. The current version of each entry at or above `f` is therefore in that
//! record or a later one, and a reader after entries from `from >= f` may begin there,
//! applying the truncations it meets as before. That holds even if the record itself was
//! truncated later, so marks are never invalidated, only dropped with their segment.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// About how many bytes of records lie between two marks: what a reader reads at most
/// before it reaches the record it wants, besides the records it wants.
pub(super) const MARK_BYTES: u64 = 1 << 20;

/// A record's place: its segment, its offset in that segment, and its sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub segment: u64,
    pub offset: u64,
    pub rsn: u64,
}

#[derive(Default)]
pub(crate) struct Marks {
    // A std mutex: the I/O thread and the readers each hold it for a map operation.
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By the index of the record's first entry; a later record with the same first index
    /// replaces an earlier one.
    by_first: BTreeMap<u64, Place>,
    /// Record bytes written since the last mark.
    since: u64,
    /// The segment of the last mark.
    segment: Option<u64>,
}

impl Marks {
    /// A record of entries from index `first`, `bytes` long, was written at `place`.
    pub(crate) fn written(&self, first: u64, place: Place, bytes: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        // The first record of each segment is marked, so that a reader never scans a whole
        // segment it does not need.
        if inner.since >= MARK_BYTES || inner.segment != Some(place.segment) {
            inner.by_first.insert(first, place);
            inner.since = 0;
            inner.segment = Some(place.segment);
        }
        inner.since += bytes;
    }

    /// Where to start reading for the entries from index `from`: the place of the latest
    /// marked record whose first entry is at or below it. `None`: from the oldest segment.
    pub(crate) fn start_for(&self, from: u64) -> Option<Place> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.by_first.range(..=from).next_back().map(|(_, place)| *place)
    }

    /// Segments up to `last` were removed.
    pub(crate) fn removed_through(&self, last: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.by_first.retain(|_, place| place.segment > last);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).by_first.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(segment: u64, offset: u64) -> Place {
        Place { segment, offset, rsn: offset }
    }

    #[test]
    fn marks_every_megabyte_and_each_segments_first_record() {
        let marks = Marks::default();
        let record = MARK_BYTES / 4;
        for i in 0..16 {
            marks.written(i * 10, at(1, i * record), record);
        }
        assert_eq!(marks.len(), 4, "one mark per megabyte of records");
        assert_eq!(marks.start_for(5), Some(at(1, 0)));
        assert_eq!(marks.start_for(45), Some(at(1, 4 * record)));
        assert_eq!(marks.start_for(1000), Some(at(1, 12 * record)));
        marks.written(160, at(2, 4096), 100);
        assert_eq!(marks.start_for(165), Some(at(2, 4096)), "a new segment's first record is marked");
        marks.removed_through(1);
        assert_eq!(marks.start_for(159), None, "the removed segment's marks are gone");
        assert_eq!(marks.start_for(160), Some(at(2, 4096)));
    }

    #[test]
    fn a_rewritten_first_index_points_at_the_newer_record() {
        let marks = Marks::default();
        marks.written(1, at(1, 0), MARK_BYTES);
        marks.written(50, at(1, MARK_BYTES), MARK_BYTES);
        // Truncated since 30, then appended again from 30, and from 50.
        marks.written(30, at(1, 2 * MARK_BYTES), MARK_BYTES);
        marks.written(50, at(1, 3 * MARK_BYTES), 10);
        assert_eq!(marks.start_for(55), Some(at(1, 3 * MARK_BYTES)));
        assert_eq!(marks.start_for(40), Some(at(1, 2 * MARK_BYTES)));
    }
}
