//! Running one parsed command against the server.

use crate::args::{Command, Invocation};
use crate::holders;
use crate::run::{self, Signals};
use std::fmt;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::time::Duration;
use ward_client::{Client, CreateMode, Error, SessionState, Stat};
use ward_proto::path;

/// Long enough for a loaded machine, short enough that a wrong address fails visibly.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a command failed.
pub enum Failure {
    /// The server or the connection refused `what`.
    Ward { what: String, error: Error },
    /// Writing our own output failed (a closed pipe, say).
    Output(std::io::Error),
    /// The held session ended before we were asked to let go.
    Lost(SessionState),
    /// `--timeout` passed before the lock (`what`) was granted; CMD did not run.
    NotGranted { what: String, timeout: Duration },
    /// The lock or leadership (`what`) can no longer be trusted; CMD was sent SIGTERM.
    LockLost { what: String },
    /// SIGTERM or SIGINT (the number) reached ward; `then` says what ward did about it.
    Interrupted { signal: i32, name: &'static str, then: String },
    /// CMD could not be started.
    Spawn { program: String, error: std::io::Error },
}

impl Failure {
    /// The exit status this failure ends `ward` with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Ward { .. } | Failure::Output(_) | Failure::Lost(_) => 1,
            Failure::LockLost { .. } => 3,
            Failure::NotGranted { .. } => 4,
            Failure::Interrupted { signal, .. } => u8::try_from(128 + signal).unwrap_or(1),
            Failure::Spawn { .. } => 127,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Ward { what, error } => write!(f, "{what}: {error}"),
            Failure::Output(e) => write!(f, "writing output: {e}"),
            Failure::Lost(state) => write!(f, "session ended while holding: {state:?}"),
            Failure::NotGranted { what, timeout } => {
                write!(f, "{what} not granted within {timeout:?}; command not run")
            }
            Failure::LockLost { what } => {
                write!(f, "{what} lost (session expired, or cut off from the server too long); command sent SIGTERM")
            }
            Failure::Interrupted { name, then, .. } => write!(f, "interrupted by {name}; {then}"),
            Failure::Spawn { program, error } => write!(f, "cannot run {program}: {error}"),
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Output(e)
    }
}

pub fn ward(what: impl Into<String>) -> impl FnOnce(Error) -> Failure {
    let what = what.into();
    move |error| Failure::Ward { what, error }
}

/// Runs the command; `Ok` carries the exit status (CMD's, for `lock`, `semaphore` and
/// `elect`).
pub async fn run(invocation: Invocation) -> Result<u8, Failure> {
    // Before connecting: from here on SIGTERM and SIGINT are ours to handle, so that CMD is
    // stopped and the lock released rather than ward dying with CMD still running.
    let signals = matches!(invocation.command, Command::Lock { .. } | Command::Elect { .. }).then(Signals::install);
    let mut builder = Client::builder(&invocation.server).connect_timeout(CONNECT_TIMEOUT);
    if let Some(timeout) = invocation.session_timeout {
        builder = builder.session_timeout(timeout);
    }
    let client = builder.connect().await.map_err(ward(format!("connect to {}", invocation.server)))?;
    let outcome = match (invocation.command, signals) {
        (Command::Lock { paths, kind, timeout, cmd }, Some(signals)) => {
            run::lock(&client, &paths, kind, timeout, &cmd, signals).await
        }
        (Command::Elect { path, id, cmd }, Some(signals)) => run::elect(&client, &path, &id, &cmd, signals).await,
        (command, _) => execute(&client, command).await.map(|()| 0),
    };
    // Close explicitly so that our ephemerals go now, not one session timeout later.
    let closed = client.close().await.map_err(ward("close session"));
    match (outcome, closed) {
        // A session that already ended cannot be closed; the first failure says why.
        (Err(failure), _) => Err(failure),
        (Ok(code), closed) => closed.map(|()| code),
    }
}

