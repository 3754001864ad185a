//! Small durable files (the vote, the snapshot): written whole to a temporary file, fsynced,
//! renamed over the old one, and the directory fsynced, so a crash leaves either the old file
//! or the new one, never a mix. A checksum catches a file damaged at rest. A large one (the
//! snapshot) is written and read as a stream ([`write_streamed`], [`CheckedReader`]).
//!
//! ```text
//! offset  size  field
//!      0     8  magic: the kind of file (7 letters) and its format version (a digit)
//!      8     8  payload length, u64 little-endian
//!     16     4  CRC-32 of the payload, u32 little-endian
//!     20     4  zero (reserved)
//!     24     n  payload (postcard)
//! ```

use super::error::{FileError, OpenError};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const HEADER: usize = 24;

/// Replaces `path` with `payload` atomically and durably.
pub(crate) fn write_checked(path: &Path, magic: &[u8; 8], payload: &[u8]) -> Result<(), FileError> {
    write_streamed(path, magic, |w| w.write_all(payload)).map(|_| ())
}

/// [`write_checked`] of the payload that `write` writes, which is streamed to the file as it
/// comes (a snapshot's payload is as large as the state: it is never held in memory whole).
/// The header's length and checksum are filled in once the payload is written. Returns the
/// payload's length.
pub(crate) fn write_streamed(
    path: &Path,
    magic: &[u8; 8],
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<u64, FileError> {
    let len = write_beside(path, magic, write)?;
    put_in_place(&tmp_path(path), path)?;
    Ok(len)
}

/// [`write_streamed`] without its last step: the file is written and fsynced at
/// [`tmp_path`]`(path)`, for the caller to [`put_in_place`].
pub(crate) fn write_beside(
    path: &Path,
    magic: &[u8; 8],
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<u64, FileError> {
    let tmp = tmp_path(path);
    let io = |op, p: &Path| FileError::io(p, op);
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp).map_err(io("create", &tmp))?;
    file.write_all(&[0; HEADER]).map_err(io("write", &tmp))?;
    let mut payload =
        std::io::BufWriter::with_capacity(1 << 20, Checked { file, crc: crc32fast::Hasher::new(), len: 0 });
    write(&mut payload).map_err(io("write", &tmp))?;
    let Checked { file, crc, len } = payload.into_inner().map_err(|e| io("write", &tmp)(e.into_error()))?;
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(magic);
    header.extend_from_slice(&len.to_le_bytes());
    header.extend_from_slice(&crc.finalize().to_le_bytes());
    header.extend_from_slice(&[0; 4]);
    file.write_all_at(&header, 0).map_err(io("write", &tmp))?;
    file.sync_all().map_err(io("fsync", &tmp))?;
    Ok(len)
}

/// Renames the durable file `from` over `to`, and makes the rename durable.
pub(crate) fn put_in_place(from: &Path, to: &Path) -> Result<(), FileError> {
    fs::rename(from, to).map_err(FileError::io(to, "rename over"))?;
    sync_dir(parent(to))
}

/// The file behind a payload being written: checksums and counts what passes.
struct Checked {
    file: File,
    crc: crc32fast::Hasher,
    len: u64,
}

impl Write for Checked {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.crc.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// The version and payload of a file written by [`write_checked`] with a magic of `kind`
/// ([`magic`]); `None` if there is no such file. A version above `supported` is refused
/// before anything else of the file is read: a newer version may have changed all of it.
pub(crate) fn read_versioned(path: &Path, kind: &[u8; 7], supported: u8) -> Result<Option<(u8, Vec<u8>)>, OpenError> {
    let Some(mut reader) = CheckedReader::open(path, kind, supported)? else { return Ok(None) };
    let mut payload = Vec::new();
    reader.read_to_end(&mut payload).map_err(|source| FileError::Io {
        path: path.to_path_buf(),
        op: "read",
        source,
    })?;
    let version = reader.version();
    reader.finish()?;
    Ok(Some((version, payload)))
}

/// A file written by [`write_checked`], read as a stream, so that a payload as large as a
/// snapshot is never held whole: the header is checked when it is opened (kind, version,
/// length against the file's size), the checksum once the payload has been read
/// ([`CheckedReader::finish`]). Reads end at the payload's end.
pub(crate) struct CheckedReader {
    path: PathBuf,
    version: u8,
    /// The payload's length and checksum, as the header gives them.
    len: u64,
    crc: u32,
    /// Unbuffered: the checksum is updated a read at a time, so a reader that wants small
    /// reads puts a buffer in front of this.
    file: File,
    /// How much of the payload has been read.
    taken: u64,
    hasher: crc32fast::Hasher,
}

impl CheckedReader {
    /// The file at `path`, `None` if there is none.
    pub(crate) fn open(path: &Path, kind: &[u8; 7], supported: u8) -> Result<Option<CheckedReader>, OpenError> {
        match File::open(path) {
            Ok(file) => CheckedReader::new(file, path, kind, supported).map(Some),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(source) => Err(FileError::Io { path: path.to_path_buf(), op: "open", source }.into()),
        }
    }

    /// `file` (named `path` in errors), read from its start.
    pub(crate) fn new(mut file: File, path: &Path, kind: &[u8; 7], supported: u8) -> Result<CheckedReader, OpenError> {
        let io = |op| FileError::io(path, op);
        let damaged =
            |offset: u64, reason: &str| FileError::Damaged { path: path.to_path_buf(), offset, reason: reason.into() };
        let size = file.metadata().map_err(io("stat"))?.len();
        file.seek(SeekFrom::Start(0)).map_err(io("seek"))?;
        let mut header = [0; HEADER];
        let version = match size >= HEADER as u64 {
            true => file.read_exact(&mut header).map_err(io("read")).map(|()| version_of(kind, &header))?,
            false => None,
        };
        let Some(version) = version else { return Err(damaged(0, "bad header (not a file of this kind)").into()) };
        OpenError::check_version(path, version, supported)?;
        let len = u64::from_le_bytes(array(&header[8..16]));
        if len != size - HEADER as u64 {
            return Err(damaged(8, "length field does not match the file size").into());
        }
        Ok(CheckedReader {
            path: path.to_path_buf(),
            version,
            len,
            crc: u32::from_le_bytes(array(&header[16..20])),
            file,
            taken: 0,
            hasher: crc32fast::Hasher::new(),
        })
    }

    /// The format version its magic gives.
    pub(crate) fn version(&self) -> u8 {
        self.version
    }

    /// The payload's length.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what is left of the payload and checks it against the header's checksum:
    /// whatever was read before is trusted only once this succeeded. Gives the file back.
    pub(crate) fn finish(mut self) -> Result<File, FileError> {
        let mut rest = vec![0; 1 << 18];
        while self.read(&mut rest).map_err(FileError::io(&self.path, "read"))? > 0 {}
        if self.taken != self.len {
            let reason = "the file ended before its payload (it shrank while it was read)".to_string();
            return Err(FileError::Damaged { path: self.path, offset: HEADER as u64 + self.taken, reason });
        }
        if self.hasher.finalize() != self.crc {
            return Err(FileError::Damaged {
                path: self.path,
                offset: HEADER as u64,
                reason: "checksum mismatch".into(),
            });
        }
        Ok(self.file)
    }
}

impl Read for CheckedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.len - self.taken).unwrap_or(usize::MAX);
        let end = buf.len().min(left);
        let n = self.file.read(&mut buf[..end])?;
        self.hasher.update(&buf[..n]);
        self.taken += n as u64;
        Ok(n)
    }
}

