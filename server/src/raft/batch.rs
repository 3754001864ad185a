//! A Raft entry's payload: a batch of commands, and, on the member that proposed it, where
//! each command's reply goes.
//!
//! The state machine answers a proposed batch itself, each command as soon as it is applied
//! ([`Batch::take_replies`]), instead of handing the results back through openraft's core
//! and the proposer: two task hand-offs fewer between the fsync and the reply. The replies
//! travel only in memory: the serialized form is the bare list of commands, byte for byte
//! what the log and the peer link always carried, so a batch read back from disk or received
//! from the leader has none (and is answered through openraft, as before).
//!
//! A command may have no sender of its own: on the leader, a batch forwarded by a follower
//! joins the leader's next entry as a *chunk* ([`super::proposer`]), and its results go back
//! through openraft's answer, where the proposer finds them with the entry's index.

use crate::command::{Command, CommandOp};
use crate::replication::Committed;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;
use ward_proto::Op;

/// See the module's doc.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Batch {
    pub commands: Vec<Command>,
    #[serde(skip)]
    replies: Option<Arc<Replies>>,
}

/// One command's reply sender; `None` for a command of a forwarded chunk, whose result goes
/// back through openraft's answer (see the module's doc).
pub(crate) type Sender = Option<oneshot::Sender<Committed>>;

/// The reply senders of a proposed batch, one per command, taken once: by the state machine
/// when it applies the batch, or by the proposer when the batch fails. And whether the
/// batch's entry reached this member's log: openraft answers "forward to the leader" both
/// for a write it refused before logging it (certainly not applied) and for one a new
/// leader's log removed from this member's after it was logged, which another member's copy
/// may still commit. Only the first may be told "not applied".
#[derive(Default)]
pub struct Replies {
    senders: Mutex<Option<Vec<Sender>>>,
    logged: AtomicBool,
}

impl Replies {
    /// One sender per command of a batch, in order.
    pub fn new(senders: Vec<Sender>) -> Arc<Replies> {
        Arc::new(Replies { senders: Mutex::new(Some(senders)), logged: AtomicBool::new(false) })
    }

    /// The senders, unless someone took them already.
    pub fn take(&self) -> Option<Vec<Sender>> {
        self.senders.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Whether the log store was ever given the batch's entry.
    pub fn logged(&self) -> bool {
        self.logged.load(Ordering::Acquire)
    }
}

impl Batch {
    /// A batch whose commands are answered through `replies` (the proposer keeps the same
    /// handle, to answer them if the batch fails).
    pub fn answered(commands: Vec<Command>, replies: &Arc<Replies>) -> Batch {
        Batch { commands, replies: Some(replies.clone()) }
    }

    /// The reply senders, if this is the batch as proposed here and nobody took them yet.
    pub(crate) fn take_replies(&self) -> Option<Vec<Sender>> {
        self.replies.as_ref().and_then(|r| r.take())
    }

    /// Called by the log store when it is given this entry: see [`Replies::logged`].
    pub(crate) fn mark_logged(&self) {
        if let Some(replies) = &self.replies {
            replies.logged.store(true, Ordering::Release);
        }
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

impl From<Vec<Command>> for Batch {
    fn from(commands: Vec<Command>) -> Batch {
        Batch { commands, replies: None }
    }
}

impl PartialEq for Batch {
    /// Batches are equal when their commands are: the replies are not part of the entry.
    fn eq(&self, other: &Batch) -> bool {
        self.commands == other.commands
    }
}

impl Eq for Batch {}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.commands).finish()
    }
}

/// openraft names an entry's payload in its logs: the count, not the commands.
impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} commands", self.commands.len())
    }
}

/// The bytes a command adds to an entry, roughly.
pub(crate) fn approx_size(cmd: &Command) -> usize {
    const FIXED: usize = 48;
    FIXED + payload_size(&cmd.op)
}

fn payload_size(op: &CommandOp) -> usize {
    match op {
        CommandOp::Op(op) => op_size(op),
        CommandOp::Multi(ops) => ops.iter().map(op_size).sum(),
        CommandOp::LockAcquire { dirs, data, .. } | CommandOp::LockAcquireDelayed { dirs, data, .. } => {
            dirs.iter().map(String::len).sum::<usize>() + data.len()
        }
        CommandOp::LockRelease { dirs, .. } => dirs.iter().map(String::len).sum(),
        CommandOp::Resent(inner) => payload_size(inner),
        CommandOp::Fenced { op, .. } => 8 + payload_size(op),
        CommandOp::DeleteIfUnused { path, .. } => 8 + path.len(),
        CommandOp::NullData { nulls, op } => 4 * nulls.len() + payload_size(op),
        CommandOp::As { ids, op } => 24 * ids.len() + payload_size(op),
        CommandOp::CreateSession { .. }
        | CommandOp::CloseSession
        | CommandOp::ExpireSession
        | CommandOp::Attach
        | CommandOp::AttachIf { .. } => 0,
    }
}

fn op_size(op: &Op) -> usize {
    let acl = match op {
        Op::CreateWithAcl { acl, .. } | Op::SetAcl { acl, .. } => {
            acl.iter().map(|a| 8 + a.id.scheme.len() + a.id.id.len()).sum()
        }
        _ => 0,
    };
    FIXED_OP + op.path().len() + op.data_len() + acl
}

const FIXED_OP: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use ward_proto::SessionId;

    /// The log format and the peer link are unchanged: a batch is written exactly as the
    /// list of commands that entries always held, and one read back carries no replies.
    #[test]
    fn a_batch_serializes_as_its_bare_commands() {
        let commands = vec![Command { time_ms: 7, session: SessionId(3), xid: 9, op: CommandOp::CloseSession }; 2];
        let (tx, _rx) = oneshot::channel();
        let (tx2, _rx2) = oneshot::channel();
        let batch = Batch::answered(commands.clone(), &Replies::new(vec![Some(tx), Some(tx2)]));
        let bytes = postcard::to_allocvec(&batch).expect("encode");
        assert_eq!(bytes, postcard::to_allocvec(&commands).expect("encode"));
        let back: Batch = postcard::from_bytes(&bytes).expect("decode");
        assert_eq!(back, batch);
        assert!(back.take_replies().is_none());
        assert_eq!(batch.take_replies().map(|r| r.len()), Some(2));
        assert!(batch.clone().take_replies().is_none(), "taken once, also through a clone");
    }

    /// G14: whether a batch reached the log is seen through every copy of the entry.
    #[test]
    fn a_batch_logged_through_any_copy_is_marked_logged() {
        let replies = Replies::new(vec![None]);
        let batch = Batch::answered(
            vec![Command { time_ms: 1, session: SessionId(1), xid: 1, op: CommandOp::CloseSession }],
            &replies,
        );
        assert!(!replies.logged());
        let copy = batch.clone();
        copy.mark_logged();
        assert!(replies.logged());
    }
}
