//! What the fallible (`try_`) side of the harness reports. Tests mostly use the panicking
//! forms; a program that starts servers for its users (`ward check`) uses these, so that a
//! missing binary or a port race is an error message, not a panic.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// No `ward-server` binary where one was looked for.
    #[error(
        "cannot find the ward-server binary (set WARD_SERVER_BIN, or install it beside this program: \
         `cargo install --path server`); looked at: {}",
        .looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    ServerBinaryNotFound { looked: Vec<PathBuf> },
    /// A server process did not start (or not listen); with its last words.
    #[error("ward-server did not start: {0}")]
    Start(String),
    /// A proxy or a directory could not be made.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// Sending a signal to a server process failed (or it was not running).
    #[error("kill {signal} ward-server: {why}")]
    Signal { signal: &'static str, why: String },
    /// The members did not agree on a leader in time.
    #[error("no leader answered within {0:?}")]
    NoLeader(Duration),
}

impl HarnessError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> HarnessError {
        HarnessError::Io { what: what.into(), source }
    }
}
