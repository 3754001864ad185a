//! Errors of the durable log. Damage names the file and the byte offset, so an operator
//! can look at the bytes (and decide between restoring a backup and cutting the file).

use std::io;
use std::path::PathBuf;

/// A file could not be read, written or trusted.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{op} {}: {source}", path.display())]
    Io { path: PathBuf, op: &'static str, source: io::Error },
    #[error(
        "{} is damaged at byte offset {offset}: {reason}; refusing to start \
         (the data after this point was acknowledged and cannot be dropped silently)",
        path.display()
    )]
    Damaged { path: PathBuf, offset: u64, reason: String },
    #[error("the log accepts no more writes: an earlier write or fsync failed")]
    Failed,
    #[error("record of {0} bytes is larger than a record can be")]
    TooLarge(usize),
}

impl FileError {
    /// What `op` on `path` failing with an I/O error becomes: for `map_err`.
    pub fn io(path: &std::path::Path, op: &'static str) -> impl FnOnce(io::Error) -> FileError {
        let path = path.to_path_buf();
        move |source| FileError::Io { path, op, source }
    }
}

/// Why the durable, Raft-ordered log could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{what} cannot be decoded: {source}")]
    Decode { what: String, source: postcard::Error },
    #[error("raft configuration: {0}")]
    Config(Box<openraft::ConfigError>),
    /// openraft failed at a step of opening the log (named by `during`).
    #[error("raft, {during}: {source}")]
    Raft { during: &'static str, source: Box<dyn std::error::Error + Send + Sync> },
    /// The data directory belongs to another member or ensemble.
    #[error("{0}")]
    Identity(String),
    /// Another process has the data directory open.
    #[error("{} is in use by another ward-server (its LOCK file is locked)", .0.display())]
    InUse(PathBuf),
    /// A file of the data directory is in a format this version does not know: a newer
    /// version wrote it. Nothing was changed.
    #[error(
        "{} was written by format version {found}; this ward-server reads up to {supported}: \
         upgrade ward-server (going back to an older version is not supported)",
        path.display()
    )]
    NewerFormat { path: PathBuf, found: u8, supported: u8 },
    /// Part of the log that was durable is gone: a segment file deleted or cut short (a
    /// partial copy or restore). Refused unless the operator accepts the loss.
    #[error(
        "{}: {reason}; refusing to start, as writes that were acknowledged would be lost \
         without a word. Restore the data directory from a backup (an ensemble member: or \
         from another member), or start once with --accept-data-loss to serve what remains",
        path.display()
    )]
    DataLoss { path: PathBuf, reason: String },
    /// A snapshot received from the leader is not the one the leader announced with it.
    #[error("{}: holds the snapshot {found}, but the leader announced {announced}", path.display())]
    NotAnnounced { path: PathBuf, found: String, announced: String },
    /// Files are missing such that what remains cannot be served at all (the snapshot the
    /// log was purged behind, say): accepting a loss does not help.
    #[error(
        "{}: {reason}; what remains cannot be served. Restore the data directory (or this \
         file) from a backup, or move the directory away to start with an empty one",
        path.display()
    )]
    Unservable { path: PathBuf, reason: String },
}

impl From<openraft::ConfigError> for OpenError {
    fn from(e: openraft::ConfigError) -> Self {
        OpenError::Config(Box::new(e))
    }
}

impl OpenError {
    /// Refuses a file of format `found` when this version reads only up to `supported`.
    pub(crate) fn check_version(path: &std::path::Path, found: u8, supported: u8) -> Result<(), OpenError> {
        match found > supported {
            true => Err(OpenError::NewerFormat { path: path.to_path_buf(), found, supported }),
            false => Ok(()),
        }
    }

    /// An openraft error met while `during`.
    pub fn raft(during: &'static str) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> OpenError {
        move |source| OpenError::Raft { during, source }
    }
}
