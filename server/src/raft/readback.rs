//! Reading entries back from the segment files, for the rare reader that wants an entry the
//! log store no longer keeps in memory (it drops entries once applied).
//!
//! It is the slow path by design: a one-member group never takes it (startup reads the
//! entries replayed into memory), and a follower far enough behind to need applied entries
//! is better served by a snapshot. So it scans every segment rather than keeping an index.
//! It reads a segment only as far as its records go: the active segment is mostly its
//! zero-filled tail, and reading all of it (64 MiB by default) cost a new leader tens of
//! milliseconds each time it probed where a follower's log ends.

use super::error::FileError;
use super::record::{
    parse_segment_header, read_at, record_size, Record, Slot, MAX_PAYLOAD, RECORD_HEADER, SEGMENT_HEADER,
};
use super::segment;
use super::types::Entry;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The least read from a segment at a time.
const CHUNK: usize = 1 << 20;

/// The entries with indexes in `from..to` as the log in `dir` holds them now: later records
/// win, and a truncation voids what it covers. The caller holds the log store's cache lock,
/// so no purge runs meanwhile and every segment it finds stays; one already gone held only
/// entries purged before the caller looked, below `from`. A damaged record in a full segment,
/// or a gap in what is found, is an error: the entries were acknowledged, and a reader must
/// not be handed a log with a hole in it.
pub fn read_entries(dir: &Path, from: u64, to: u64) -> Result<Vec<Entry>, FileError> {
    let (numbers, _) = segment::list(dir)?;
    let mut found = BTreeMap::new();
    let newest = numbers.last().copied();
    for number in numbers {
        let path = dir.join(segment::file_name(number));
        let mut image = match Prefix::open(&path) {
            Ok(image) => image,
            Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        image.cover(SEGMENT_HEADER)?;
        // Opening the log checked the versions of the segments; a newer one now is damage.
        let Ok(header) = parse_segment_header(&image.bytes) else {
            return Err(FileError::Damaged { path, offset: 0, reason: "bad segment header".into() });
        };
        let mut rsn = header.first_rsn;
        let mut pos = SEGMENT_HEADER;
        loop {
            image.cover_record(pos)?;
            let image = &image.bytes;
            let (payload, next) = match read_at(image, pos, rsn) {
                Slot::Record { payload, next, .. } => (payload, next),
                Slot::End => break,
                // The active segment may end in a record being written right now.
                Slot::Bad(_) if Some(number) == newest => break,
                Slot::Bad(reason) => {
                    return Err(FileError::Damaged { path, offset: pos as u64, reason: reason.to_string() })
                }
            };
            let record: Record = postcard::from_bytes(&image[payload]).map_err(|e| FileError::Damaged {
                path: path.clone(),
                offset: pos as u64,
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

/// The first bytes of a segment file, read as far as a reader asks.
struct Prefix {
    path: PathBuf,
    file: File,
    bytes: Vec<u8>,
    /// The whole file has been read.
    whole: bool,
}

impl Prefix {
    fn open(path: &Path) -> Result<Prefix, FileError> {
        let file = File::open(path).map_err(FileError::io(path, "open"))?;
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
