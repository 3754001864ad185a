//! Group commit in front of openraft: queued commands become one Raft entry per batch.
//!
//! openraft turns each `client_write` into an entry of its own, with its own log id, apply
//! call and response, and an ensemble sends at most `max_payload_entries` entries per append
//! to a follower. The proposer drains everything queued while the previous batch was being
//! made durable into the next entry, so many commands share one entry, one record and one
//! fsync (docs/storage.md, "Group commit"). openraft 0.10 no longer waits for an append's
//! flush before it takes the next, and the log's I/O thread merges the appends queued
//! together into one record ([`super::writer`]); the proposer still decides how large an
//! entry grows.
//!
//! It keeps the disk busy: the next batch goes to openraft as soon as the previous one's
//! fdatasync has returned ([`super::activity`]), while that one is still being applied and
//! answered, rather than after its replies. So at most two batches are in openraft at once,
//! one being synced or applied and one being synced or waiting for the disk; a batch sent
//! while the disk is still busy would close early and leave what arrives during the sync to
//! the one after. The state machine answers a batch's commands itself as it applies them
//! ([`super::batch`]); the proposer answers only a batch that failed.
//!
//! On a follower a batch goes to the leader whole ([`super::route`]), several at once but
//! never two with commands of one session (`forwards.rs`), and only once nothing
//! proposed here is still in openraft (nor, for a batch proposed here, anything forwarded
//! still unanswered), so that a session's writes reach the log in the order it sent them
//! even across a change of leader.
//!
//! On the leader, a batch a follower forwarded joins this queue whole, as a *chunk*
//! ([`Chunks`]), and so the leader's next entry with everything else queued: one entry and
//! one fsync for the writes of every member, rather than an entry per forwarded batch. A
//! chunk is never split between entries, so its commands succeed or fail together, and its
//! answer names the entry's index, which the follower waits to have applied before it
//! replies.
//!
//! While this member hands its leadership over (`transfer.rs`), [`Route::leads_here`]
//! is false: what is queued goes to the next leader, as on a follower, since openraft would
//! refuse it here.

use super::activity::Watch;
use super::answers::{Answers, Assembled, ChunkResult, Outcome, Proposal};
use super::batch::Batch;
use super::defer::Deferral;
use super::forwards::Forwards;
use super::route::{removed, Route, COMMIT_TIMEOUT};
use super::types::TypeConfig;
use super::unsettled::Unsettled;
use crate::command::Command;
use crate::replication::{Pending, Rejected};
use openraft::error::ClientWriteError;
use openraft::impls::ProgressResponder;
use openraft::raft::ClientWriteResult;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How large one batch may grow.
#[derive(Clone, Copy, Debug)]
pub struct BatchLimits {
    pub max_commands: usize,
    /// Approximate: paths and data, the bulk of a command.
    pub max_bytes: usize,
    /// How long commands submitted as waiting may be held back for company (`raft/defer.rs`).
    pub defer: Duration,
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits { max_commands: 1024, max_bytes: 1 << 20, defer: Duration::from_millis(2) }
    }
}

/// Batches proposed here and not yet answered by openraft: one at the disk (or being
/// applied) and the next.
const MAX_IN_FLIGHT: usize = 2;

/// The [`Replication`](crate::replication::Replication) side: submitting only enqueues, so the queue order is the submission
/// order, and the log order follows it.
pub(crate) struct Proposer {
    queue: mpsc::UnboundedSender<Queued>,
}

/// A proposal, and whether it was submitted as waiting ([`super::defer`]).
type Queued = (Proposal, bool);

/// Where the leader's peer service puts forwarded batches: the proposer's queue, without
/// keeping the proposer alive.
#[derive(Clone)]
pub(crate) struct Chunks(mpsc::WeakUnboundedSender<Queued>);

impl Chunks {
    /// Commits `commands` as one chunk of this member's next entry, if it leads when the
    /// entry is made (otherwise: not applied).
    pub(crate) async fn commit(&self, commands: Vec<Command>) -> ChunkResult {
        let (reply, answer) = oneshot::channel();
        let queued =
            self.0.upgrade().is_some_and(|queue| queue.send((Proposal::Chunk(commands, reply), false)).is_ok());
        if !queued {
            return Err(Rejected::Stopped);
        }
        answer.await.unwrap_or_else(|_| Err(Rejected::Unknown("the proposer stopped".into())))
    }
}

impl Proposer {
    /// Starts the proposer task on the current runtime. It ends when the proposer is dropped.
    /// `disk`: the log store's [`super::activity`].
    pub(crate) fn start(route: Route, limits: BatchLimits, disk: Watch) -> (Proposer, JoinHandle<()>) {
        let (queue, rx) = mpsc::unbounded_channel();
        let task = Task {
            route,
            queue: rx,
            held: VecDeque::new(),
            limits,
            disk,
            in_flight: VecDeque::new(),
            forwards: Forwards::default(),
            unsettled: Unsettled::default(),
            sent_at: 0,
            deferral: Deferral::default(),
        };
        (Proposer { queue }, tokio::spawn(task.run()))
    }

