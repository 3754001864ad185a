//! The tree commands: `ls`, `tree`, `get`, `stat`, `create`, `set`, `rm`.

use crate::cli::Command;
use crate::commands::{ward, Failure};
use crate::output::{put_data, utc, warn, Out};
use crate::signals::Signals;
use serde_json::{json, Map, Value};
use std::io::Read;
use ward_client::{Acl, Client, CreateMode, Error, SessionState, Stat};
use ward_proto::path;

/// Refuses, before connecting, what the command line asks for but must not happen.
pub fn check(command: &Command) -> Result<(), Failure> {
    match command {
        Command::Rm { path, recursive: false, .. } if path == "/" => Err(Failure::Usage(
            "the root / cannot be deleted (`ward rm -r --force-root /` deletes every node below it)".into(),
        )),
        Command::Rm { path, recursive: true, force_root: false, .. } if path == "/" => Err(Failure::Usage(
            "refusing to delete every node below /; add --force-root if that is what you mean".into(),
        )),
        Command::Create { hold: true, data: Some(data), .. } if data == "-" => {
            Err(Failure::Usage("create --hold holds until stdin closes, so its DATA cannot come from stdin".into()))
        }
        _ => Ok(()),
    }
}

/// The data of `set PATH -` and `create PATH -`: stdin to its end (at most one byte more
/// than a node may hold, so that too much is refused by size rather than read whole).
pub fn stdin_data(command: &Command) -> Result<Option<Vec<u8>>, Failure> {
    let from_stdin = match command {
        Command::Set { data, .. } => data == "-",
        Command::Create { data: Some(data), .. } => data == "-",
        _ => false,
    };
    if !from_stdin {
        return Ok(None);
    }
    let mut data = Vec::new();
    let limit = u64::try_from(ward_proto::MAX_DATA_LEN).unwrap_or(u64::MAX).saturating_add(1);
    std::io::stdin().lock().take(limit).read_to_end(&mut data).map_err(Failure::Input)?;
    Ok(Some(data))
}

pub async fn ls(client: &Client, path: &str, out: Out) -> Result<(), Failure> {
    let children = client.get_children(path).await.map_err(ward(format!("ls {path}")))?;
    if out.json() {
        return out.value(&json!({ "path": path, "children": children }));
    }
    children.iter().try_for_each(|child| out.line(child))
}

pub async fn tree(client: &Client, path: &str, out: Out) -> Result<(), Failure> {
    let nodes = subtree(client, path).await?;
    if out.json() {
        return out.value(&json!({ "path": path, "nodes": nodes }));
    }
    nodes.iter().try_for_each(|node| out.line(node))
}

pub async fn get(client: &Client, path: &str, out: Out) -> Result<(), Failure> {
    let (data, stat) = client.get_data(path).await.map_err(ward(format!("get {path}")))?;
    print_data(path, &data, &stat, out)
}

/// The data as it is plus a newline, or `{"path", "data", "data_encoding", "stat"}`.
pub fn print_data(path: &str, data: &[u8], stat: &Stat, out: Out) -> Result<(), Failure> {
    if out.json() {
        let mut object = Map::new();
        object.insert("path".into(), json!(path));
        put_data(&mut object, "data", data);
        object.insert("stat".into(), stat_json(stat));
        return out.value(&Value::Object(object));
    }
    out.raw(&[data, b"\n"].concat())
}

pub async fn stat(client: &Client, path: &str, out: Out) -> Result<(), Failure> {
    let what = || ward(format!("stat {path}"));
    let stat = client.exists(path).await.map_err(what())?.ok_or(Error::NoNode).map_err(what())?;
    if out.json() {
        return out.value(&json!({ "path": path, "stat": stat_json(&stat) }));
    }
    let owner = stat.ephemeral_owner.map_or_else(|| "none".to_owned(), |s| s.to_string());
    let lines = [
        format!("czxid = {:#x}", stat.czxid),
        format!("mzxid = {:#x}", stat.mzxid),
        format!("pzxid = {:#x}", stat.pzxid),
        // Dates, as zkCli prints them (in UTC); `--output json` keeps the milliseconds.
        format!("ctime = {}", utc(stat.ctime)),
        format!("mtime = {}", utc(stat.mtime)),
        format!("version = {}", stat.version),
        format!("cversion = {}", stat.cversion),
        format!("aversion = {}", stat.aversion),
        format!("ephemeral_owner = {owner}"),
        format!("data_length = {}", stat.data_length),
        format!("num_children = {}", stat.num_children),
    ];
    lines.iter().try_for_each(|line| out.line(line))
}

/// A stat with the field names of `ward stat`; zxids as numbers, times in ms since the epoch.
fn stat_json(stat: &Stat) -> Value {
    json!({
        "czxid": stat.czxid,
        "mzxid": stat.mzxid,
        "pzxid": stat.pzxid,
        "ctime": stat.ctime,
        "mtime": stat.mtime,
        "version": stat.version,
        "cversion": stat.cversion,
        "aversion": stat.aversion,
        "ephemeral_owner": stat.ephemeral_owner.map(|s| s.to_string()),
        "data_length": stat.data_length,
        "num_children": stat.num_children,
    })
}

