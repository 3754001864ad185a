//! Small durable files (the vote, the snapshot): written whole to a temporary file, fsynced,
//! renamed over the old one, and the directory fsynced, so a crash leaves either the old file
//! or the new one, never a mix. A checksum catches a file damaged at rest.
//!
//! ```text
//! offset  size  field
//!      0     8  magic (which kind of file, and its format version)
//!      8     8  payload length, u64 little-endian
//!     16     4  CRC-32 of the payload, u32 little-endian
//!     20     4  zero (reserved)
//!     24     n  payload (postcard)
//! ```

use super::error::FileError;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

const HEADER: usize = 24;

/// Replaces `path` with `payload` atomically and durably.
pub fn write_checked(path: &Path, magic: &[u8; 8], payload: &[u8]) -> Result<(), FileError> {
    let tmp = tmp_path(path);
    // The header, then the payload as it is: a snapshot's payload is as large as the state,
    // and copying it behind the header would take that much memory again.
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(magic);
    header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    header.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    header.extend_from_slice(&[0; 4]);
    let io = |op: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| FileError::Io { path: p, op, source }
    };
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp).map_err(io("create", &tmp))?;
    file.write_all(&header).map_err(io("write", &tmp))?;
    file.write_all(payload).map_err(io("write", &tmp))?;
    file.sync_all().map_err(io("fsync", &tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(io("rename", path))?;
    sync_dir(parent(path))
}

/// The payload of a file written by [`write_checked`]; `None` if there is no such file.
pub fn read_checked(path: &Path, magic: &[u8; 8]) -> Result<Option<Vec<u8>>, FileError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(FileError::Io { path: path.to_path_buf(), op: "read", source }),
    };
    let damaged =
        |offset: u64, reason: &str| FileError::Damaged { path: path.to_path_buf(), offset, reason: reason.to_string() };
    if bytes.len() < HEADER || &bytes[..8] != magic {
        return Err(damaged(0, "bad header (not a file of this kind or version)"));
    }
    let len = u64::from_le_bytes(array(&bytes[8..16]));
    if len != (bytes.len() - HEADER) as u64 {
        return Err(damaged(8, "length field does not match the file size"));
    }
    if crc32fast::hash(&bytes[HEADER..]) != u32::from_le_bytes(array(&bytes[16..20])) {
        return Err(damaged(HEADER as u64, "checksum mismatch"));
    }
    // In place rather than copied: the payload may be a whole snapshot.
    let mut payload = bytes;
    payload.drain(..HEADER);
    Ok(Some(payload))
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
