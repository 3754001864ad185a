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
//!
//! Where a reader may stop: the same rule says an entry is written again only after a
//! truncation that covers it. So once a reader holds every entry it wants, a later record can
//! replace one of them only if a truncation at or below the highest of them comes later. The
//! truncations are kept here too (they are rare: a follower's uncommitted suffix replaced), so
//! a reader stops at the last record it needs instead of reading every segment to the end. A
//! reader wants applied entries only, and openraft never truncates a committed one: a
//! truncation written after the reader took the list cannot touch what it reads.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// About how many bytes of records lie between two marks: what a reader reads at most
/// before it reaches the record it wants, besides the records it wants.
pub(super) const MARK_BYTES: u64 = 256 << 10;

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
    /// Truncation records by sequence number: their segment, and the index they truncate from.
    truncations: BTreeMap<u64, (u64, u64)>,
}

/// Where a read of entries from some index may start, and where it may stop.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadPlan {
    /// The place of the latest marked record at or below the first index wanted; `None`:
    /// from the oldest segment.
    pub(crate) start: Option<Place>,
    /// The truncations written after `start` (all of them without one), as (sequence
    /// number, first index truncated).
    pub(crate) truncations: Vec<(u64, u64)>,
}

impl ReadPlan {
    /// Whether a record after `rsn` may still replace an entry below `to`.
    pub(crate) fn may_replace_after(&self, rsn: u64, to: u64) -> bool {
        self.truncations.iter().any(|&(at, since)| at > rsn && since < to)
    }
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

    /// A truncation of the entries from index `since` was written at `place`.
    pub(crate) fn truncated(&self, since: u64, place: Place) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.truncations.insert(place.rsn, (place.segment, since));
    }

    /// Where to start reading for the entries from index `from` (the place of the latest
    /// marked record whose first entry is at or below it; `None`: from the oldest segment),
    /// and the truncations a reader from there meets.
    pub(crate) fn plan_for(&self, from: u64) -> ReadPlan {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let start = inner.by_first.range(..=from).next_back().map(|(_, place)| *place);
        let after = start.map_or(0, |s| s.rsn);
        let truncations = inner.truncations.range(after..).map(|(&rsn, &(_, since))| (rsn, since)).collect();
        ReadPlan { start, truncations }
    }

    /// Segments up to `last` were removed.
    pub(crate) fn removed_through(&self, last: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.by_first.retain(|_, place| place.segment > last);
        inner.truncations.retain(|_, (segment, _)| *segment > last);
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
    fn marks_every_quarter_megabyte_and_each_segments_first_record() {
        let marks = Marks::default();
        let record = MARK_BYTES / 4;
        for i in 0..16 {
            marks.written(i * 10, at(1, i * record), record);
        }
        assert_eq!(marks.len(), 4, "one mark per MARK_BYTES of records");
        assert_eq!(marks.plan_for(5).start, Some(at(1, 0)));
        assert_eq!(marks.plan_for(45).start, Some(at(1, 4 * record)));
        assert_eq!(marks.plan_for(1000).start, Some(at(1, 12 * record)));
        marks.written(160, at(2, 4096), 100);
        assert_eq!(marks.plan_for(165).start, Some(at(2, 4096)), "a new segment's first record is marked");
        marks.removed_through(1);
        assert_eq!(marks.plan_for(159).start, None, "the removed segment's marks are gone");
        assert_eq!(marks.plan_for(160).start, Some(at(2, 4096)));
    }

    #[test]
    fn a_rewritten_first_index_points_at_the_newer_record() {
        let marks = Marks::default();
        marks.written(1, at(1, 0), MARK_BYTES);
        marks.written(50, at(1, MARK_BYTES), MARK_BYTES);
        // Truncated since 30, then appended again from 30, and from 50.
        marks.written(30, at(1, 2 * MARK_BYTES), MARK_BYTES);
        marks.written(50, at(1, 3 * MARK_BYTES), 10);
        assert_eq!(marks.plan_for(55).start, Some(at(1, 3 * MARK_BYTES)));
        assert_eq!(marks.plan_for(40).start, Some(at(1, 2 * MARK_BYTES)));
    }

    #[test]
    fn a_plan_names_the_truncations_after_its_start_until_their_segment_goes() {
        let marks = Marks::default();
        marks.truncated(7, Place { segment: 1, offset: 10, rsn: 2 });
        marks.written(1, at(1, 20), MARK_BYTES);
        marks.written(5, Place { segment: 2, offset: 0, rsn: 30 }, MARK_BYTES);
        marks.truncated(9, Place { segment: 2, offset: 100, rsn: 31 });
        let plan = marks.plan_for(6);
        assert_eq!(plan.start, Some(Place { segment: 2, offset: 0, rsn: 30 }));
        assert_eq!(plan.truncations, vec![(31, 9)], "only the truncation after the start");
        assert!(plan.may_replace_after(30, 10), "9 is below 10");
        assert!(!plan.may_replace_after(30, 9), "nothing below 9 is truncated");
        assert!(!plan.may_replace_after(31, 10), "nothing after the truncation itself");
        assert_eq!(marks.plan_for(3).truncations, vec![(31, 9)]);
        assert_eq!(marks.plan_for(0).truncations, vec![(2, 7), (31, 9)], "no mark: every truncation");
        marks.removed_through(1);
        assert_eq!(marks.plan_for(0).truncations, vec![(31, 9)]);
    }
}
