//! The state machine: the tree, the session table and the last zxid, advanced only by
//! [`StateMachine::apply`]. Apply is deterministic: same commands, same state, on every
//! replica and on every replay.

use crate::acl::table::{AclId, AclTable, OPEN};
use crate::acl::{access, check, AuthId};
use crate::command::{Applied, Change, Command, CommandOp, Outcome};
use crate::tree::ops::Ctx;
use crate::tree::{DataTree, Journal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use ward_proto::{perms, Acl, CreateMode, ErrorCode, Op, OpResult, Response, SessionId, SessionSecret, Zxid};

/// A live session as every replica knows it. Deadlines are not here: heartbeats are not
/// logged, so deadlines live in the serving node's tracker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub timeout_ms: u32,
    pub secret: SessionSecret,
    /// The application instance's stable name, if it gave one.
    pub owner: Option<String>,
}

/// Serializable as a whole: a snapshot is this value in postcard (`Stored`).
#[derive(Clone, Debug, Default)]
pub struct StateMachine {
    pub(crate) tree: DataTree,
    sessions: BTreeMap<SessionId, SessionRecord>,
    /// Multi-lock attempts: (session, tag) → their contender paths, so a grant is sent only
    /// when the attempt holds in every directory.
    pub(crate) lock_groups: BTreeMap<(SessionId, u64), Vec<String>>,
    last_zxid: Zxid,
    /// Each session's last client write (by xid) and what it got, so that the same write
    /// sent again after a lost reply is answered instead of applied twice. One per session:
    /// the client resends in order, so anything older than the last was applied too.
    last_writes: BTreeMap<SessionId, LastWrite>,
    /// The zxid of each session's latest logged attachment ([`CommandOp::Attach`]) where it
    /// is not the session's creation (whose zxid is the session's id). Last, as every field
    /// a snapshot version added: see `raft/state_machine.rs`.
    attachments: BTreeMap<SessionId, Zxid>,
}

/// The state machine as a snapshot holds it: its fields in order, then the nodes' ACLs
/// (snapshot version 6), which the tree's own part leaves out so that its layout stays
/// that of older snapshots. `T` and `A` are the tree and the ACLs owned (read) or borrowed
/// (written).
#[derive(Serialize, Deserialize)]
struct Stored<T, S, L, W, A, C> {
    tree: T,
    sessions: S,
    lock_groups: L,
    last_zxid: Zxid,
    last_writes: W,
    attachments: A,
    acls: C,
}

/// The ACL part of a snapshot: the table's slots other than the open one (id, list,
/// aversion), then the nodes that point to one of them. An older snapshot has neither,
/// which reads as two empty lists: every node open, at aversion 0.
#[derive(Serialize, Deserialize)]
struct StoredAcls<A, P> {
    slots: Vec<(AclId, A, i32)>,
    nodes: Vec<(P, AclId)>,
}

type Owned = Stored<
    DataTree,
    BTreeMap<SessionId, SessionRecord>,
    BTreeMap<(SessionId, u64), Vec<String>>,
    BTreeMap<SessionId, LastWrite>,
    BTreeMap<SessionId, Zxid>,
    StoredAcls<Vec<Acl>, String>,
>;

impl Serialize for StateMachine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let acls = StoredAcls { slots: self.tree.acl_table().stored().collect(), nodes: self.tree.acl_assignments() };
        Stored {
            tree: &self.tree,
            sessions: &self.sessions,
            lock_groups: &self.lock_groups,
            last_zxid: self.last_zxid,
            last_writes: &self.last_writes,
            attachments: &self.attachments,
            acls,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for StateMachine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let stored = Owned::deserialize(d)?;
        let mut tree = stored.tree;
        let table = AclTable::restored(stored.acls.slots);
        tree.restore_acls(table, stored.acls.nodes).map_err(serde::de::Error::custom)?;
        Ok(StateMachine {
            tree,
            sessions: stored.sessions,
            lock_groups: stored.lock_groups,
            last_zxid: stored.last_zxid,
            last_writes: stored.last_writes,
            attachments: stored.attachments,
        })
    }
}

/// See [`StateMachine::apply_command`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LastWrite {
    pub xid: u64,
    pub applied: Applied,
}

