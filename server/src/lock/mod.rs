//! Lock queues on the server: who holds, and who becomes holder when contenders leave.
//!
//! Nothing here is stored beyond multi-lock groups: holders are derived from the tree by
//! [`ward_proto::lock::holders`] (exclusive: first; shared: no exclusive ahead; semaphore:
//! fewer than `permits` ahead). After an apply that deleted contenders, the holders of each
//! touched queue are computed before and after the apply; a Ward contender that holds now
//! and did not before has just been granted, and its session is told once. Waiters thus
//! depend only on what is ahead of them, and one release sends one message per new holder:
//! one for a mutex, one per reader when a writer lets a run of readers in.
//!
//! Lock-delay: when a session ends without releasing (it expired, or the server ended it),
//! a contender of it that holds a lock whose directory records a delay
//! ([`ward_proto::lock::DirHeader`]) is not deleted but kept at the head of its queue as a
//! [`NodeKind::LockDelay`](crate::tree::NodeKind::LockDelay) node, from the end of the
//! session (its `mtime`). The leader deletes it once the delay has passed
//! ([`crate::lock_delay`]); that delete grants the lock to the next contender like any
//! release. Everyone derives holders from the queue, so the kept node holds the lock for
//! Ward's own grants and for ZooKeeper recipes alike; its fence no longer holds (its session
//! is gone).

mod apply;

use crate::command::{Change, Command, CommandOp};
use crate::state::StateMachine;
use crate::tree::DataTree;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use ward_proto::lock::DirHeader;
use ward_proto::{lock, path, ErrorCode, LockKind, SessionId, Zxid};

/// One lock attempt as a command asks for it.
pub(crate) struct Attempt<'a> {
    pub dirs: &'a [String],
    pub tag: u64,
    pub kind: LockKind,
    pub data: &'a [u8],
    /// The lock-delay the attempt asks its directories to have; `None`: whatever they have.
    pub lock_delay_ms: Option<u64>,
}

/// The lock-delay of `dir` (0: none), as its data records it.
pub(crate) fn lock_delay_ms(tree: &DataTree, dir: &str) -> u64 {
    tree.get(dir).and_then(|n| DirHeader::parse(n.data())).map_or(0, |h| h.lock_delay_ms)
}

/// The contenders of `session` that hold their lock (their whole attempt holds) in a
/// directory with a lock-delay, with that delay: what the end of the session without a
/// release keeps in place (`DataTree::hold_over`).
pub(crate) fn held_with_delay(state: &StateMachine, session: SessionId) -> Vec<(String, u64)> {
    let contenders = state.tree.ephemerals(session).filter(|p| lock::sequence(path::name(p)).is_some());
    contenders
        .filter_map(|p| {
            let delay = lock_delay_ms(&state.tree, path::parent(p));
            (delay > 0 && attempt_holds(state, p)).then(|| (p.to_string(), delay))
        })
        .collect()
}

/// What a member can tell of an acquire by `session` before logging it, from the state it has
/// applied (which may be behind; apply decides what the acquire gets):
/// - a lock (exclusive or shared) in a semaphore's directory is refused (`PermitsMismatch`):
///   it would hold as one more permit. Refused here, not in apply, so that replaying a log
///   written before this rule gives the same state;
/// - whether an exclusive acquire will wait: some directory holds a contender of another
///   session. A hint for batching only ([`crate::replication::Replication::submit_waiting`]).
pub(crate) fn before_logging(
    tree: &DataTree,
    session: SessionId,
    dirs: &[String],
    kind: LockKind,
) -> Result<bool, ErrorCode> {
    let semaphore = |dir: &String| tree.get(dir).is_some_and(|n| lock::parse_semaphore_header(n.data()).is_some());
    if !matches!(kind, LockKind::Semaphore { .. }) && dirs.iter().any(semaphore) {
        return Err(ErrorCode::PermitsMismatch);
    }
    if kind != LockKind::Exclusive {
        return Ok(false);
    }
    let another = |name: &str| lock::parse_contender(name).is_some_and(|(owner, _)| owner != session);
    Ok(dirs.iter().any(|dir| tree.get(dir).is_some_and(|node| node.children.iter().any(another))))
}