    /// A handle for forwarded chunks.
    pub(crate) fn chunks(&self) -> Chunks {
        Chunks(self.queue.downgrade())
    }
}

impl Proposer {
    fn queue(&self, cmd: Command, waiting: bool) -> Pending {
        let (reply, pending) = Pending::channel();
        // If the task is gone the reply sender is dropped here: the caller sees `Rejected::Stopped`.
        let _ = self.queue.send((Proposal::One(cmd, reply), waiting));
        pending
    }
}

impl Proposer {
    pub(crate) fn submit(&self, cmd: Command) -> Pending {
        self.queue(cmd, false)
    }

    pub(crate) fn submit_waiting(&self, cmd: Command) -> Pending {
        self.queue(cmd, true)
    }
}

/// A batch in openraft, proposed here.
struct InFlight {
    response: oneshot::Receiver<ClientWriteResult<TypeConfig>>,
    answers: Answers,
    deadline: Instant,
}

struct Task {
    route: Route,
    queue: mpsc::UnboundedReceiver<Queued>,
    /// Taken from the queue and not yet sent, in order: the next batch's first command, or
    /// commands waiting for their session's forwarded batch.
    held: VecDeque<Proposal>,
    limits: BatchLimits,
    disk: Watch,
    /// Oldest first; openraft answers in this order.
    in_flight: VecDeque<InFlight>,
    /// Batches sent to the leader, while this member follows.
    forwards: Forwards,
    /// Connections with a forwarded write of unknown outcome.
    unsettled: Unsettled,
    /// The disk's start count when the last batch went to openraft: a later start is that
    /// batch (or one after it) reaching the disk.
    sent_at: u64,
    /// Whether what is held may wait for company ([`super::defer`]).
    deferral: Deferral,
}

impl Task {
    async fn run(mut self) {
        loop {
            if !self.held.is_empty() {
                let sent = match self.route.leads_here() {
                    true => self.propose_here().await,
                    false => self.forward().await,
                };
                if sent {
                    continue;
                }
            }
            let leads = !self.held.is_empty() && self.route.leads_here();
            let deferred = leads.then(|| self.deferral.timer(Instant::now())).flatten();
            tokio::select! {
                biased;
                (outcome, answers) = front(&mut self.in_flight) => answers.finish(outcome),
                (outcome, answers, fences) = self.forwards.next() => {
                    if matches!(outcome, Err(Rejected::Unknown(_))) && !fences.is_empty() {
                        self.unsettled.record(&fences, std::time::Instant::now());
                        let held = std::mem::take(&mut self.held);
                        held.into_iter().for_each(|proposal| self.hold((proposal, false)));
                    }
                    answers.finish(outcome)
                }
                proposal = self.queue.recv() => match proposal {
                    Some(proposal) => self.hold(proposal),
                    None => break,
                },
                // Only waited on while a batch is ready here and the disk is not.
                () = self.disk.flushed(), if leads => {}
                // Held proposals that wait for company must go by then.
                () = tokio::time::sleep_until(deferred.unwrap_or_else(Instant::now)), if deferred.is_some() => {}
            }
        }
        // The proposer was dropped: answer what is still in flight.
        self.drain().await;
        while !self.forwards.is_empty() {
            let (outcome, answers, _) = self.forwards.next().await;
            answers.finish(outcome);
        }
    }

    /// Holds `proposal` for the next batch, unless it is a write of a connection whose
    /// forwarded write has an unknown outcome ([`Unsettled`]): that one is refused.
    fn hold(&mut self, (proposal, waiting): Queued) {
        match proposal {
            Proposal::One(cmd, reply) if !self.unsettled.admits(&cmd) => {
                let why = "an earlier write of this connection has an unknown outcome";
                let _ = reply.send(Err(Rejected::NotApplied(why.into())));
            }
            proposal => {
                self.deferral.held(waiting, self.held.is_empty(), Instant::now(), self.limits.defer);
                self.held.push_back(proposal);
            }
        }
    }

