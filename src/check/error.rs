//! Why a `ward check` run could not reach a verdict (a violation is not an error: it is in
//! the [`Report`](super::Report)).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// Starting the local ensemble, or inflicting a fault on it, failed.
    #[error(transparent)]
    Harness(#[from] ward_procs::HarnessError),
    /// The servers could not be reached, or refused to set up the run's nodes.
    #[error("{what}: {source}")]
    Client {
        what: String,
        #[source]
        source: ward_client::Error,
    },
    /// The servers did not answer within a bound where they must.
    #[error("{0}")]
    Timeout(String),
    /// The output directory or the history file.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A worker task died (a bug in the runner).
    #[error("a workload task failed: {0}")]
    Task(String),
}

impl CheckError {
    pub(crate) fn client(what: impl Into<String>) -> impl FnOnce(ward_client::Error) -> CheckError {
        let what = what.into();
        move |source| CheckError::Client { what, source }
    }
}