async fn execute(client: &Client, command: Command) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match command {
        // Handled by `run`.
        Command::Help | Command::Lock { .. } | Command::Elect { .. } => {}
        Command::Holders { path } => {
            let queue = client.lock_holders(&path).await.map_err(ward(format!("holders {path}")))?;
            for contender in &queue {
                writeln!(out, "{}", holders::line(contender))?;
            }
        }
        Command::Members => {
            let members = client.members().await.map_err(ward("members"))?;
            writeln!(out, "{:<4} {:<24} {:<9} {:>10} {:>6}", "ID", "PEER ADDRESS", "ROLE", "APPLIED", "LAG")?;
            for m in members {
                let known = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
                let role = format!("{:?}", m.role).to_lowercase();
                writeln!(out, "{:<4} {:<24} {:<9} {:>10} {:>6}", m.id, m.addr, role, known(m.applied), known(m.lag))?;
            }
        }
        Command::AddMember { id, addr } => {
            client.add_member(id, &addr).await.map_err(ward(format!("members add {id}={addr}")))?;
        }
        Command::RemoveMember { id } => {
            client.remove_member(id).await.map_err(ward(format!("members remove {id}")))?;
        }
        Command::Ls { path } => {
            let children = client.get_children(&path).await.map_err(ward(format!("ls {path}")))?;
            for child in children {
                writeln!(out, "{child}")?;
            }
        }
        Command::Tree { path } => {
            for node in subtree(client, &path).await? {
                writeln!(out, "{node}")?;
            }
        }
        Command::Get { path } => {
            let (data, _) = client.get_data(&path).await.map_err(ward(format!("get {path}")))?;
            out.write_all(&data)?;
            out.write_all(b"\n")?;
        }
        Command::Stat { path } => {
            let stat = client
                .exists(&path)
                .await
                .map_err(ward(format!("stat {path}")))?
                .ok_or(Error::NoNode)
                .map_err(ward(format!("stat {path}")))?;
            write_stat(&mut out, &stat)?;
        }
        Command::Create { path, data, ephemeral, sequential, hold } => {
            let mode = match (ephemeral, sequential) {
                (false, false) => CreateMode::Persistent,
                (true, false) => CreateMode::Ephemeral,
                (false, true) => CreateMode::PersistentSequential,
                (true, true) => CreateMode::EphemeralSequential,
            };
            // Registered before the path is printed: whoever sees the path may signal at once.
            let release = hold.then(termination);
            let created = client.create(&path, &data, mode).await.map_err(ward(format!("create {path}")))?;
            writeln!(out, "{created}")?;
            // Whoever waits for the path (a test, a script) must see it before we block.
            out.flush()?;
            drop(out);
            if let Some(release) = release {
                hold_session(client, release).await?;
            }
        }
        Command::Set { path, data } => {
            client.set_data(&path, &data, None).await.map_err(ward(format!("set {path}")))?;
        }
        Command::Rm { path, recursive } => {
            let doomed = if recursive { subtree(client, &path).await? } else { vec![path.clone()] };
            // Deepest first, so that every node is empty by the time we delete it.
            for (i, node) in doomed.iter().enumerate().rev() {
                match client.delete(node, None).await {
                    Ok(()) => {}
                    // Someone else removed a descendant first: that is what we wanted.
                    Err(Error::NoNode) if i > 0 => {}
                    Err(error) => return Err(ward(format!("rm {node}"))(error)),
                }
            }
        }
    }
    Ok(())
}

/// `root` and every node below it, parents before their children, siblings sorted.
async fn subtree(client: &Client, root: &str) -> Result<Vec<String>, Failure> {
    let mut nodes = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(node) = stack.pop() {
        match client.get_children(&node).await {
            Ok(children) => {
                // Reversed onto the stack so that they come off in sorted order.
                for child in children.iter().rev() {
                    stack.push(path::join(&node, child));
                }
                nodes.push(node);
            }
            // A descendant deleted while we walk is simply not there any more.
            Err(Error::NoNode) if node != root => {}
            Err(error) => return Err(ward(format!("list {node}"))(error)),
        }
    }
    Ok(nodes)
}

fn write_stat(out: &mut impl Write, stat: &Stat) -> std::io::Result<()> {
    let owner = match stat.ephemeral_owner {
        Some(session) => session.to_string(),
        None => "none".to_owned(),
    };
    writeln!(out, "czxid = {:#x}", stat.czxid)?;
    writeln!(out, "mzxid = {:#x}", stat.mzxid)?;
    writeln!(out, "pzxid = {:#x}", stat.pzxid)?;
    writeln!(out, "ctime = {}", stat.ctime)?;
    writeln!(out, "mtime = {}", stat.mtime)?;
    writeln!(out, "version = {}", stat.version)?;
    writeln!(out, "cversion = {}", stat.cversion)?;
    writeln!(out, "aversion = {}", stat.aversion)?;
    writeln!(out, "ephemeral_owner = {owner}")?;
    writeln!(out, "data_length = {}", stat.data_length)?;
    writeln!(out, "num_children = {}", stat.num_children)
}

/// Keeps the session open until stdin closes, a SIGINT/SIGTERM arrives, or the session
/// ends by itself (which is reported as a failure: the ephemerals are gone).
async fn hold_session(client: &Client, termination: Termination) -> Result<(), Failure> {
    let (stdin_closed, stdin_eof) = tokio::sync::oneshot::channel::<()>();
    // Blocking reads of stdin on a thread of their own; tokio's stdin would need "io-std".
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut sink);
        let _ = stdin_closed.send(());
    });
    let mut states = client.state_changes();
    let session_ended = async move {
        loop {
            let state = *states.borrow_and_update();
            if matches!(state, SessionState::Expired | SessionState::Closed) {
                return state;
            }
            if states.changed().await.is_err() {
                return SessionState::Closed;
            }
        }
    };
    tokio::select! {
        _ = stdin_eof => Ok(()),
        _ = termination => Ok(()),
        state = session_ended => Err(Failure::Lost(state)),
    }
}

/// Resolves on SIGTERM or SIGINT.
type Termination = Pin<Box<dyn Future<Output = ()>>>;

/// Installs the handlers now (not on first poll), so a signal arriving before we wait on it
/// is still a request to let go rather than the default, abrupt exit.
#[cfg(unix)]
fn termination() -> Termination {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut term), Ok(mut int)) => Box::pin(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }),
        // Without handlers the default action still ends the process on those signals.
        _ => Box::pin(std::future::pending()),
    }
}

#[cfg(not(unix))]
fn termination() -> Termination {
    Box::pin(async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}