impl StateMachine {
    /// The zxid of `session`'s latest attachment: its creation, or its last `Attach`.
    pub(crate) fn attached_at(&self, session: SessionId) -> Zxid {
        self.attachments.get(&session).copied().unwrap_or(session.0)
    }

    pub fn tree(&self) -> &DataTree {
        &self.tree
    }

    pub fn session(&self, id: SessionId) -> Option<&SessionRecord> {
        self.sessions.get(&id)
    }

    pub fn sessions(&self) -> impl Iterator<Item = (SessionId, &SessionRecord)> {
        self.sessions.iter().map(|(id, r)| (*id, r))
    }

    pub fn last_zxid(&self) -> Zxid {
        self.last_zxid
    }

    /// Applies one command, exactly once: a client write (plain or `CommandOp::Resent`) whose
    /// xid is not newer than its session's last applied write is answered from that record
    /// (its original reply and zxid, or `OutcomeUnknown` for an older one) and changes
    /// nothing. Plain writes too: the original of a resent write can reach the log *after*
    /// its resend (it was still queued at the member the client left), and must not apply
    /// again. This relies on a session's write xids growing, which Ward's clients ensure
    /// (and the protocol requires). Every other command is applied under the next zxid
    /// ([`StateMachine::apply`]).
    ///
    /// A fenced command from a connection the session has since left is refused
    /// (`SessionMoved`) before anything else, and takes no zxid either.
    pub fn apply_command(&mut self, cmd: &Command) -> (Applied, Vec<Change>) {
        let result = self.apply_once(cmd, &cmd.op, &[]);
        self.tree.collect_acls();
        result
    }

    /// [`apply_command`](Self::apply_command) of `op` (the command's op, or one it wraps)
    /// for a connection with identities `ids`.
    fn apply_once(&mut self, cmd: &Command, op: &CommandOp, ids: &[AuthId]) -> (Applied, Vec<Change>) {
        match op {
            CommandOp::Fenced { epoch, .. }
                if self.sessions.contains_key(&cmd.session) && *epoch < self.attached_at(cmd.session) =>
            {
                let outcome = Outcome::Reply(Err(ErrorCode::SessionMoved));
                return (Applied { zxid: self.last_zxid, outcome }, Vec::new());
            }
            CommandOp::Fenced { op, .. } => return self.apply_once(cmd, op, ids),
            CommandOp::As { ids, op } => return self.apply_once(cmd, op, ids),
            _ => {}
        }
        let client_write =
            matches!(op, CommandOp::Op(_) | CommandOp::Multi(_) | CommandOp::Resent(_) | CommandOp::NullData { .. });
        let last = self.last_writes.get(&cmd.session).filter(|_| client_write && cmd.xid != 0);
        if let Some(last) = last {
            if cmd.xid == last.xid {
                return (last.applied.clone(), Vec::new());
            }
            if cmd.xid < last.xid {
                let outcome = Outcome::Reply(Err(ErrorCode::OutcomeUnknown));
                return (Applied { zxid: last.applied.zxid, outcome }, Vec::new());
            }
        }
        let (outcome, changes) = self.apply_as(cmd, op, ids);
        let applied = Applied { zxid: self.last_zxid, outcome };
        if client_write && cmd.xid != 0 && self.sessions.contains_key(&cmd.session) {
            self.last_writes.insert(cmd.session, LastWrite { xid: cmd.xid, applied: applied.clone() });
        }
        (applied, changes)
    }

    /// Applies one command under the next zxid. Failures (a missing parent, a version
    /// conflict, a permission the ACL does not grant) are outcomes, decided here in log
    /// order, and still consume the zxid.
    pub fn apply(&mut self, cmd: &Command) -> (Outcome, Vec<Change>) {
        let result = self.apply_as(cmd, &cmd.op, &[]);
        self.tree.collect_acls();
        result
    }

