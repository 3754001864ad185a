//! `ward`: a small command-line client for a Ward server.
//!
//! Exit status: 0 on success, 1 when the server or the connection reported an error, 2 for
//! a command line that does not parse. `lock`, `semaphore` and `elect` exit with their
//! command's status, or 3 (lock lost), 4 (`--timeout` passed), 127 (command not started),
//! 128+N (signal N to ward).

mod args;
mod commands;
mod holders;
mod run;

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut words = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(word) => words.push(word),
            Err(raw) => {
                eprintln!("ward: argument is not valid UTF-8: {raw:?}");
                return ExitCode::from(2);
            }
        }
    }
    let invocation = match args::parse(words, std::env::var("WARD_SERVER").ok()) {
        Ok(invocation) => invocation,
        Err(usage) => {
            eprintln!("ward: {usage}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    if invocation.command == args::Command::Help {
        println!("{}", args::USAGE);
        return ExitCode::SUCCESS;
    }
    // One connection and one request (or one child) at a time: a single-threaded runtime is
    // all we need.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("ward: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(commands::run(invocation)) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("ward: {failure}");
            ExitCode::from(failure.exit_code())
        }
    }
}
