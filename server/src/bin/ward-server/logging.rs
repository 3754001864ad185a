//! Logs on stderr: `RUST_LOG` sets the filter; `--log-format` text (ANSI colours only when
//! stderr is a terminal, so that a redirected log is plain text) or JSON, one object a line.

use crate::args::values::LogFormat;
use std::io::IsTerminal;
use std::str::FromStr;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

pub fn init(format: LogFormat) {
    let rust_log = crate::args::env::rust_log();
    let parsed = rust_log.as_deref().map(Targets::from_str);
    // openraft narrates every start and stop at info; keep its warnings only by default.
    let default = || Targets::new().with_default(tracing::Level::INFO).with_target("openraft", tracing::Level::WARN);
    let filter = match &parsed {
        Some(Ok(targets)) => targets.clone(),
        _ => default(),
    };
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => {
            let ansi = std::io::stderr().is_terminal();
            registry.with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi)).init()
        }
        LogFormat::Json => {
            registry.with(tracing_subscriber::fmt::layer().json().with_writer(std::io::stderr).with_ansi(false)).init()
        }
    }
    if let (Some(value), Some(Err(error))) = (rust_log, parsed) {
        tracing::warn!(%value, %error, "RUST_LOG not understood; logging at info");
    }
}