    /// [`apply`](Self::apply) of `op` for a connection with identities `ids`.
    fn apply_as(&mut self, cmd: &Command, op: &CommandOp, ids: &[AuthId]) -> (Outcome, Vec<Change>) {
        match op {
            // Deduplication and fencing are `apply_command`'s; here a command is what it wraps.
            CommandOp::Resent(op) | CommandOp::Fenced { op, .. } => return self.apply_as(cmd, op, ids),
            CommandOp::As { ids, op } => return self.apply_as(cmd, op, ids),
            _ => {}
        }
        self.last_zxid += 1;
        let zxid = self.last_zxid;
        let mut changes = Vec::new();
        let outcome = match op {
            CommandOp::CreateSession { timeout_ms, secret, owner } => {
                if let Some(owner) = owner {
                    // The owner's previous incarnation ends now, with its ephemerals and locks.
                    let previous: Vec<SessionId> = self
                        .sessions
                        .iter()
                        .filter(|(_, r)| r.owner.as_ref() == Some(owner))
                        .map(|(id, _)| *id)
                        .collect();
                    for old in previous {
                        // Ended by the server, not by its client: its locks are held over.
                        let _ = self.end_session(zxid, cmd.time_ms, old, false, &mut changes);
                    }
                }
                let session = SessionId(zxid);
                let record = SessionRecord { timeout_ms: *timeout_ms, secret: *secret, owner: owner.clone() };
                self.sessions.insert(session, record);
                changes.push(Change::SessionCreated { session, timeout_ms: *timeout_ms });
                Outcome::SessionCreated(session)
            }
            CommandOp::CloseSession => {
                Outcome::Reply(self.end_session(zxid, cmd.time_ms, cmd.session, true, &mut changes))
            }
            CommandOp::ExpireSession => {
                Outcome::Reply(self.end_session(zxid, cmd.time_ms, cmd.session, false, &mut changes))
            }
            // The server's own: no session.
            CommandOp::DeleteIfUnused { path, never_used_ms } => {
                let mut journal = Journal::off();
                let mut ctx = Ctx { zxid, time_ms: cmd.time_ms, changes: &mut changes, journal: &mut journal };
                Outcome::Reply(self.tree.delete_if_unused(&mut ctx, path, *never_used_ms).map(|()| Response::Deleted))
            }
            _ if !self.sessions.contains_key(&cmd.session) => Outcome::Reply(Err(ErrorCode::SessionExpired)),
            CommandOp::Op(op) => Outcome::Reply(self.apply_single(zxid, cmd, op, false, ids, &mut changes)),
            CommandOp::Multi(ops) => Outcome::Reply(Ok(self.apply_multi(zxid, cmd, ops, &[], ids, &mut changes))),
            CommandOp::NullData { nulls, op } => match &**op {
                CommandOp::Op(op) => {
                    Outcome::Reply(self.apply_single(zxid, cmd, op, nulls.contains(&0), ids, &mut changes))
                }
                CommandOp::Multi(ops) => Outcome::Reply(Ok(self.apply_multi(zxid, cmd, ops, nulls, ids, &mut changes))),
                _ => Outcome::Reply(Err(ErrorCode::BadArguments)),
            },
            CommandOp::LockAcquire { dirs, tag, kind, data }
            | CommandOp::LockAcquireDelayed { dirs, tag, kind, data, .. } => {
                let lock_delay_ms = match op {
                    CommandOp::LockAcquireDelayed { lock_delay_ms, .. } => Some(*lock_delay_ms),
                    _ => None,
                };
                let mut journal = Journal::on();
                let mut ctx = Ctx { zxid, time_ms: cmd.time_ms, changes: &mut changes, journal: &mut journal };
                let attempt = crate::lock::Attempt { dirs, tag: *tag, kind: *kind, data, lock_delay_ms };
                let result = self.lock_acquire(&mut ctx, cmd.session, attempt, ids);
                if result.is_err() {
                    journal.rollback(&mut self.tree);
                    changes.clear();
                }
                Outcome::Reply(result)
            }
            CommandOp::LockRelease { dirs, tag } => {
                let mut journal = Journal::off();
                let mut ctx = Ctx { zxid, time_ms: cmd.time_ms, changes: &mut changes, journal: &mut journal };
                Outcome::Reply(self.lock_release(&mut ctx, cmd.session, dirs, *tag, ids))
            }
            CommandOp::Attach => {
                self.attachments.insert(cmd.session, zxid);
                Outcome::Attached
            }
            CommandOp::AttachIf { expected } if self.attached_at(cmd.session) != *expected => {
                Outcome::Reply(Err(ErrorCode::SessionMoved))
            }
            CommandOp::AttachIf { .. } => {
                self.attachments.insert(cmd.session, zxid);
                Outcome::Attached
            }
            // Unwrapped at the top.
            CommandOp::Resent(_) | CommandOp::Fenced { .. } | CommandOp::As { .. } => {
                Outcome::Reply(Err(ErrorCode::BadArguments))
            }
        };
        (outcome, changes)
    }

