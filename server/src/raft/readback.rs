//! Reading entries back from the segment files, for the rare reader that wants an entry the
//! log store no longer keeps in memory (it drops entries once applied).
//!
//! A one-member group never takes this path (startup reads the entries replayed into
//! memory), but every new leader of an ensemble does: openraft finds where each follower's
//! log ends by a binary search over the whole log, each probe carrying a few applied
//! entries. So a read starts at the nearest mark before the entries it wants (`marks.rs`),
//! or, with none, at the oldest segment; and it stops at the last record it needs, unless a
//! later truncation could still replace one of its entries (`marks.rs`). It reads a segment
//! only as far as its records go: the active segment is mostly its zero-filled tail.

use super::error::FileError;
use super::marks::ReadPlan;
use super::record::{
    parse_segment_header, read_at, record_size, Record, Slot, MAX_PAYLOAD, RECORD_HEADER, SEGMENT_HEADER,
};
use super::segment;
use super::types::Entry;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The least read from a segment at a time.
const CHUNK: usize = 1 << 20;

/// The entries with indexes in `from..to` as the log in `dir` holds them now: later records
/// win, and a truncation voids what it covers. `plan.start`: a record at or before the first
/// of them to begin at (see `marks.rs`), if one is known; `plan.truncations`: every
/// truncation after it, so that the read may stop once nothing later can replace what it
/// holds. The caller holds the log store's cache
/// lock, so no new purge starts meanwhile; a segment removed while this reads (the I/O thread
/// removes purged segments without that lock) held only entries purged before the caller
/// looked, below `from`. A damaged record in a full segment, or a gap in what is found, is an
/// error: the entries were acknowledged, and a reader must not be handed a log with a hole in
/// it.
pub(super) fn read_entries(dir: &Path, from: u64, to: u64, plan: &ReadPlan) -> Result<Vec<Entry>, FileError> {
    let start = plan.start;
    let wanted = to.saturating_sub(from) as usize;
    let (numbers, _) = segment::list(dir)?;
    let mut found = BTreeMap::new();
    let newest = numbers.last().copied();
    let numbers = numbers.into_iter().filter(|n| start.is_none_or(|s| *n >= s.segment));
    for number in numbers {
        let path = dir.join(segment::file_name(number));
        let at = start.filter(|s| s.segment == number);
        let base = at.map_or(0, |place| place.offset);
        let mut image = match Prefix::open_at(&path, base) {
            Ok(image) => image,
            // The segment a mark points into was removed after the caller took the mark (the
            // I/O thread removes purged segments without the cache lock): it held only
            // entries below `from`, so read what is left from the start.
            Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound && at.is_some() => {
                return read_entries(dir, from, to, &ReadPlan { start: None, truncations: plan.truncations.clone() });
            }
            Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let (mut rsn, mut pos) = match at {
            Some(place) => (place.rsn, 0),
            None => {
                image.cover(SEGMENT_HEADER)?;
                // Opening the log checked the versions of the segments; a newer one now is damage.
                let Ok(header) = parse_segment_header(&image.bytes) else {
                    return Err(FileError::Damaged { path, offset: 0, reason: "bad segment header".into() });
                };
                (header.first_rsn, SEGMENT_HEADER)
            }
        };
        loop {
            image.cover_record(pos)?;
            let image = &image.bytes;
            let (payload, next) = match read_at(image, pos, rsn) {
                Slot::Record { payload, next, .. } => (payload, next),
                Slot::End => break,
                // The active segment may end in a record being written right now.
                Slot::Bad(_) if Some(number) == newest => break,
                Slot::Bad(reason) => {
                    return Err(FileError::Damaged { path, offset: base + pos as u64, reason: reason.to_string() })
                }
            };
            let record: Record = postcard::from_bytes(&image[payload]).map_err(|e| FileError::Damaged {
                path: path.clone(),
                offset: base + pos as u64,
                reason: format!("record #{rsn} does not decode: {e}"),
            })?;
            match record {
                Record::Entries(entries) => {
                    let wanted = entries.into_iter().filter(|e| (from..to).contains(&e.log_id.index));
                    found.extend(wanted.map(|e| (e.log_id.index, e)));
                }
                Record::Truncate { since } => drop(found.split_off(&since)),
                Record::Purge { .. } => {}
            }
            if found.len() == wanted && !plan.may_replace_after(rsn, to) {
                return Ok(found.into_values().collect());
            }
            pos = next;
            rsn += 1;
        }
    }
    if let Some(missing) = (from..to).find(|i| !found.contains_key(i)) {
        return Err(FileError::Damaged {
            path: dir.into(),
            offset: 0,
            reason: format!("log entry {missing} is neither in memory nor in any segment"),
        });
    }
    Ok(found.into_values().collect())
}

/// A segment file's bytes from an offset on, read as far as a reader asks.
struct Prefix {
    path: PathBuf,
    file: File,
    bytes: Vec<u8>,
    /// The whole file has been read.
    whole: bool,
}

impl Prefix {
    fn open_at(path: &Path, offset: u64) -> Result<Prefix, FileError> {
        let mut file = File::open(path).map_err(FileError::io(path, "open"))?;
        file.seek(SeekFrom::Start(offset)).map_err(FileError::io(path, "seek"))?;
        Ok(Prefix { path: path.into(), file, bytes: Vec::new(), whole: false })
    }

    /// Reads until at least `len` bytes are in, or the file ends (a short read is for
    /// `read_at` to judge: a torn tail, or damage).
    fn cover(&mut self, len: usize) -> Result<(), FileError> {
        while self.bytes.len() < len && !self.whole {
            let want = (len - self.bytes.len()).max(CHUNK);
            let before = self.bytes.len();
            let read = (&mut self.file).take(want as u64).read_to_end(&mut self.bytes);
            let read = read.map_err(FileError::io(&self.path, "read"))?;
            self.whole = read == 0 || self.bytes.len() - before < want;
        }
        Ok(())
    }

    /// Reads the whole record at `pos`, as its header gives its length.
    fn cover_record(&mut self, pos: usize) -> Result<(), FileError> {
        self.cover(pos + RECORD_HEADER)?;
        let Some(header) = self.bytes.get(pos..pos + 4) else { return Ok(()) };
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if len <= MAX_PAYLOAD {
            self.cover(pos + record_size(len))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::marks::Marks;
    use crate::raft::record::RecordRef;
    use crate::raft::wal::{encode_payload, Wal};
    use ward_testkit::TempDir;

    fn entry(index: u64, fill: u8) -> Entry {
        let command = crate::command::Command {
            time_ms: 0,
            session: ward_proto::SessionId(1),
            xid: index,
            op: crate::command::CommandOp::Op(ward_proto::Op::SetData {
                path: "/a".into(),
                data: vec![fill; 100],
                version: None,
            }),
        };
        openraft::Entry {
            log_id: openraft::LogId::new(crate::raft::types::LeaderId { term: 1, node_id: 1 }, index),
            payload: openraft::EntryPayload::Normal(vec![command].into()),
        }
    }

    /// Writes `record` as the I/O thread does, marking it.
    fn write(wal: &mut Wal, marks: &Marks, record: &RecordRef<'_>) {
        let payload = encode_payload(record).expect("encode");
        let place = wal.write_payload(&payload).expect("write");
        match record {
            RecordRef::Entries(entries) => marks.written(entries[0].log_id.index, place, payload.len() as u64),
            RecordRef::Truncate { since } => marks.truncated(*since, place),
            RecordRef::Purge { .. } => {}
        }
    }

    /// From any mark, a read gives what a read of every segment gives, across segments and
    /// past a truncation; and it does not read the segments before its mark (damage there,
    /// which a full read reports, does not reach it).
    #[test]
    fn a_read_from_the_nearest_mark_gives_what_a_full_read_gives() {
        let dir = TempDir::new("readback-marks");
        let marks = Marks::default();
        {
            let (mut wal, _) = Wal::open(dir.path(), 16 << 10).expect("open");
            for i in 1..=1500 {
                write(&mut wal, &marks, &RecordRef::Entries(&[entry(i, 1)]));
            }
            // A follower's suffix replaced by a new leader's, in records of four entries.
            write(&mut wal, &marks, &RecordRef::Truncate { since: 1201 });
            for first in (1201..=1800).step_by(4) {
                let batch: Vec<_> = (first..first + 4).map(|i| entry(i, 2)).collect();
                write(&mut wal, &marks, &RecordRef::Entries(&batch));
            }
            wal.sync().expect("sync");
        }
        let (numbers, _) = segment::list(dir.path()).expect("list");
        assert!(numbers.len() > 8, "the test needs many segments: {}", numbers.len());
        let expected =
            |from: u64, to: u64| -> Vec<Entry> { (from..to).map(|i| entry(i, 1 + u8::from(i > 1200))).collect() };
        // From the oldest segment, with every truncation (no entry is marked at or below 0).
        let whole = marks.plan_for(0);
        assert!(whole.start.is_none() && whole.truncations.len() == 1);
        for from in (1..=1790).step_by(37).chain([1199, 1200, 1201, 1202, 1790]) {
            let to = from + 11;
            let plan = marks.plan_for(from);
            assert!(plan.start.is_some(), "every entry here was marked");
            let marked = read_entries(dir.path(), from, to, &plan).expect("read from a mark");
            assert!(marked == expected(from, to), "from {from} via {plan:?}");
            let full = read_entries(dir.path(), from, to, &whole).expect("read all");
            assert!(marked == full, "from {from}");
        }

        // A read stops at the last record it needs when no later truncation reaches its
        // entries: damage further on is never met (a read that needs it still reports it).
        let middle = dir.path().join(segment::file_name(numbers[numbers.len() / 2]));
        let pristine = std::fs::read(&middle).expect("read segment");
        let mut image = pristine.clone();
        image[SEGMENT_HEADER + RECORD_HEADER + 2] ^= 0xff;
        std::fs::write(&middle, &image).expect("damage");
        for from in [1, 40, 100] {
            let plan = marks.plan_for(from);
            assert!(read_entries(dir.path(), from, from + 11, &plan).is_ok_and(|e| e == expected(from, from + 11)));
        }
        assert!(read_entries(dir.path(), 1, 1790, &marks.plan_for(1)).is_err(), "a read across the damage meets it");
        std::fs::write(&middle, &pristine).expect("repair");

        let first = dir.path().join(segment::file_name(numbers[0]));
        let mut image = std::fs::read(&first).expect("read segment");
        image[SEGMENT_HEADER + RECORD_HEADER + 2] ^= 0xff;
        std::fs::write(&first, &image).expect("damage");
        assert!(read_entries(dir.path(), 1700, 1710, &whole).is_err(), "a full read meets the damage");
        let plan = marks.plan_for(1700);
        assert!(read_entries(dir.path(), 1700, 1710, &plan).is_ok_and(|e| e == expected(1700, 1710)));
    }
}
