//! Group commit in front of openraft: queued commands become one Raft entry per batch.
//!
//! openraft 0.9 turns each `client_write` into its own entry and its own fsync, with one
//! append in flight, which caps durable writes at one per fsync (~6k/s here). The proposer
//! drains everything queued while the previous batch was being made durable into the next
//! entry, so many commands share one fsync (docs/storage.md, "Group commit"). On a follower
//! the batch goes to the leader whole ([`super::route`]).

use super::route::Route;
use crate::command::{Command, CommandOp};
use crate::log::{CommandLog, Committed, Pending, Rejected};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use ward_proto::Op;

/// How large one batch may grow.
#[derive(Clone, Copy, Debug)]
pub struct BatchLimits {
    pub max_commands: usize,
    /// Approximate: paths and data, the bulk of a command.
    pub max_bytes: usize,
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits { max_commands: 1024, max_bytes: 1 << 20 }
    }
}

struct Proposal {
    cmd: Command,
    reply: oneshot::Sender<Committed>,
}

/// The [`CommandLog`] side: submitting only enqueues, so the queue order is the submission
/// order, and the log order follows it.
pub struct Proposer {
    queue: mpsc::UnboundedSender<Proposal>,
}

impl Proposer {
    /// Starts the proposer task on the current runtime. It ends when the proposer is dropped.
    pub fn start(route: Route, limits: BatchLimits) -> (Proposer, JoinHandle<()>) {
        let (queue, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(route, rx, limits));
        (Proposer { queue }, task)
    }
}

impl CommandLog for Proposer {
    fn submit(&self, cmd: Command) -> Pending {
        let (reply, pending) = Pending::channel();
        // If the task is gone the reply sender is dropped here: the caller sees Unavailable.
        let _ = self.queue.send(Proposal { cmd, reply });
        pending
    }
}

async fn run(route: Route, mut queue: mpsc::UnboundedReceiver<Proposal>, limits: BatchLimits) {
    let mut batch = Vec::new();
    let mut replies = Vec::new();
    while let Some(first) = queue.recv().await {
        let mut bytes = approx_size(&first.cmd);
        batch.push(first.cmd);
        replies.push(first.reply);
        while batch.len() < limits.max_commands && bytes < limits.max_bytes {
            let Ok(next) = queue.try_recv() else { break };
            bytes += approx_size(&next.cmd);
            batch.push(next.cmd);
            replies.push(next.reply);
        }
        let n = batch.len();
        // One batch in flight: 0.9 serializes appends anyway, and the next batch grows while
        // this one is being made durable.
        match route.commit(std::mem::take(&mut batch)).await {
            Ok(applied) => {
                if applied.len() != n {
                    tracing::error!(sent = n, got = applied.len(), "batch reply has the wrong length");
                }
                let mut results = applied.into_iter();
                for reply in replies.drain(..) {
                    let result = results.next().ok_or_else(|| Rejected::Unknown("no result for this command".into()));
                    let _ = reply.send(result);
                }
            }
            Err(rejected) => {
                tracing::warn!(%rejected, commands = n, "batch not committed");
                for reply in replies.drain(..) {
                    let _ = reply.send(Err(rejected.clone()));
                }
            }
        }
    }
}

/// The bytes a command adds to an entry, roughly.
fn approx_size(cmd: &Command) -> usize {
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