    fn apply_single(
        &mut self,
        zxid: Zxid,
        cmd: &Command,
        op: &Op,
        null: bool,
        ids: &[AuthId],
        changes: &mut Vec<Change>,
    ) -> Result<Response, ErrorCode> {
        let mut journal = Journal::off();
        let mut ctx = Ctx { zxid, time_ms: cmd.time_ms, changes, journal: &mut journal };
        self.apply_op(&mut ctx, cmd.session, op.clone(), null, ids).and_then(single_response)
    }

    /// Applies one op for a connection with identities `ids`, with ZooKeeper's checks in
    /// ZooKeeper's order (the ACL's own validity, the node, its ACL, then versions:
    /// [`crate::acl::access`]); `null`: the data it writes is null ([`CommandOp::NullData`]).
    fn apply_op(
        &mut self,
        ctx: &mut Ctx<'_>,
        session: SessionId,
        op: Op,
        null: bool,
        ids: &[AuthId],
    ) -> Result<OpResult, ErrorCode> {
        let tree = &self.tree;
        match op {
            Op::Create { path, data, mode } => self.create(ctx, session, &path, data, mode, None, null, ids),
            Op::CreateWithAcl { path, data, mode, acl } => {
                self.create(ctx, session, &path, data, mode, Some(&acl), null, ids)
            }
            Op::Delete { path, version } => {
                if path != "/" {
                    access::parent(tree, &path, perms::DELETE, ids)?;
                }
                self.tree.delete(ctx, &path, version).map(|()| OpResult::Deleted)
            }
            Op::SetData { path, data, version } => {
                access::node(tree, &path, perms::WRITE, ids)?;
                let stat = self.tree.set_data(ctx, &path, data, version)?;
                if null {
                    self.tree.null_data(&path);
                }
                Ok(OpResult::DataSet(stat))
            }
            Op::SetAcl { path, acl, version } => {
                let acl = check::fixup(&acl, ids)?;
                access::node(tree, &path, perms::ADMIN, ids)?;
                self.tree.set_acl(ctx, &path, &acl, version).map(OpResult::AclSet)
            }
            Op::Check { path, version } => {
                access::node(tree, &path, perms::READ, ids)?;
                self.tree.check(&path, version).map(|()| OpResult::Checked)
            }
            Op::CheckFence { path, token } => {
                access::if_exists(tree, &path, perms::READ, ids)?;
                check_fence(tree, &path, token).map(|()| OpResult::Checked)
            }
            Op::CheckLast { path } => {
                access::if_exists(tree, ward_proto::path::parent(&path), perms::READ, ids)?;
                check_last(tree, &path).map(|()| OpResult::Checked)
            }
        }
    }

