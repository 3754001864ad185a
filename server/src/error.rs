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
    /// The durable log could not open, or stopped (a write or fsync failed).
    #[error("storage: {0}")]
    Storage(String),
}
