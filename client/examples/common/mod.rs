//! What the examples share: where the server is, and a plain message when none answers.

use std::process::ExitCode;
use ward_client::Error;

/// The address the `ward` CLI uses too: `$WARD_SERVER`, else `ward-server`'s default.
pub fn server() -> String {
    std::env::var("WARD_SERVER").unwrap_or_else(|_| "127.0.0.1:7181".to_string())
}

/// The exit status for how the example's work ended, with what went wrong on stderr.
pub fn exit(server: &str, outcome: Result<(), Error>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Connect(why)) => {
            eprintln!("no Ward server answers at {server} ({why}).");
            eprintln!("Start one with `cargo run --release --bin ward-server`, or set WARD_SERVER to its address.");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
