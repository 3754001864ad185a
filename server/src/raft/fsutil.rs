//! Small durable files (the vote, the snapshot): written whole to a temporary file, fsynced,
//! renamed over the old one, and the directory fsynced, so a crash leaves either the old file
//! or the new one, never a mix. A checksum catches a file damaged at rest.
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
use std::io::{ErrorKind, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const HEADER: usize = 24;

/// Replaces `path` with `payload` atomically and durably.
pub fn write_checked(path: &Path, magic: &[u8; 8], payload: &[u8]) -> Result<(), FileError> {
    write_streamed(path, magic, |w| w.write_all(payload)).map(|_| ())
}

/// [`write_checked`] of the payload that `write` writes, which is streamed to the file as it
/// comes (a snapshot's payload is as large as the state: it is never held in memory whole).
/// The header's length and checksum are filled in once the payload is written. Returns the
/// payload's length.
pub fn write_streamed(
    path: &Path,
    magic: &[u8; 8],
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<u64, FileError> {
    let tmp = tmp_path(path);
    let io = |op: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| FileError::Io { path: p, op, source }
    };
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
    drop(file);
    fs::rename(&tmp, path).map_err(io("rename", path))?;
    sync_dir(parent(path))?;
    Ok(len)
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
pub fn read_versioned(path: &Path, kind: &[u8; 7], supported: u8) -> Result<Option<(u8, Vec<u8>)>, OpenError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(FileError::Io { path: path.to_path_buf(), op: "read", source }.into()),
    };
    let damaged =
        |offset: u64, reason: &str| FileError::Damaged { path: path.to_path_buf(), offset, reason: reason.to_string() };
    let Some(version) = version_of(kind, &bytes).filter(|_| bytes.len() >= HEADER) else {
        return Err(damaged(0, "bad header (not a file of this kind)").into());
    };
    OpenError::check_version(path, version, supported)?;
    let len = u64::from_le_bytes(array(&bytes[8..16]));
    if len != (bytes.len() - HEADER) as u64 {
        return Err(damaged(8, "length field does not match the file size").into());
    }
    if crc32fast::hash(&bytes[HEADER..]) != u32::from_le_bytes(array(&bytes[16..20])) {
        return Err(damaged(HEADER as u64, "checksum mismatch").into());
    }
    // In place rather than copied: the payload may be a whole snapshot.
    let mut payload = bytes;
    payload.drain(..HEADER);
    Ok(Some((version, payload)))
}

/// The magic of format `version` (1 to 9) of a kind of file: the kind's seven letters and
/// the version's digit, as in `WARDSNP3`.
pub fn magic(kind: &[u8; 7], version: u8) -> [u8; 8] {
    let mut magic = [b'0' + version; 8];
    magic[..7].copy_from_slice(kind);
    magic
}

/// The format version in the magic `bytes` start with, if it is one of `kind`.
pub fn version_of(kind: &[u8; 7], bytes: &[u8]) -> Option<u8> {
    let magic = bytes.get(..8)?;
    let digit = magic[7];
    (magic[..7] == kind[..] && (b'1'..=b'9').contains(&digit)).then(|| digit - b'0')
}

/// Makes renames, creations and deletions inside `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), FileError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|source| FileError::Io {
        path: dir.to_path_buf(),
        op: "fsync directory",
        source,
    })
}

/// Removes a leftover temporary file from a write that a crash interrupted.
pub fn remove_stale_tmp(path: &Path) -> Result<(), FileError> {
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

pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The first `N` bytes of `bytes` (callers slice exactly `N`).
pub fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
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
