//! Why `ward-server` did not start, or stopped. A [`ConfigError`] names the option (flag,
//! environment variable or config file key) at fault and exits 2, like a bad flag; anything
//! else exits 1.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {source}")]
    ReadFile { path: PathBuf, source: std::io::Error },
    #[error("config file {path}: {message}")]
    FileSyntax { path: PathBuf, message: String },
    #[error("config file {path}: unknown key \"{key}\"")]
    UnknownKey { path: PathBuf, key: String },
    #[error("config file {path}: key \"{key}\": {message}")]
    BadKey { path: PathBuf, key: String, message: String },
    #[error("{var}: invalid value \"{value}\": {message}")]
    BadEnv { var: String, value: String, message: String },
    #[error("{var}: not valid UTF-8")]
    EnvNotUnicode { var: String },
    /// Both `data-dir` and `in-memory` in one source.
    #[error("{source_name}: {why}")]
    DataChoice { source_name: String, why: &'static str },
    #[error("--{key} {value}: cannot resolve the host name: {source}")]
    Resolve { key: &'static str, value: String, source: std::io::Error },
    /// `--admin-token-file` names a file that cannot be read, is open to other users, or
    /// holds too short a token.
    #[error(transparent)]
    AdminToken(#[from] ward_server::admin::console::token::TokenFileError),
    /// Options that do not go together, or miss another.
    #[error("{0}")]
    Combination(String),
    /// TLS half-configured: `given` without what it needs.
    #[error("--{given} needs {missing}: TLS is half-configured")]
    TlsIncomplete { given: &'static str, missing: String },
    /// `--unsafe-break` outside a test's environment.
    #[error(
        "--unsafe-break {0} breaks a promise on purpose and is for tests only: refused unless {var}=1",
        var = ward_server::unsafe_break::ALLOW_VAR
    )]
    UnsafeBreakRefused(ward_server::unsafe_break::Break),
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("--{key} {addr}: cannot listen (the {listener} listener): {source}")]
    Bind { key: &'static str, listener: &'static str, addr: String, source: std::io::Error },
    #[error("writing the listening lines to stdout: {0}")]
    Stdout(std::io::Error),
    /// A TLS file that cannot be used (unreadable, not PEM, a key open to every user).
    #[error("TLS: {0}")]
    Tls(#[from] ward_server::tls::TlsError),
    #[error(transparent)]
    Dev(#[from] crate::dev::DevError),
    #[error(transparent)]
    Server(#[from] ward_server::Error),
    #[error("--restore or --force-new-ensemble: {0}")]
    Restore(#[from] ward_server::raft::RestoreError),
}

impl StartError {
    /// 2 for a configuration the server refuses (as for a bad flag), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            StartError::Config(_) | StartError::Tls(_) => 2,
            _ => 1,
        }
    }
}
