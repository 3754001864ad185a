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
}

impl From<openraft::ConfigError> for OpenError {
    fn from(e: openraft::ConfigError) -> Self {
        OpenError::Config(Box::new(e))
    }
}

impl OpenError {
    /// An openraft error met while `during`.
    pub fn raft(during: &'static str) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> OpenError {
        move |source| OpenError::Raft { during, source }
    }
}