/// The magic of format `version` (1 to 9) of a kind of file: the kind's seven letters and
/// the version's digit, as in `WARDSNP3`.
pub(crate) fn magic(kind: &[u8; 7], version: u8) -> [u8; 8] {
    let mut magic = [b'0' + version; 8];
    magic[..7].copy_from_slice(kind);
    magic
}

/// The format version in the magic `bytes` start with, if it is one of `kind`.
pub(crate) fn version_of(kind: &[u8; 7], bytes: &[u8]) -> Option<u8> {
    let magic = bytes.get(..8)?;
    let digit = magic[7];
    (magic[..7] == kind[..] && (b'1'..=b'9').contains(&digit)).then(|| digit - b'0')
}

/// Makes renames, creations and deletions inside `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), FileError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|source| FileError::Io {
        path: dir.to_path_buf(),
        op: "fsync directory",
        source,
    })
}

/// Removes a leftover temporary file from a write that a crash interrupted.
pub(crate) fn remove_stale_tmp(path: &Path) -> Result<(), FileError> {
    let tmp = tmp_path(path);
    match fs::remove_file(&tmp) {
        Ok(()) => {
            tracing::info!(path = %tmp.display(), "removed a temporary file left by an interrupted write");
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(source) => Err(FileError::Io { path: tmp, op: "remove", source }),
    }
}

pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    with_suffix(path, ".tmp")
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// The directory `path` is in (`.` for a bare name).
pub(crate) fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The first `N` bytes of `bytes` (callers slice exactly `N`).
pub(crate) fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_magic_is_a_kind_and_a_version_digit() {
        assert_eq!(&magic(b"WARDSNP", 3), b"WARDSNP3");
        assert_eq!(version_of(b"WARDSNP", b"WARDSNP3 and more"), Some(3));
        assert_eq!(version_of(b"WARDSNP", b"WARDSNP0"), None, "versions start at 1");
        assert_eq!(version_of(b"WARDSNP", b"WARDSNPx"), None);
        assert_eq!(version_of(b"WARDSNP", b"WARDVOT1"), None);
        assert_eq!(version_of(b"WARDSNP", b"WARD"), None);
    }
}
