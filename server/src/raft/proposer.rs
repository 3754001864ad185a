//! Group commit in front of openraft: queued commands become one Raft entry per batch.
//!
//! openraft 0.9 turns each `client_write` into its own entry and its own fsync, with one
//! append in flight, which caps durable writes at one per fsync (~6k/s here). The proposer
//! drains everything queued while the previous batch was being made durable into the next
//! entry, so many commands share one fsync (docs/storage.md, "Group commit").
//!
//! It keeps the disk busy: the next batch goes to openraft as soon as the previous one's
//! fdatasync has returned ([`super::activity`]), while that one is still being applied and
//! answered, rather than after its replies. So at most two batches are in openraft at once,
//! one being synced or applied and one being synced or waiting for the disk; a batch sent
//! while the disk is still busy would close early and leave what arrives during the sync to
//! the one after. The state machine answers a batch's commands itself as it applies them
//! ([`super::batch`]); the proposer answers only a batch that failed.
//!
//! On a follower the batch goes to the leader whole ([`super::route`]), one at a time, and
//! only once nothing proposed here is still in openraft, so that a session's writes reach
//! the log in the order it sent them even across a change of leader.

use super::activity::Watch;
use super::batch::{Batch, Replies};
use super::route::{Route, COMMIT_TIMEOUT};
use super::types::TypeConfig;
use crate::command::{Command, CommandOp};
use crate::log::{CommandLog, Committed, Pending, Rejected};
use openraft::error::ClientWriteError;
use openraft::raft::ClientWriteResult;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
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

