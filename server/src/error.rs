//! Server errors. Mapped to wire [`ErrorCode`](ward_proto::ErrorCode)s only at the
//! connection edge.

/// Why the server could not start or keep running.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The durable log could not open.
    #[error("storage: {0}")]
    Storage(Box<crate::raft::OpenError>),
    /// The durable log stopped while serving (a write or fsync failed): the server stops
    /// rather than acknowledge writes that may not be durable.
    #[error("the log stopped: {0}")]
    LogStopped(Box<openraft::error::Fatal<crate::raft::types::TypeConfig>>),
}

impl From<crate::raft::OpenError> for Error {
    fn from(e: crate::raft::OpenError) -> Self {
        Error::Storage(Box::new(e))
    }
}

impl From<openraft::error::Fatal<crate::raft::types::TypeConfig>> for Error {
    fn from(e: openraft::error::Fatal<crate::raft::types::TypeConfig>) -> Self {
        Error::LogStopped(Box::new(e))
    }
}
