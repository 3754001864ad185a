//! The backup file's header: what `ward backup` writes before the snapshot it copies, so
//! that a restore knows where the state came from and can tell a whole file from a cut one
//! (docs/storage.md, "Backup file").
//!
//! ```text
//! offset  size  field
//!      0     8  magic: `WARDBKP` and the format version (a digit)
//!      8     8  header length h, u64 little-endian
//!     16     4  CRC-32 of the header, u32 little-endian
//!     20     4  zero (reserved)
//!     24     h  the header: postcard(BackupHeader)
//!   24+h     n  the member's snapshot file as its data directory holds it (its own
//!               magic, length and CRC-32); n is the header's `snapshot_bytes`
//! ```

use serde::{Deserialize, Serialize};
use std::io::Read;

/// The kind of file a backup is: its magic is this and the version's digit.
pub const KIND: &[u8; 7] = b"WARDBKP";
/// The version this build writes and the newest it reads.
pub const VERSION: u8 = 1;
/// Bytes before the header's payload.
pub const PREFIX: usize = 24;
/// A header is a few names and numbers: anything longer is not one.
const MAX_HEADER: u64 = 64 * 1024;

/// Where and when a backup was taken, and how far it reaches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupHeader {
    /// The name of the ensemble it was taken from (`ward` for a single server).
    pub ensemble: String,
    /// The member that sent it.
    pub member: u64,
    /// The last zxid applied in the state it holds: every write with a zxid at or below it
    /// is in the backup, none above.
    pub zxid: u64,
    /// The Raft log position the state covers.
    pub index: u64,
    pub term: u64,
    /// The voters of the ensemble it was taken from.
    pub voters: Vec<u64>,
    /// When it was taken, in milliseconds since the Unix epoch, by the member's clock.
    pub taken_ms: i64,
    /// Length of the snapshot file after the header.
    pub snapshot_bytes: u64,
}

/// Why bytes are not a backup this build can read.
#[derive(Debug, thiserror::Error)]
pub enum BackupFileError {
    #[error("reading the backup: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a Ward backup (it does not start with WARDBKP)")]
    NotABackup,
    #[error(
        "backup format version {0} is newer than this build reads ({VERSION}): restore it with a newer ward-server"
    )]
    Newer(u8),
    #[error("the backup's header is damaged: {0}")]
    Damaged(String),
}

impl BackupHeader {
    /// The header as it starts a backup file.
    pub fn encode(&self) -> Vec<u8> {
        let payload = postcard::to_allocvec(self).unwrap_or_default();
        let mut out = Vec::with_capacity(PREFIX + payload.len());
        out.extend_from_slice(KIND);
        out.push(b'0' + VERSION);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&payload);
        out
    }

    /// Reads a header from the start of a backup, leaving `from` at the snapshot; also
    /// returns how many bytes the header took.
    pub fn read(from: &mut impl Read) -> Result<(BackupHeader, u64), BackupFileError> {
        let mut prefix = [0u8; PREFIX];
        from.read_exact(&mut prefix).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => BackupFileError::NotABackup,
            _ => e.into(),
        })?;
        if &prefix[..7] != KIND {
            return Err(BackupFileError::NotABackup);
        }
        let version = prefix[7].wrapping_sub(b'0');
        if version > 9 {
            return Err(BackupFileError::NotABackup);
        }
        if version > VERSION {
            return Err(BackupFileError::Newer(version));
        }
        let (len, crc) = lengths(&prefix);
        if len > MAX_HEADER {
            return Err(BackupFileError::Damaged(format!("a header of {len} bytes")));
        }
        let mut payload = vec![0; len as usize];
        from.read_exact(&mut payload).map_err(|e| BackupFileError::Damaged(format!("cut short: {e}")))?;
        if crc32fast::hash(&payload) != crc {
            return Err(BackupFileError::Damaged("its checksum does not match".into()));
        }
        let header = postcard::from_bytes(&payload).map_err(|e| BackupFileError::Damaged(e.to_string()))?;
        Ok((header, PREFIX as u64 + len))
    }
}

/// The length and checksum a 24-byte prefix gives (the snapshot file's prefix is laid out
/// as a backup's).
fn lengths(prefix: &[u8; PREFIX]) -> (u64, u32) {
    let le = |bytes: &[u8]| bytes.iter().rev().fold(0u64, |acc, b| acc << 8 | u64::from(*b));
    (le(&prefix[8..16]), le(&prefix[16..20]) as u32)
}

/// The snapshot file's kind (`raft/snapshot_format.rs` in the server).
const SNAPSHOT_KIND: &[u8; 7] = b"WARDSNP";