    /// Waits for everything proposed here to be answered.
    async fn drain(&mut self) {
        while !self.in_flight.is_empty() {
            let (outcome, answers) = front(&mut self.in_flight).await;
            answers.finish(outcome);
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

    /// Proposes what is held and queued, up to the limits, as one entry, if the disk is
    /// ready and no forwarded batch is still unanswered. Whether it did.
    async fn propose_here(&mut self) -> bool {
        if !self.forwards.is_empty() || !self.deferral.ready(Instant::now()) || !self.may_send() {
            return false;
        }
        let BatchLimits { max_commands, max_bytes, .. } = self.limits;
        let mut batch = Assembled::default();
        while !batch.is_full(max_commands, max_bytes) {
            if self.held.is_empty() {
                let Ok(next) = self.queue.try_recv() else { break };
                self.hold(next);
                continue;
            }
            let Some(next) = self.held.pop_front() else { break };
            batch.add(next);
        }
        // What a full batch left held goes as soon as the disk allows.
        self.deferral.sent();
        let (commands, answers) = batch.split();
        let entry = Batch::answered(commands, &answers.replies);
        self.sent_at = self.disk.now().started;
        let (responder, response) = ProgressResponder::complete_only();
        match self.route.raft.client_write_ff(entry, Some(responder)).await {
            Ok(()) => {
                let deadline = Instant::now() + COMMIT_TIMEOUT;
                self.in_flight.push_back(InFlight { response, answers, deadline });
            }
            Err(fatal) => answers.finish(Err(Rejected::Unknown(fatal.to_string()))),
        }
        true
    }

    /// Sends what is held and queued to the leader, as far as [`Forwards`] allows, once
    /// nothing proposed here is still in openraft. Whether it sent a batch. Chunks forwarded
    /// here while this member led are refused: their follower sends them to the new leader.
    async fn forward(&mut self) -> bool {
        if !self.forwards.has_room() {
            return false;
        }
        self.drain().await;
        while let Ok(next) = self.queue.try_recv() {
            self.hold(next);
        }
        // A follower forwards at once: the leader batches what it receives.
        self.deferral.sent();
        let BatchLimits { max_commands, max_bytes, .. } = self.limits;
        let mut batch = self.forwards.assemble(&mut self.held, |b| b.is_full(max_commands, max_bytes));
        batch.refuse_chunks("leadership moved");
        if batch.commands.is_empty() {
            return false;
        }
        self.forwards.start(&self.route, batch);
        true
    }
}

/// The outcome of the oldest batch in flight, once openraft has it (or its deadline passed):
/// its entry's index and the results the state machine did not send itself; and who waits
/// for them. The batch then leaves `in_flight`. Never resolves while nothing is in flight.
async fn front(in_flight: &mut VecDeque<InFlight>) -> (Outcome, Answers) {
    let Some(oldest) = in_flight.front_mut() else { return std::future::pending().await };
    let outcome = match tokio::time::timeout_at(oldest.deadline, &mut oldest.response).await {
        Ok(Ok(Ok(response))) => Ok((response.log_id.index, response.data)),
        Ok(Ok(Err(ClientWriteError::ForwardToLeader(_)))) if oldest.answers.replies.logged() => Err(removed()),
        Ok(Ok(Err(ClientWriteError::ForwardToLeader(_)))) => Err(Rejected::NotApplied("leadership moved".into())),
        Ok(Ok(Err(e))) => Err(Rejected::Unknown(e.to_string())),
        Ok(Err(_)) => Err(Rejected::Unknown("raft stopped before answering".into())),
        // openraft keeps a deposed leader's pending writes waiting (#973): bound them.
        Err(_) => Err(Rejected::Unknown(format!("not committed within {COMMIT_TIMEOUT:?}"))),
    };
    match in_flight.pop_front() {
        Some(oldest) => (outcome, oldest.answers),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::CommandOp;
    use openraft::error::ForwardToLeader;
    use std::time::Duration;
    use ward_proto::SessionId;

    /// G14: openraft's "forward to the leader" is "not applied" (safe to send again) only for
    /// a batch that never reached this member's log; once logged, a new leader may remove it
    /// here while another member's copy still commits, so its outcome is unknown.
    #[tokio::test]
    async fn a_write_removed_after_it_was_logged_is_unknown_not_unapplied() {
        for logged in [false, true] {
            let cmd = Command { time_ms: 1, session: SessionId(1), xid: 1, op: CommandOp::CloseSession };
            let (reply, answer) = oneshot::channel();
            let mut batch = Assembled::default();
            batch.add(Proposal::One(cmd, reply));
            let (commands, answers) = batch.split();
            if logged {
                Batch::answered(commands, &answers.replies).mark_logged();
            }
            let (tx, response) = oneshot::channel();
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut in_flight = VecDeque::from([InFlight { response, answers, deadline }]);
            let _ = tx.send(Err(ClientWriteError::ForwardToLeader(ForwardToLeader::empty())));
            let (outcome, answers) = front(&mut in_flight).await;
            answers.finish(outcome);
            match answer.await.expect("answered") {
                Err(Rejected::Unknown(_)) => assert!(logged, "not logged, yet unknown"),
                Err(Rejected::NotApplied(_)) => assert!(!logged, "logged, yet told not applied"),
                other => panic!("unexpected answer {other:?}"),
            }
        }
    }
}
