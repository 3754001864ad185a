//! Options from the environment: `WARD_` and the option's name in capitals, `-` as `_`
//! (`WARD_MIN_SESSION_TIMEOUT_MS=4000`, `WARD_IN_MEMORY=true`). Only those variables are
//! read: other `WARD_*` variables (`WARD_SERVER`, which the `ward` CLI reads) are none of
//! the server's business. An empty variable counts as unset. Besides them: `RUST_LOG` (the
//! log filter) and whether `TOKIO_WORKER_THREADS` is set, by the names every tokio and
//! tracing program answers to. No other file of the server reads the environment.

use super::cli::Cli;
use super::settings::{env_var, keys, Settings};
use crate::error::ConfigError;
use clap::error::{ContextKind, ContextValue};
use clap::Parser;
use std::error::Error as _;
use std::path::PathBuf;

/// The options set in the environment.
pub fn load() -> Result<Settings, ConfigError> {
    load_from(|var| std::env::var_os(var))
}

/// `WARD_CONFIG`: the config file, when `--config` does not name one.
pub fn config_file() -> Result<Option<PathBuf>, ConfigError> {
    Ok(value("WARD_CONFIG", &|var| std::env::var_os(var))?.map(PathBuf::from))
}

/// Whether this process may break a promise (`--unsafe-break`): `WARD_ALLOW_UNSAFE_BREAK`
/// is `1`, which only the tests' processes are given.
pub fn unsafe_break_allowed() -> bool {
    std::env::var(ward_server::unsafe_break::ALLOW_VAR).is_ok_and(|v| v == "1")
}

/// `RUST_LOG`, the log filter, if set and not blank.
pub fn rust_log() -> Option<String> {
    std::env::var("RUST_LOG").ok().filter(|s| !s.trim().is_empty())
}

/// Whether `TOKIO_WORKER_THREADS` is set: tokio then sizes its own worker pool.
pub fn tokio_sizes_workers() -> bool {
    std::env::var_os("TOKIO_WORKER_THREADS").is_some_and(|v| !v.is_empty())
}

fn load_from(get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<Settings, ConfigError> {
    let mut settings = Settings::default();
    for key in keys() {
        let var = env_var(&key);
        let Some(value) = value(&var, &get)? else { continue };
        // Parsed as `--key=value` would be, so that the checks are the command line's.
        let one = Cli::try_parse_from(["ward-server".to_string(), format!("--{key}={value}")])
            .map_err(|e| ConfigError::BadEnv { var, value, message: reason(&e) })?;
        settings = one.settings.and(settings);
    }
    settings.check_data_choice().map_err(|why| ConfigError::DataChoice { source_name: "environment".into(), why })?;
    Ok(settings)
}

fn value(var: &str, get: &impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<Option<String>, ConfigError> {
    match get(var) {
        None => Ok(None),
        Some(value) if value.is_empty() => Ok(None),
        Some(value) => value.into_string().map(Some).map_err(|_| ConfigError::EnvNotUnicode { var: var.into() }),
    }
}

/// What was wrong with the value, without clap's mention of the flag.
fn reason(error: &clap::Error) -> String {
    if let Some(source) = error.source() {
        return source.to_string();
    }
    if let Some(ContextValue::Strings(valid)) = error.get(ContextKind::ValidValue) {
        return format!("expected one of {}", valid.join(", "));
    }
    error.kind().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        load_from(|var| vars.get(var).map(Into::into))
    }

    #[test]
    fn reads_only_its_own_variables() {
        let s = from(&[("WARD_SERVER", "x"), ("WARD_LISTEN", "localhost:1"), ("WARD_IN_MEMORY", "1"), ("WARD_ID", "")])
            .expect("load");
        assert_eq!(s.listen.map(|a| a.to_string()), Some("localhost:1".into()));
        assert_eq!((s.in_memory, s.id), (Some(true), None));
    }

    #[test]
    fn names_the_variable_and_value() {
        let e = from(&[("WARD_MIN_SESSION_TIMEOUT_MS", "abc")]).expect_err("abc").to_string();
        assert_eq!(e, "WARD_MIN_SESSION_TIMEOUT_MS: invalid value \"abc\": invalid digit found in string");
        let e = from(&[("WARD_LOG_FORMAT", "xml")]).expect_err("xml").to_string();
        assert_eq!(e, "WARD_LOG_FORMAT: invalid value \"xml\": expected one of text, json");
        let e = from(&[("WARD_DEV_ENSEMBLE", "0")]).expect_err("0").to_string();
        assert_eq!(e, "WARD_DEV_ENSEMBLE: invalid value \"0\": must be between 1 and 9");
        let e = from(&[("WARD_JOIN", "perhaps")]).expect_err("perhaps").to_string();
        assert!(e.starts_with("WARD_JOIN: invalid value \"perhaps\": "), "{e}");
    }
}