/// Batches proposed here and not yet answered by openraft: one at the disk (or being
/// applied) and the next.
const MAX_IN_FLIGHT: usize = 2;

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
    /// `disk`: the log store's [`super::activity`].
    pub fn start(route: Route, limits: BatchLimits, disk: Watch) -> (Proposer, JoinHandle<()>) {
        let (queue, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(Task { route, queue: rx, limits, disk, in_flight: VecDeque::new(), sent_at: 0 }.run());
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

/// A batch in openraft, proposed here.
struct InFlight {
    response: oneshot::Receiver<ClientWriteResult<TypeConfig>>,
    replies: Arc<Replies>,
    deadline: Instant,
}

struct Task {
    route: Route,
    queue: mpsc::UnboundedReceiver<Proposal>,
    limits: BatchLimits,
    disk: Watch,
    /// Oldest first; openraft answers in this order.
    in_flight: VecDeque<InFlight>,
    /// The disk's start count when the last batch went to openraft: a later start is that
    /// batch (or one after it) reaching the disk.
    sent_at: u64,
}

impl Task {
    async fn run(mut self) {
        // The first command of the next batch, taken from the queue but not yet sent.
        let mut next: Option<Proposal> = None;
        loop {
            if let Some(first) = next.take_if(|_| self.may_send()) {
                let (commands, replies) = self.assemble(first);
                self.send(commands, replies).await;
                continue;
            }
            tokio::select! {
                biased;
                (outcome, replies) = front(&mut self.in_flight) => finish(outcome, &replies),
                proposal = self.queue.recv(), if next.is_none() => match proposal {
                    Some(proposal) => next = Some(proposal),
                    None => break,
                },
                // Only waited on while a batch is ready and the disk is not.
                () = self.disk.flushed(), if next.is_some() => {}
            }
        }
        // The proposer was dropped: answer what is still in openraft.
        while !self.in_flight.is_empty() {
            let (outcome, replies) = front(&mut self.in_flight).await;
            finish(outcome, &replies);
        }
    }

    /// Whether the next batch may go to openraft now: nothing is in flight, or the last batch
    /// reached the disk, its sync has returned, and nothing else is at the disk.
    fn may_send(&mut self) -> bool {
        if self.in_flight.is_empty() {
            return true;
        }
        let disk = self.disk.now();
        self.in_flight.len() < MAX_IN_FLIGHT && disk.started > self.sent_at && disk.idle()
    }

    /// `first` and whatever else is queued, up to the limits.
    fn assemble(&mut self, first: Proposal) -> (Vec<Command>, Vec<oneshot::Sender<Committed>>) {
        let mut bytes = approx_size(&first.cmd);
        let (mut batch, mut replies) = (vec![first.cmd], vec![first.reply]);
        while batch.len() < self.limits.max_commands && bytes < self.limits.max_bytes {
            let Ok(next) = self.queue.try_recv() else { break };
            bytes += approx_size(&next.cmd);
            batch.push(next.cmd);
            replies.push(next.reply);
        }
        (batch, replies)
    }

    async fn send(&mut self, commands: Vec<Command>, senders: Vec<oneshot::Sender<Committed>>) {
        if !self.route.leads_here() {
            return self.forward(commands, senders).await;
        }
        let replies = Replies::new(senders);
        let batch = Batch::answered(commands, &replies);
        self.sent_at = self.disk.now().started;
        match self.route.raft.client_write_ff(batch).await {
            Ok(response) => {
                let deadline = Instant::now() + COMMIT_TIMEOUT;
                self.in_flight.push_back(InFlight { response, replies, deadline });
            }
            Err(fatal) => finish(Err(Rejected::Unknown(fatal.to_string())), &replies),
        }
    }

    /// Sends a batch to the leader and waits for its results, once everything proposed here
    /// is answered (see the module's doc).
    async fn forward(&mut self, commands: Vec<Command>, senders: Vec<oneshot::Sender<Committed>>) {
        while !self.in_flight.is_empty() {
            let (outcome, replies) = front(&mut self.in_flight).await;
            finish(outcome, &replies);
        }
        let n = commands.len();
        let replies = Replies::new(senders);
        match self.route.commit(commands).await {
            Ok(applied) => {
                if applied.len() != n {
                    tracing::error!(sent = n, got = applied.len(), "batch reply has the wrong length");
                }
                answer(&replies, applied);
            }
            Err(rejected) => finish(Err(rejected), &replies),
        }
    }
}

/// The outcome of the oldest batch in flight, once openraft has it (or its deadline passed),
/// and that batch's replies; the batch then leaves `in_flight`. Never resolves while nothing
/// is in flight.
async fn front(in_flight: &mut VecDeque<InFlight>) -> (Result<Vec<crate::command::Applied>, Rejected>, Arc<Replies>) {
    let Some(oldest) = in_flight.front_mut() else { return std::future::pending().await };
    let outcome = match tokio::time::timeout_at(oldest.deadline, &mut oldest.response).await {
        Ok(Ok(Ok(response))) => Ok(response.data),
        Ok(Ok(Err(ClientWriteError::ForwardToLeader(_)))) => Err(Rejected::NotApplied("leadership moved".into())),
        Ok(Ok(Err(e))) => Err(Rejected::Unknown(e.to_string())),
        Ok(Err(_)) => Err(Rejected::Unknown("raft stopped before answering".into())),
        // openraft keeps a deposed leader's pending writes waiting (#973): bound them.
        Err(_) => Err(Rejected::Unknown(format!("not committed within {COMMIT_TIMEOUT:?}"))),
    };
    let replies = oldest.replies.clone();
    in_flight.pop_front();
    (outcome, replies)
}

/// Answers the commands of a finished batch that the state machine did not answer itself:
/// all of them when it failed; normally none.
fn finish(outcome: Result<Vec<crate::command::Applied>, Rejected>, replies: &Replies) {
    match outcome {
        Ok(applied) => answer(replies, applied),
        Err(rejected) => {
            let Some(senders) = replies.take() else { return };
            tracing::warn!(%rejected, commands = senders.len(), "batch not committed");
            for reply in senders {
                let _ = reply.send(Err(rejected.clone()));
            }
        }
    }
}

/// Answers from `applied` whatever the state machine left unanswered.
fn answer(replies: &Replies, applied: Vec<crate::command::Applied>) {
    let Some(senders) = replies.take() else { return };
    let mut results = applied.into_iter();
    for reply in senders {
        let result = results.next().ok_or_else(|| Rejected::Unknown("no result for this command".into()));
        let _ = reply.send(result);
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