    /// A create: the ACL given (`None`: the open one) is checked and expanded first, then
    /// the parent's CREATE permission, then the tree's own checks.
    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        ctx: &mut Ctx<'_>,
        session: SessionId,
        path: &str,
        data: Vec<u8>,
        mode: CreateMode,
        acl: Option<&[Acl]>,
        null: bool,
        ids: &[AuthId],
    ) -> Result<OpResult, ErrorCode> {
        let acl = match acl {
            Some(acl) => Some(check::fixup(acl, ids)?),
            None => None,
        };
        access::parent(&self.tree, path, perms::CREATE, ids)?;
        let slot = acl.map_or(OPEN, |acl| self.tree.intern_acl(&acl));
        let (path, stat) = self.tree.create(ctx, path, data, mode, session, slot)?;
        if null {
            self.tree.null_data(&path);
        }
        Ok(OpResult::Created { path, stat })
    }

    /// All ops or none: on the first failure every earlier op is undone, its changes are
    /// dropped (so no watch fires), and each op reports why it did not happen.
    /// `nulls`: the ops whose data is null ([`CommandOp::NullData`]).
    fn apply_multi(
        &mut self,
        zxid: Zxid,
        cmd: &Command,
        ops: &[Op],
        nulls: &[u32],
        ids: &[AuthId],
        changes: &mut Vec<Change>,
    ) -> Response {
        let mut journal = Journal::on();
        let mut results = Vec::with_capacity(ops.len());
        let mut failed = None;
        {
            let mut ctx = Ctx { zxid, time_ms: cmd.time_ms, changes, journal: &mut journal };
            for (index, op) in ops.iter().enumerate() {
                let null = u32::try_from(index).is_ok_and(|i| nulls.contains(&i));
                match self.apply_op(&mut ctx, cmd.session, op.clone(), null, ids) {
                    Ok(result) => results.push(result),
                    Err(code) => {
                        failed = Some((index, code));
                        break;
                    }
                }
            }
        }
        match failed {
            None => Response::Multi(results),
            Some((index, code)) => {
                journal.rollback(&mut self.tree);
                changes.clear();
                let results = (0..ops.len())
                    .map(|i| OpResult::Error(if i == index { code } else { ErrorCode::RolledBack }))
                    .collect();
                Response::Multi(results)
            }
        }
    }

    /// Ends `session`: its ephemerals go. `orderly`: its client closed it; otherwise (it
    /// expired, or the server ended it) the locks it holds whose directories have a
    /// lock-delay are held over for that delay instead of passing on now.
    fn end_session(
        &mut self,
        zxid: Zxid,
        time_ms: i64,
        session: SessionId,
        orderly: bool,
        changes: &mut Vec<Change>,
    ) -> Result<Response, ErrorCode> {
        if !self.sessions.contains_key(&session) {
            return Err(ErrorCode::SessionExpired);
        }
        let held_over = if orderly { Vec::new() } else { crate::lock::held_with_delay(self, session) };
        self.sessions.remove(&session);
        self.lock_groups.retain(|(owner, _), _| *owner != session);
        self.last_writes.remove(&session);
        self.attachments.remove(&session);
        let mut journal = Journal::off();
        let mut ctx = Ctx { zxid, time_ms, changes, journal: &mut journal };
        for (path, delay_ms) in held_over {
            self.tree.hold_over(&ctx, &path, delay_ms);
        }
        self.tree.remove_ephemerals(&mut ctx, session);
        changes.push(Change::SessionEnded(session));
        Ok(Response::Closed)
    }
}

/// A fence holds when its node holds its lock and the token is the node's mzxid: its czxid
/// when granted, replaced each time the holder's client passes the lock to another of its
/// handles by rewriting the node (see the client's `Mutex`). A contender held over for its
/// lock-delay still heads its queue, but its session is gone: its fence holds no more.
pub fn check_fence(tree: &DataTree, path: &str, token: Zxid) -> Result<(), ErrorCode> {
    match tree.get(path) {
        Some(node) if node.mzxid == token && node.ephemeral_owner().is_some() && crate::lock::is_holder(tree, path) => {
            Ok(())
        }
        _ => Err(ErrorCode::StaleFence),
    }
}

/// Succeeds when `path` is the last contender of its directory's queue.
fn check_last(tree: &DataTree, path: &str) -> Result<(), ErrorCode> {
    let dir = tree.get(ward_proto::path::parent(path)).ok_or(ErrorCode::NoNode)?;
    let queue = ward_proto::lock::queue(dir.children.iter());
    match queue.last() {
        Some(last) if *last == ward_proto::path::name(path) => Ok(()),
        Some(_) => Err(ErrorCode::LockContended),
        None => Err(ErrorCode::NoNode),
    }
}

fn single_response(result: OpResult) -> Result<Response, ErrorCode> {
    match result {
        OpResult::Created { path, stat } => Ok(Response::Created { path, stat }),
        OpResult::Deleted => Ok(Response::Deleted),
        OpResult::DataSet(stat) => Ok(Response::DataSet(stat)),
        OpResult::AclSet(stat) => Ok(Response::AclSet(stat)),
        // Prep refuses a lone check; keep apply total anyway.
        OpResult::Checked | OpResult::Error(_) => Err(ErrorCode::BadArguments),
    }
}