/// Reads a whole backup and checks it: its header, then the snapshot after it (kind,
/// length, checksum), and that nothing follows. What `ward backup` checks a copy with
/// before calling it done; a restore checks the snapshot again as it decodes it.
pub fn verify(from: &mut impl Read) -> Result<BackupHeader, BackupFileError> {
    let (header, _) = BackupHeader::read(from)?;
    let mut prefix = [0u8; PREFIX];
    from.read_exact(&mut prefix).map_err(|e| BackupFileError::Damaged(format!("the snapshot is cut short: {e}")))?;
    if &prefix[..7] != SNAPSHOT_KIND {
        return Err(BackupFileError::Damaged("no snapshot follows the header".into()));
    }
    let (len, crc) = lengths(&prefix);
    if PREFIX as u64 + len != header.snapshot_bytes {
        let said = header.snapshot_bytes;
        return Err(BackupFileError::Damaged(format!(
            "the header says {said} snapshot bytes, the snapshot {len} and its header"
        )));
    }
    let mut hasher = crc32fast::Hasher::new();
    let mut rest = from.take(len);
    let mut buf = vec![0u8; 1 << 16];
    let mut read = 0u64;
    loop {
        let n = rest.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        read += n as u64;
    }
    if read != len {
        return Err(BackupFileError::Damaged(format!("the snapshot is cut short: {read} of {len} bytes")));
    }
    if hasher.finalize() != crc {
        return Err(BackupFileError::Damaged("the snapshot's checksum does not match".into()));
    }
    if from.read(&mut buf)? != 0 {
        return Err(BackupFileError::Damaged("bytes follow the snapshot".into()));
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> BackupHeader {
        BackupHeader {
            ensemble: "orders".into(),
            member: 2,
            zxid: 77,
            index: 41,
            term: 3,
            voters: vec![1, 2, 3],
            taken_ms: 1_700_000_000_000,
            snapshot_bytes: 1234,
        }
    }

    #[test]
    fn a_header_reads_back_and_leaves_the_reader_at_the_snapshot() {
        let mut bytes = header().encode();
        let len = bytes.len() as u64;
        bytes.extend_from_slice(b"WARDSNP6...");
        let mut reader = &bytes[..];
        let (read, taken) = BackupHeader::read(&mut reader).expect("reads");
        assert_eq!((read, taken), (header(), len));
        assert_eq!(reader, b"WARDSNP6...");
    }

    /// A backup of a snapshot file whose payload is `payload`.
    fn backup(payload: &[u8]) -> Vec<u8> {
        let mut snapshot = Vec::new();
        snapshot.extend_from_slice(b"WARDSNP6");
        snapshot.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        snapshot.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        snapshot.extend_from_slice(&[0; 4]);
        snapshot.extend_from_slice(payload);
        let mut bytes = BackupHeader { snapshot_bytes: snapshot.len() as u64, ..header() }.encode();
        bytes.extend_from_slice(&snapshot);
        bytes
    }

    #[test]
    fn a_whole_backup_verifies_and_a_cut_or_flipped_one_does_not() {
        let good = backup(b"the state");
        assert_eq!(verify(&mut &good[..]).expect("verifies").zxid, 77);
        let cut = &good[..good.len() - 1];
        assert!(matches!(verify(&mut &cut[..]), Err(BackupFileError::Damaged(_))), "cut");
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(verify(&mut &flipped[..]), Err(BackupFileError::Damaged(_))), "flipped");
        let mut longer = good;
        longer.push(0);
        assert!(matches!(verify(&mut &longer[..]), Err(BackupFileError::Damaged(_))), "trailing bytes");
    }

    #[test]
    fn damaged_cut_foreign_and_newer_files_are_refused_by_kind() {
        let good = header().encode();
        let read = |bytes: &[u8]| BackupHeader::read(&mut &bytes[..]).map(|_| ());
        assert!(matches!(read(b"WARDSNP6"), Err(BackupFileError::NotABackup)), "a snapshot is no backup");
        assert!(matches!(read(&good[..10]), Err(BackupFileError::NotABackup)), "cut in the prefix");
        assert!(matches!(read(&good[..good.len() - 1]), Err(BackupFileError::Damaged(_))), "cut in the header");
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(read(&flipped), Err(BackupFileError::Damaged(_))), "a flipped bit");
        let mut newer = good;
        newer[7] = b'0' + VERSION + 1;
        assert!(matches!(read(&newer), Err(BackupFileError::Newer(_))));
    }
}
