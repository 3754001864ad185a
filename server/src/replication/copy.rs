//! A consistent copy of the state, for `ward backup`: a snapshot file of a state that has
//! applied everything committed before it was asked for.

use super::Rejected;
use std::future::Future;
use std::pin::Pin;

/// The future of [`Replication::snapshot_copy`](super::Replication::snapshot_copy).
pub type SnapshotCopying = Pin<Box<dyn Future<Output = Result<SnapshotCopy, CopyError>> + Send>>;

/// A snapshot file, open, and what it covers.
#[derive(Debug)]
pub struct SnapshotCopy {
    /// The file as the data directory holds it (header and checksum included), read from
    /// its start. It stays readable if a newer snapshot replaces it meanwhile.
    pub file: std::fs::File,
    pub bytes: u64,
    /// The last zxid of its state.
    pub zxid: u64,
    /// The log position its state covers.
    pub index: u64,
    pub term: u64,
    /// The voters of the membership it holds.
    pub voters: Vec<u64>,
    /// The ensemble's name (a single server's: `ward`) and this member's id.
    pub ensemble: String,
    pub member: u64,
}

/// Why there is no copy.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("an in-memory server keeps no snapshot, so it cannot be backed up")]
    InMemory,
    #[error("this member could not make sure it has every committed write: {0}")]
    Behind(Rejected),
    #[error("no snapshot covering log index {index} was written within {waited_s} s")]
    NotInTime { index: u64, waited_s: u64 },
    #[error("the snapshot could not be read: {0}")]
    Disk(String),
}