/// The permits of a directory's semaphore (1 if it is not a semaphore).
pub(crate) fn permits(tree: &DataTree, dir: &str) -> u32 {
    tree.get(dir).and_then(|n| lock::parse_semaphore_header(n.data())).unwrap_or(1)
}

/// The names in `dir`'s queue that hold.
fn holding<'a>(names: impl IntoIterator<Item = &'a str>, permits: u32) -> BTreeSet<&'a str> {
    let queue = lock::queue(names);
    let flags = lock::holders(&queue, permits);
    queue.into_iter().zip(flags).filter(|(_, holds)| *holds).map(|(name, _)| name).collect()
}

/// True if the node at `path` holds in its directory's queue.
pub(crate) fn is_holder(tree: &DataTree, path: &str) -> bool {
    if path == "/" {
        return false;
    }
    let dir = path::parent(path);
    let Some(node) = tree.get(dir) else { return false };
    holding(node.children.iter(), permits(tree, dir)).contains(path::name(path))
}

/// True if every contender of the attempt `path` belongs to holds.
pub(crate) fn attempt_holds(state: &StateMachine, path: &str) -> bool {
    match group_of(state, path) {
        Some(paths) => paths.iter().all(|p| is_holder(&state.tree, p)),
        None => is_holder(&state.tree, path),
    }
}

/// The contender paths of the multi-lock attempt `path` belongs to, if it is one.
pub(crate) fn group_of<'a>(state: &'a StateMachine, path: &str) -> Option<&'a Vec<String>> {
    let (session, tag) = lock::parse_contender(path::name(path))?;
    state.lock_groups.get(&(session, tag))
}

/// The locks held by the session `cmd` expires, if it is an expiry: applying it releases
/// them against their holder's will. 0 for any other command.
pub(crate) fn held_by_expiring(state: &StateMachine, cmd: &Command) -> usize {
    if !matches!(cmd.op, CommandOp::ExpireSession) {
        return 0;
    }
    let contenders = state.tree.ephemerals(cmd.session).filter(|p| lock::sequence(path::name(p)).is_some());
    contenders.filter(|p| attempt_holds(state, p)).count()
}

/// A lock attempt that became held in this apply, and must be told.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Grant {
    pub session: SessionId,
    pub path: String,
    pub token: Zxid,
    /// When the attempt's contender was created (ms since the epoch): it waited since.
    pub asked_ms: i64,
}

/// Ward attempts that became held through the deletes in `changes`.
pub(crate) fn grants(state: &StateMachine, changes: &[Change]) -> Vec<Grant> {
    // Per directory: contenders deleted and created by this apply.
    let mut touched: BTreeMap<&str, (Vec<&str>, HashSet<&str>)> = BTreeMap::new();
    for change in changes {
        if let Change::Deleted(p) = change {
            if lock::sequence(path::name(p)).is_some() {
                touched.entry(path::parent(p)).or_default().0.push(path::name(p));
            }
        }
    }
    for change in changes {
        if let Change::Created(p) = change {
            if let Some(entry) = touched.get_mut(path::parent(p)) {
                entry.1.insert(path::name(p));
            }
        }
    }
    let tree = &state.tree;
    let mut grants = Vec::new();
    let mut told = HashSet::new();
    for (dir, (deleted, created)) in touched {
        let Some(node) = tree.get(dir) else { continue };
        let permits = permits(tree, dir);
        let now: Vec<&str> = node.children.iter().collect();
        let before = now.iter().copied().filter(|n| !created.contains(n)).chain(deleted.iter().copied());
        let held_before = holding(before, permits);
        for name in holding(now.iter().copied(), permits) {
            // A contender created by this apply learns its standing from its own reply.
            if held_before.contains(name) || created.contains(name) {
                continue;
            }
            let Some((session, tag)) = lock::parse_contender(name) else { continue };
            let path = path::join(dir, name);
            if !attempt_holds(state, &path) || !told.insert((session, tag)) {
                continue;
            }
            let (token, asked_ms) = tree.get(&path).map_or((0, 0), |n| (n.mzxid, n.ctime));
            grants.push(Grant { session, path, token, asked_ms });
        }
    }
    grants
}
