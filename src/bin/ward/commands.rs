//! Running one parsed command against the server: connect, dispatch, close.

use crate::cli::{Cli, Command, MembersChange, RunArgs};
use crate::output::Out;
use crate::signals::{Received, Signals};
use crate::{acl, holders, nodes, observe, run, status, watch};
use std::fmt;
use std::time::Duration;
use ward_client::{Client, Error, LockKind, SessionState};

/// Long enough for a loaded machine, short enough that a wrong address fails visibly.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a command failed.
pub enum Failure {
    /// The command line asks for something ward refuses before connecting (exit 2).
    Usage(String),
    /// The server or the connection refused `what`.
    Ward { what: String, error: Error },
    /// A create whose parent does not exist: `missing` are the nodes to create first, the
    /// highest first (the last is the parent).
    NoParent { what: String, missing: Vec<String> },
    /// A lock or semaphore (`what`) refused for its permits or lock-delay; `mismatch` says
    /// what the directory has.
    Mismatch { what: String, mismatch: crate::mismatch::Mismatch },
    /// A version-conditional write (`-v`) found the node at another version; `detail` says
    /// which.
    BadVersion { what: String, detail: String },
    /// Reading stdin (data given as `-`) failed.
    Input(std::io::Error),
    /// Writing our own output failed for another reason than its reader being gone.
    Output(std::io::Error),
    /// Stdout is closed (its reader went away): stop quietly, as `head` expects.
    OutputClosed,
    /// The held session ended before we were asked to let go.
    Lost(SessionState),
    /// `--timeout` passed before the lock (`what`) was granted; CMD did not run.
    NotGranted { what: String, timeout: Duration },
    /// The lock or leadership (`what`) can no longer be trusted; `stopped` says how CMD's
    /// process group was stopped.
    LockLost { what: String, stopped: String },
    /// SIGTERM, SIGINT or SIGHUP reached ward; `then` says what ward did about it.
    Interrupted { signal: Received, then: String },
    /// CMD could not be started.
    Spawn { program: String, error: std::io::Error },
    /// `ward check` could not reach a verdict.
    Check(ward::check::CheckError),
    /// `ward check` reached one: some checker failed (the report says which).
    CheckFailed,
    /// `ward tls` could not make or write a certificate.
    Tls(crate::tls::TlsFileError),
    /// `ward backup` wrote no backup.
    Backup(crate::backup::BackupError),
}

impl Failure {
    /// The exit status this failure ends `ward` with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::OutputClosed => 0,
            Failure::Ward { .. }
            | Failure::NoParent { .. }
            | Failure::Mismatch { .. }
            | Failure::BadVersion { .. }
            | Failure::Input(_)
            | Failure::Output(_)
            | Failure::Lost(_)
            | Failure::Check(_)
            | Failure::CheckFailed
            | Failure::Tls(_)
            | Failure::Backup(_) => 1,
            Failure::Usage(_) => 2,
            Failure::LockLost { .. } => 3,
            Failure::NotGranted { .. } => 4,
            Failure::Interrupted { signal, .. } => u8::try_from(128 + signal.number).unwrap_or(1),
            Failure::Spawn { .. } => 127,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(message) => f.write_str(message),
            Failure::Ward { what, error } => write!(f, "{what}: {error}"),
            Failure::NoParent { what, missing } => {
                let Some((parent, above)) = missing.split_last() else { return write!(f, "{what}: no node") };
                let (above, it) = match above {
                    [] => (String::new(), "it"),
                    above => (format!(", nor does {}", above.join(", ")), "them"),
                };
                let creates: Vec<String> = missing.iter().map(|m| format!("`ward create {m}`")).collect();
                let creates = creates.join(", then ");
                write!(f, "{what}: no node: the parent {parent} does not exist{above}; create {it} first: {creates}")
            }
            Failure::Mismatch { what, mismatch } => write!(f, "{what}: {mismatch}"),
            Failure::BadVersion { what, detail } => write!(f, "{what}: bad version{detail}"),
            Failure::Input(e) => write!(f, "reading data from stdin: {e}"),
            Failure::Output(e) => write!(f, "writing output: {e}"),
            Failure::OutputClosed => f.write_str("output closed"),
            Failure::Lost(state) => write!(f, "session ended while holding: {state:?}"),
            Failure::NotGranted { what, timeout } => {
                write!(f, "{what} not granted within {timeout:?}; command not run")
            }
            Failure::LockLost { what, stopped } => {
                write!(f, "{what} lost (session expired, or cut off from the server too long); {stopped}")
            }
            Failure::Interrupted { signal, then } => write!(f, "interrupted by {}; {then}", signal.name),
            Failure::Spawn { program, error } => write!(f, "cannot run {program}: {error}"),
            Failure::Check(e) => write!(f, "check: {e}"),
            Failure::CheckFailed => f.write_str("check: FAILED (see the report)"),
            Failure::Tls(e) => write!(f, "tls: {e}"),
            Failure::Backup(e) => write!(f, "backup: {e}"),
        }
    }
}

