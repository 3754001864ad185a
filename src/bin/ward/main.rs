//! `ward`: a small command-line client for a Ward server.
//!
//! # Layout
//! * `cli`: the command line (clap derive): commands, options, help texts.
//! * `commands`: connect, run one command, close; [`commands::Failure`] and exit codes.
//! * `nodes`: the tree commands (ls, tree, get, stat, create, set, rm).
//! * `acl`: `acl get|set|digest`.
//! * `watch`: `watch` and `get -w`: watch events as lines.
//! * `holders`, `status`, `observe`: lock queues; members and stats; election leaders.
//! * `run`: `lock`, `semaphore` and `elect`: a child command under a lock.
//! * `mismatch`: a `lock` or `semaphore` refused for its permits or lock-delay, explained
//!   from what the directory records.
//! * `group`: that command's process group: started, and stopped as a whole (SIGTERM, a
//!   grace, SIGKILL).
//! * `waiting`: what a queued `lock`, `semaphore` or `elect` says on stderr while it waits.
//! * `signals`: the SIGTERM, SIGINT (and SIGHUP) that long-running commands handle.
//! * `output`: text or JSON on stdout, writes that survive a closed stream, UTC times.
//! * `check`: `ward check` (the runner itself is the library's `ward::check`).
//! * `tls`: `ward tls ca create|cert create`: certificate files (made by `ward::certs`).
//!
//! Exit status: 0 on success, 1 when the server or the connection reported an error, 2 for
//! a command line that does not parse. `lock`, `semaphore` and `elect` exit with their
//! command's status, or 3 (lock lost), 4 (`--timeout` passed), 127 (command not started),
//! 128+N (signal N to ward).

mod acl;
mod backup;
mod check;
mod cli;
mod commands;
mod group;
mod holders;
mod mismatch;
mod nodes;
mod observe;
mod output;
mod run;
mod signals;
mod status;
mod tls;
mod waiting;
mod watch;

use clap::{CommandFactory, Parser};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // `--help` and `--version` come this way too, for stdout and exit 0. A closed
            // stream is no reason to panic: the write's failure is ignored.
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    if let cli::Command::Completions { shell } = cli.command {
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut cli::Cli::command(), "ward", &mut script);
        return exit(output::Out { format: cli.output }.raw(&script).map(|()| 0));
    }
    if let cli::Command::Check(args) = cli.command {
        return exit(check::run(args, output::Out { format: cli.output }));
    }
    if let cli::Command::Backup(args) = cli.command {
        return exit(backup::run(args, output::Out { format: cli.output }));
    }
    if let cli::Command::Tls { what } = cli.command {
        return exit(tls::run(what, output::Out { format: cli.output }));
    }
    // One connection and one request (or one child) at a time: a single-threaded runtime is
    // all we need.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            output::warn(format!("cannot start the runtime: {e}"));
            return ExitCode::from(1);
        }
    };
    let env = |name| std::env::var(name).ok();
    exit(runtime.block_on(commands::run(cli, env("WARD_SERVER"), env("WARD_AUTH"))))
}

fn exit(outcome: Result<u8, commands::Failure>) -> ExitCode {
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(commands::Failure::OutputClosed) => ExitCode::SUCCESS,
        Err(failure) => {
            output::warn(&failure);
            ExitCode::from(failure.exit_code())
        }
    }
}
