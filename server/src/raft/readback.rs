//! Reading entries back from the segment files, for the rare reader that wants an entry the
//! log store no longer keeps in memory (it drops entries once applied).
//!
//! It is the slow path by design: a one-member group never takes it (startup reads the
//! entries replayed into memory), and a follower far enough behind to need applied entries
//! is better served by a snapshot. So it scans every segment rather than keeping an index.

use super::error::FileError;
use super::record::{parse_segment_header, read_at, Record, Slot, SEGMENT_HEADER};
use super::segment;
use super::types::Entry;
use std::collections::BTreeMap;
use std::path::Path;

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
        let image = match segment::read_image(&path) {
            Ok(image) => image,
            Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        // Opening the log checked the versions of the segments; a newer one now is damage.
        let Ok(header) = parse_segment_header(&image) else {
            return Err(FileError::Damaged { path, offset: 0, reason: "bad segment header".into() });
        };
        let mut rsn = header.first_rsn;
        let mut pos = SEGMENT_HEADER;
        loop {
            let (payload, next) = match read_at(&image, pos, rsn) {
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
