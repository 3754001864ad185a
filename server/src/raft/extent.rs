//! How far the log had reached: the `log/extent` file, which lets opening tell a crash from
//! lost files.
//!
//! A crash never removes a segment file or shortens one (segments are created at full size
//! and never shrink), and it never loses a record that was on disk before it. A deleted or
//! cut segment (a partial copy or restore) does both. So the log records the newest segment's
//! number and the serial number its next record takes, and opening refuses a log with fewer
//! segments or fewer records than recorded.
//!
//! The file is written when the log opens, when it starts a new segment and when it closes
//! cleanly; never per append, where it would cost a second write and fsync each time. What
//! is and is not detected follows from that (docs/storage.md, "Lost files").
//!
//! ```text
//! a checked small file (fsutil), magic "WARDEXT1", payload 16 bytes:
//! offset  size  field
//!      0     8  newest segment number, u64 LE
//!      8     8  RSN the next record takes, u64 LE: every record before it was fsynced
//! ```

use super::error::{FileError, OpenError};
use super::fsutil::{array, magic, read_versioned, write_checked};
use super::segment::file_name;
use std::path::{Path, PathBuf};

pub(crate) const FILE: &str = "extent";
const KIND: &[u8; 7] = b"WARDEXT";
const VERSION: u8 = 1;

/// The log's reach at one moment: everything below it was durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extent {
    /// The newest segment's number.
    pub segment: u64,
    /// The serial number of the next record.
    pub(crate) next_rsn: u64,
}

/// The recorded extent of the log in `log_dir`, if there is one.
pub(crate) fn read(log_dir: &Path) -> Result<Option<Extent>, OpenError> {
    let path = log_dir.join(FILE);
    let Some((_, bytes)) = read_versioned(&path, KIND, VERSION)? else { return Ok(None) };
    if bytes.len() != 16 {
        return Err(
            FileError::Damaged { path, offset: 24, reason: format!("{} bytes, expected 16", bytes.len()) }.into()
        );
    }
    Ok(Some(Extent {
        segment: u64::from_le_bytes(array(&bytes[..8])),
        next_rsn: u64::from_le_bytes(array(&bytes[8..])),
    }))
}

/// Replaces the recorded extent, durably.
pub(crate) fn record(log_dir: &Path, extent: Extent) -> Result<(), FileError> {
    let mut payload = [0; 16];
    payload[..8].copy_from_slice(&extent.segment.to_le_bytes());
    payload[8..].copy_from_slice(&extent.next_rsn.to_le_bytes());
    write_checked(&log_dir.join(FILE), &magic(KIND, VERSION), &payload)
}

/// What opening the log found.
pub(crate) struct Found {
    /// The newest segment's number, if there is any segment.
    pub newest: Option<u64>,
    /// The serial number after the last intact record.
    pub(crate) next_rsn: u64,
    /// Whether a segment was written by a version that keeps the extent file (format 2 on).
    pub(crate) keeps_extent: bool,
    /// The newest segment's length and the size it was created with, when it is shorter.
    pub cut: Option<(u64, u64)>,
}

/// Durable data of the log in `log_dir` that is gone, compared with `recorded`: the file at
/// fault and why.
pub(crate) fn missing(log_dir: &Path, recorded: Option<Extent>, found: &Found) -> Option<OpenError> {
    let loss = |path: PathBuf, reason: String| Some(OpenError::DataLoss { path, reason });
    let newest = found.newest.map_or_else(|| "there is none".to_string(), |n| format!("the newest here is {n}"));
    if let Some(extent) = recorded.filter(|e| found.newest < Some(e.segment)) {
        let first = found.newest.map_or(1, |n| n + 1);
        let reason = match extent.segment - first {
            0 => String::from("missing"),
            more => format!("missing, and {more} newer segment file(s) up to {}", file_name(extent.segment)),
        };
        let reason = format!("{reason}: the log had reached segment {} ({FILE}), {newest}", extent.segment);
        return loss(log_dir.join(file_name(first)), reason);
    }
    if let (Some(n), Some((len, size))) = (found.newest, found.cut) {
        let reason =
            format!("is {len} bytes, but was created with {size}: the file was cut, and what followed is gone");
        return loss(log_dir.join(file_name(n)), reason);
    }
    match (recorded, found.newest) {
        (Some(extent), Some(n)) if found.next_rsn < extent.next_rsn => {
            let reason = format!(
                "its records end before record #{}, but records up to #{} were durable ({FILE}): its end is gone",
                found.next_rsn,
                extent.next_rsn - 1
            );
            loss(log_dir.join(file_name(n)), reason)
        }
        // A new directory's first segment is installed just before the extent is first
        // recorded: a start killed between the two left an empty segment 1, and no data.
        (None, Some(1)) if found.next_rsn == 1 => None,
        (None, Some(_)) if found.keeps_extent => loss(
            log_dir.join(FILE),
            "missing, but the segments were written by a version that keeps it: whether the log is complete \
             cannot be checked"
                .into(),
        ),
        _ => None,
    }
}