pub async fn create(
    client: &Client,
    path: &str,
    data: &[u8],
    ephemeral: bool,
    sequential: bool,
    acl: Option<&[Acl]>,
    out: Out,
) -> Result<(), Failure> {
    let mode = match (ephemeral, sequential) {
        (false, false) => CreateMode::Persistent,
        (true, false) => CreateMode::Ephemeral,
        (false, true) => CreateMode::PersistentSequential,
        (true, true) => CreateMode::EphemeralSequential,
    };
    let created = match acl {
        Some(acl) => client.create_with_acl(path, data, mode, acl).await,
        None => client.create(path, data, mode).await,
    };
    let created = match created {
        Err(Error::NoNode) => return Err(missing_parent(client, path).await),
        created => created.map_err(ward(format!("create {path}")))?,
    };
    // Flushed by `out` before a `--hold` blocks: whoever waits for the path must see it.
    if out.json() {
        return out.value(&json!({ "path": created }));
    }
    out.line(&created)
}

pub async fn set(client: &Client, path: &str, data: &[u8], version: Option<i32>) -> Result<(), Failure> {
    match client.set_data(path, data, version).await {
        Ok(_) => Ok(()),
        Err(Error::BadVersion) => Err(bad_version(client, "set", path, version).await),
        Err(error) => Err(ward(format!("set {path}"))(error)),
    }
}

/// Deletes `root` (with `recursive`, everything below it first). `rm -r /` (allowed by
/// [`check`] only with `--force-root`) deletes every node below the root, never the root.
pub async fn rm(client: &Client, root: &str, recursive: bool, version: Option<i32>) -> Result<(), Failure> {
    let doomed = if recursive { subtree(client, root).await? } else { vec![root.to_owned()] };
    // Nodes the server refused to delete as such (none in Ward's tree today): kept, and so
    // are the nodes above them.
    let mut kept: Vec<String> = Vec::new();
    // Deepest first, so that every node is empty by the time we delete it.
    for (i, node) in doomed.iter().enumerate().rev() {
        if node == "/" || kept.iter().any(|k| path::parent(k) == node) {
            kept.push(node.clone());
            continue;
        }
        match client.delete(node, version).await {
            Ok(()) => {}
            // Someone else removed a descendant first: that is what we wanted.
            Err(Error::NoNode) if i > 0 => {}
            Err(Error::BadArguments(why)) if root == "/" => {
                warn(format!("kept {node}: the server refuses to delete it ({why})"));
                kept.push(node.clone());
            }
            Err(Error::BadVersion) => return Err(bad_version(client, "rm", node, version).await),
            Err(error) => return Err(ward(format!("rm {node}"))(error)),
        }
    }
    Ok(())
}

/// A create's "no node", naming the missing parent and any missing ancestor above it (a
/// create makes one node; the user must make them first). If the parent has appeared since,
/// the plain error.
async fn missing_parent(client: &Client, path: &str) -> Failure {
    let mut missing = Vec::new();
    let mut node = path::parent(path);
    while node != "/" && matches!(client.exists(node).await, Ok(None)) {
        missing.push(node.to_owned());
        node = path::parent(node);
    }
    if missing.is_empty() {
        return ward(format!("create {path}"))(Error::NoNode);
    }
    missing.reverse();
    Failure::NoParent { what: format!("create {path}"), missing }
}

/// "bad version", saying which version the node is at now.
async fn bad_version(client: &Client, verb: &str, path: &str, expected: Option<i32>) -> Failure {
    let now = match client.exists(path).await {
        Ok(Some(stat)) => format!(", the node is at version {}", stat.version),
        _ => String::new(),
    };
    let expected = expected.map_or_else(String::new, |v| format!(": expected version {v}"));
    Failure::BadVersion { what: format!("{verb} {path}"), detail: format!("{expected}{now}") }
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

/// Keeps the session open until stdin closes, a SIGINT/SIGTERM arrives, or the session
/// ends by itself (which is reported as a failure: the ephemerals are gone).
pub async fn hold_session(client: &Client, mut signals: Signals) -> Result<(), Failure> {
    let (stdin_closed, stdin_eof) = tokio::sync::oneshot::channel::<()>();
    // Blocking reads of stdin on a thread of their own; tokio's stdin would need "io-std".
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::stdin().lock().read_to_end(&mut sink);
        let _ = stdin_closed.send(());
    });
    let mut states = client.state_changes();
    let session_ended = async move {
        loop {
            let state = *states.borrow_and_update();
            if state.is_terminal() {
                return state;
            }
            if states.changed().await.is_err() {
                return SessionState::Closed;
            }
        }
    };
    tokio::select! {
        _ = stdin_eof => Ok(()),
        _ = signals.recv() => Ok(()),
        state = session_ended => Err(Failure::Lost(state)),
    }
}