pub fn ward(what: impl Into<String>) -> impl FnOnce(Error) -> Failure {
    let what = what.into();
    move |error| Failure::Ward { what, error }
}

/// Runs the command; `Ok` carries the exit status (CMD's, for `lock`, `semaphore` and
/// `elect`). `env_server` and `env_auth` are `$WARD_SERVER` and `$WARD_AUTH`.
pub async fn run(cli: Cli, env_server: Option<String>, env_auth: Option<String>) -> Result<u8, Failure> {
    let out = Out { format: cli.output };
    if let Command::Acl { action } = &cli.command {
        if let Some(done) = acl::offline(action, out) {
            return done;
        }
    }
    let server = cli.server(env_server);
    let session_timeout = cli.session_timeout();
    let auth = cli.auth(env_auth).map_err(|e| Failure::Usage(format!("$WARD_AUTH: {e}")))?;
    // Everything that can be refused or read without the server, before the session opens:
    // a session must not wait on a slow stdin.
    nodes::check(&cli.command)?;
    let stdin_data = nodes::stdin_data(&cli.command)?;
    // Before connecting: from here on SIGTERM and SIGINT are ours to handle, so that CMD is
    // stopped and the lock released (or a watch ends cleanly) rather than ward dying
    // half-way. Other commands keep the default: a signal ends them at once.
    let signals = handled_signals(&cli.command).map(Signals::install);
    let mut builder = Client::builder(&server).connect_timeout(CONNECT_TIMEOUT);
    if let Some(timeout) = session_timeout {
        builder = builder.session_timeout(timeout);
    }
    if let Some(tls) = cli.tls().map_err(ward("read the TLS files".to_string()))? {
        builder = builder.tls(tls);
    }
    for spec in &auth {
        builder = builder.auth(&spec.scheme, &spec.credentials);
    }
    let client = builder.connect().await.map_err(ward(format!("connect to {server}")))?;
    let outcome = execute(&client, cli.command, out, stdin_data, signals).await;
    // Close explicitly so that our ephemerals go now, not one session timeout later.
    let closed = client.close().await.map_err(ward("close session"));
    match (outcome, closed) {
        // A session that already ended cannot be closed; the first failure says why.
        (Err(failure), _) => Err(failure),
        (Ok(code), closed) => closed.map(|()| code),
    }
}

/// The commands that handle signals themselves: those that run until told to stop
/// (`Some(false)`), and those that run CMD, which must be stopped first (`Some(true)`: SIGHUP
/// too, which CMD in a process group of its own would not get from a closing terminal).
fn handled_signals(command: &Command) -> Option<bool> {
    match command {
        Command::Lock { .. } | Command::Semaphore { .. } | Command::Elect { observe: false, .. } => Some(true),
        Command::Elect { observe: true, .. }
        | Command::Watch { .. }
        | Command::Get { watch: true, .. }
        | Command::Create { hold: true, .. } => Some(false),
        _ => None,
    }
}

