//! One segment file of the log: creating it pre-zeroed, writing records and making them
//! durable with `fdatasync`, and zeroing a torn tail. All the log's file I/O is here.
//!
//! Segments are filled with zeros and fsynced before they take records, so an append
//! overwrites allocated blocks and never changes the file size: `fdatasync` then flushes only
//! data, not metadata (a growing file costs 50–100 µs more per fsync on this machine).

use super::error::FileError;
use super::fsutil::sync_dir;
use super::record::{segment_header, SEGMENT_HEADER};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const ZEROS: usize = 1 << 20;

/// The segment being appended to.
pub(crate) struct Segment {
    pub number: u64,
    pub path: PathBuf,
    file: File,
    /// Bytes in the file; appends stay below it.
    pub size: u64,
    /// Where the next record goes; everything from here to `size` is zero.
    pub(crate) write_pos: u64,
    /// Where the bytes made durable by the last `fdatasync` end: `write_pos` once synced.
    synced_pos: u64,
}

pub(crate) fn file_name(number: u64) -> String {
    format!("{number:020}.wal")
}

/// The segment number of a file named by [`file_name`].
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".wal")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The segments in `dir`, oldest first, and the leftover `.tmp` files beside them (a
/// segment whose creation a crash interrupted, or an unused spare).
pub(crate) fn list(dir: &Path) -> Result<(Vec<u64>, Vec<PathBuf>), FileError> {
    let mut numbers = Vec::new();
    let mut stale = Vec::new();
    for item in fs::read_dir(dir).map_err(FileError::io(dir, "list"))? {
        let item = item.map_err(FileError::io(dir, "list"))?;
        let name = item.file_name().to_string_lossy().into_owned();
        if let Some(n) = parse_name(&name) {
            numbers.push(n);
        } else if name.ends_with(".tmp") {
            stale.push(item.path());
        }
    }
    numbers.sort_unstable();
    Ok((numbers, stale))
}

/// Writes a file of `size` zero bytes and fsyncs it: the body of a future segment.
pub(crate) fn prepare_zeroed(path: &Path, size: u64) -> Result<(), FileError> {
    let mut file =
        OpenOptions::new().write(true).create(true).truncate(true).open(path).map_err(FileError::io(path, "create"))?;
    let zeros = vec![0u8; ZEROS];
    let mut left = size;
    while left > 0 {
        let n = left.min(ZEROS as u64) as usize;
        file.write_all(&zeros[..n]).map_err(FileError::io(path, "write"))?;
        left -= n as u64;
    }
    file.sync_all().map_err(FileError::io(path, "fsync"))
}

impl Segment {
    /// Turns a pre-zeroed temporary file into segment `number` of `dir`: header, fsync,
    /// rename, directory fsync. A crash before the rename leaves only a temporary file,
    /// which opening the log removes.
    pub(crate) fn install(zeroed: &Path, dir: &Path, number: u64, first_rsn: u64) -> Result<Segment, FileError> {
        let file = OpenOptions::new().read(true).write(true).open(zeroed).map_err(FileError::io(zeroed, "open"))?;
        let size = file.metadata().map_err(FileError::io(zeroed, "stat"))?.len();
        file.write_all_at(&segment_header(number, first_rsn, size), 0).map_err(FileError::io(zeroed, "write"))?;
        file.sync_data().map_err(FileError::io(zeroed, "fsync"))?;
        let path = dir.join(file_name(number));
        fs::rename(zeroed, &path).map_err(FileError::io(&path, "rename"))?;
        sync_dir(dir)?;
        tracing::debug!(path = %path.display(), size, "new log segment");
        let write_pos = SEGMENT_HEADER as u64;
        Ok(Segment { number, path, file, size, write_pos, synced_pos: write_pos })
    }

    /// Opens the last segment for appending at `write_pos` (the end of its intact records).
    /// Whatever follows — a torn record, a file cut short — is zeroed up to `min_size` and
    /// fsynced first, so that later a bad record can only be the torn tail of a new write.
    /// The segment is fsynced in any case before its records are used: a process killed
    /// between a record's write and its fdatasync leaves the record whole in the page cache,
    /// where this start reads it, but not yet on the disk, and a power loss would then take
    /// away an entry this start counted (and applied, and recorded in the extent) as durable.
    pub(crate) fn reopen(
        path: &Path,
        number: u64,
        image: &[u8],
        write_pos: u64,
        min_size: u64,
    ) -> Result<Segment, FileError> {
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(FileError::io(path, "open"))?;
        let len = image.len() as u64;
        let size = len.max(min_size);
        let dirty = image.get(write_pos as usize..).is_some_and(|tail| tail.iter().any(|b| *b != 0));
        if dirty || len < size {
            tracing::warn!(path = %path.display(), offset = write_pos, "zeroing the log after its last intact record");
            let zeros = vec![0u8; ZEROS];
            // A cut inside the last record's padding leaves `write_pos` past the end.
            let mut at = write_pos.min(len);
            while at < size {
                let n = (size - at).min(ZEROS as u64) as usize;
                file.write_all_at(&zeros[..n], at).map_err(FileError::io(path, "write"))?;
                at += n as u64;
            }
        }
        file.sync_data().map_err(FileError::io(path, "fsync"))?;
        Ok(Segment { number, path: path.to_path_buf(), file, size, write_pos, synced_pos: write_pos })
    }

    /// Whether `len` more bytes fit.
    pub(crate) fn fits(&self, len: usize) -> bool {
        self.write_pos + len as u64 <= self.size
    }

    /// Writes `bytes` at the write position. They are not durable until [`Segment::sync`]
    /// returns, and nothing that depends on them may be acknowledged before.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        self.file.write_all_at(bytes, self.write_pos).map_err(FileError::io(&self.path, "write"))?;
        self.write_pos += bytes.len() as u64;
        Ok(())
    }

    /// Makes every byte written so far durable (one `fdatasync`, none if nothing was written
    /// since the last), and says how long the `fdatasync` took, if there was one.
    pub(crate) fn sync(&mut self) -> Result<Option<std::time::Duration>, FileError> {
        if self.synced_pos == self.write_pos {
            return Ok(None);
        }
        let started = std::time::Instant::now();
        self.file.sync_data().map_err(FileError::io(&self.path, "fdatasync"))?;
        self.synced_pos = self.write_pos;
        Ok(Some(started.elapsed()))
    }
}

pub(crate) fn read_image(path: &Path) -> Result<Vec<u8>, FileError> {
    fs::read(path).map_err(FileError::io(path, "read"))
}