async fn execute(
    client: &Client,
    command: Command,
    out: Out,
    stdin_data: Option<Vec<u8>>,
    signals: Option<Signals>,
) -> Result<u8, Failure> {
    let data = |given: Option<String>| stdin_data.unwrap_or_else(|| given.unwrap_or_default().into_bytes());
    // Installed by `run` for exactly the commands below that take them.
    let signals = || signals.unwrap_or_else(|| Signals::install(false));
    let run = |cmd, running: RunArgs| run::Run { cmd, grace: running.grace, quiet: running.quiet };
    match command {
        Command::Lock { shared, timeout, delay, paths, cmd, running } => {
            let kind = if shared { LockKind::Shared } else { LockKind::Exclusive };
            let asked = run::Asked { kind, timeout: timeout.limit, lock_delay: delay.delay };
            return run::lock(client, &paths, asked, run(&cmd.argv, running), signals()).await;
        }
        Command::Semaphore { permits, timeout, delay, path, cmd, running } => {
            let kind = LockKind::Semaphore { permits };
            let asked = run::Asked { kind, timeout: timeout.limit, lock_delay: delay.delay };
            return run::lock(client, &[path], asked, run(&cmd.argv, running), signals()).await;
        }
        Command::Elect { path, observe: true, .. } => observe::leaders(client, &path, out, signals()).await?,
        Command::Elect { path, id, cmd, running, .. } => {
            return run::elect(client, &path, &id.unwrap_or_default(), run(&cmd, running), signals()).await;
        }
        Command::Ls { path } => nodes::ls(client, &path, out).await?,
        Command::Tree { path } => nodes::tree(client, &path, out).await?,
        Command::Get { path, watch: false } => nodes::get(client, &path, out).await?,
        Command::Get { path, watch: true } => watch::get_and_wait(client, &path, out, signals()).await?,
        Command::Stat { path } => nodes::stat(client, &path, out).await?,
        Command::Create { ephemeral, sequential, hold, acl, path, data: given } => {
            let acl = acl.as_ref().map(|acl| acl.0.as_slice());
            nodes::create(client, &path, &data(given), ephemeral, sequential, acl, out).await?;
            if hold {
                nodes::hold_session(client, signals()).await?;
            }
        }
        Command::Set { version, path, data: given } => nodes::set(client, &path, &data(Some(given)), version).await?,
        Command::Rm { recursive, version, path, .. } => nodes::rm(client, &path, recursive, version).await?,
        Command::Watch { path, children, recursive } => {
            let depth = match (children, recursive) {
                (_, true) => None,
                (true, false) => Some(1),
                (false, false) => Some(0),
            };
            watch::stream(client, &path, depth, out, signals()).await?;
        }
        Command::Acl { action } => acl::run(client, action, out).await?,
        Command::Holders { path } => holders::show(client, &path, out).await?,
        Command::Members { change: None } => status::members(client, out).await?,
        Command::Members { change: Some(MembersChange::Add { member: (id, addr), observer: false }) } => {
            client.add_member(id, &addr).await.map_err(ward(format!("members add {id}={addr}")))?;
        }
        Command::Members { change: Some(MembersChange::Add { member: (id, addr), observer: true }) } => {
            client.add_observer(id, &addr).await.map_err(ward(format!("members add --observer {id}={addr}")))?;
        }
        Command::Members { change: Some(MembersChange::Remove { id }) } => {
            client.remove_member(id).await.map_err(ward(format!("members remove {id}")))?;
        }
        Command::Members { change: Some(MembersChange::TransferLeader { id }) } => {
            let leader = client.transfer_leader(id).await.map_err(ward("members transfer-leader"))?;
            match out.json() {
                true => out.value(&serde_json::json!({ "leader": leader }))?,
                false => out.line(&format!("member {leader} leads"))?,
            }
        }
        Command::Stats => status::stats(client, out).await?,
        // Handled before connecting.
        Command::Completions { .. } | Command::Check(_) | Command::Tls { .. } | Command::Backup(_) => {}
    }
    Ok(0)
}
