//! What the proposer queues and how each waiter gets its result: a command with its own
//! reply, or a whole forwarded batch (a *chunk*) that the leader folds into its own entry
//! and answers with that entry's index ([`super::proposer`]).

use super::batch::{approx_size, Replies, Sender};
use crate::command::{Applied, Command};
use crate::replication::{Committed, Rejected};
use std::sync::Arc;
use tokio::sync::oneshot;
use ward_proto::SessionId;

/// A forwarded chunk's outcome: the index of the entry that holds it, and each command's
/// result in order.
pub(super) type ChunkResult = Result<(u64, Vec<Applied>), Rejected>;

/// A batch's outcome as the proposer learns it: its entry's index (0 when unknown here) and
/// the results the state machine did not send itself.
pub(super) type Outcome = Result<(u64, Vec<Applied>), Rejected>;

/// One item of the proposer's queue.
pub(super) enum Proposal {
    One(Command, oneshot::Sender<Committed>),
    Chunk(Vec<Command>, oneshot::Sender<ChunkResult>),
}

impl Proposal {
    /// The session whose order this proposal takes part in; `None` for a chunk, whose
    /// sessions the follower that sent it keeps in order.
    pub(super) fn session(&self) -> Option<SessionId> {
        match self {
            Proposal::One(cmd, _) => Some(cmd.session),
            Proposal::Chunk(..) => None,
        }
    }
}

/// A batch being made: its commands and who waits for them.
#[derive(Default)]
pub(super) struct Assembled {
    pub commands: Vec<Command>,
    senders: Vec<Sender>,
    chunks: Vec<(usize, oneshot::Sender<ChunkResult>)>,
    bytes: usize,
}

impl Assembled {
    pub(super) fn add(&mut self, proposal: Proposal) {
        match proposal {
            Proposal::One(cmd, reply) => {
                self.bytes += approx_size(&cmd);
                self.commands.push(cmd);
                self.senders.push(Some(reply));
            }
            Proposal::Chunk(cmds, reply) => {
                self.bytes += cmds.iter().map(approx_size).sum::<usize>();
                self.chunks.push((cmds.len(), reply));
                self.senders.extend(cmds.iter().map(|_| None));
                self.commands.extend(cmds);
            }
        }
    }

    /// Whether the batch has reached either limit.
    pub(super) fn is_full(&self, max_commands: usize, max_bytes: usize) -> bool {
        self.commands.len() >= max_commands || self.bytes >= max_bytes
    }

    /// The commands, and who waits for them.
    pub(super) fn split(self) -> (Vec<Command>, Answers) {
        (self.commands, Answers { replies: Replies::new(self.senders), chunks: self.chunks })
    }

    /// Refuses the chunks (as not applied: never sent anywhere) and keeps the rest.
    pub(super) fn refuse_chunks(&mut self, why: &str) {
        for (_, chunk) in self.chunks.drain(..) {
            let _ = chunk.send(Err(Rejected::NotApplied(why.into())));
        }
        if self.senders.iter().any(Option::is_none) {
            let (commands, senders) = std::mem::take(&mut self.commands)
                .into_iter()
                .zip(std::mem::take(&mut self.senders))
                .filter(|(_, s)| s.is_some())
                .unzip();
            (self.commands, self.senders) = (commands, senders);
        }
    }
}

/// Who waits for a batch's results: a sender per command (`None` for a chunk's commands),
/// and each chunk's length and sender, in order.
pub(super) struct Answers {
    pub replies: Arc<Replies>,
    chunks: Vec<(usize, oneshot::Sender<ChunkResult>)>,
}

impl Answers {
    /// Answers the commands the state machine did not answer itself: when the batch
    /// succeeded, the chunks' (and, if the state machine never saw the senders, everyone's)
    /// from the outcome's results, in order; when it failed, all of them.
    pub(super) fn finish(self, outcome: Outcome) {
        let Answers { replies, chunks } = self;
        let (index, applied) = match outcome {
            Ok(done) => done,
            Err(rejected) => {
                let senders = replies.take().unwrap_or_default();
                tracing::warn!(%rejected, commands = senders.len(), chunks = chunks.len(), "batch not committed");
                for reply in senders.into_iter().flatten() {
                    let _ = reply.send(Err(rejected.clone()));
                }
                for (_, chunk) in chunks {
                    let _ = chunk.send(Err(rejected.clone()));
                }
                return;
            }
        };
        let mut results = applied.into_iter();
        let mut for_chunks = Vec::new();
        for sender in replies.take().unwrap_or_default() {
            let result = results.next();
            match sender {
                Some(reply) => {
                    let _ = reply.send(result.ok_or_else(|| Rejected::Unknown("no result for this command".into())));
                }
                None => for_chunks.extend(result),
            }
        }
        // Taken by the state machine: what is left are the chunks' results alone.
        for_chunks.extend(results);
        let mut for_chunks = for_chunks.into_iter();
        for (len, chunk) in chunks {
            let part: Vec<Applied> = for_chunks.by_ref().take(len).collect();
            let answer = match part.len() == len {
                true => Ok((index, part)),
                false => Err(Rejected::Unknown("no result for a forwarded command".into())),
            };
            let _ = chunk.send(answer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{CommandOp, Outcome as Applies};
    use ward_proto::Response;

    fn command(xid: u64) -> Command {
        Command { time_ms: 0, session: SessionId(1), xid, op: CommandOp::CloseSession }
    }

    fn applied(zxid: u64) -> Applied {
        Applied { zxid, outcome: Applies::Reply(Ok(Response::Deleted)) }
    }

    /// A chunk's commands get their results, in order, with the entry's index; commands with
    /// their own reply get theirs when the state machine left them unanswered.
    #[tokio::test]
    async fn chunks_get_their_own_results_with_the_index() {
        let mut batch = Assembled::default();
        let (one, one_rx) = oneshot::channel();
        let (chunk, chunk_rx) = oneshot::channel();
        let (two, two_rx) = oneshot::channel();
        batch.add(Proposal::One(command(1), one));
        batch.add(Proposal::Chunk(vec![command(2), command(3)], chunk));
        batch.add(Proposal::One(command(4), two));
        let (commands, answers) = batch.split();
        assert_eq!(commands.len(), 4);
        answers.finish(Ok((42, (1..=4).map(applied).collect())));
        assert_eq!(one_rx.await.expect("answered"), Ok(applied(1)));
        assert_eq!(chunk_rx.await.expect("answered"), Ok((42, vec![applied(2), applied(3)])));
        assert_eq!(two_rx.await.expect("answered"), Ok(applied(4)));
    }

    /// When the state machine answered the batch's own commands, the outcome holds the
    /// chunks' results alone; a failed batch fails everyone, chunks included.
    #[tokio::test]
    async fn after_the_state_machine_answered_only_chunks_are_left() {
        let mut batch = Assembled::default();
        let (one, _one_rx) = oneshot::channel();
        let (chunk, chunk_rx) = oneshot::channel();
        batch.add(Proposal::One(command(1), one));
        batch.add(Proposal::Chunk(vec![command(2)], chunk));
        let (_, answers) = batch.split();
        let senders = answers.replies.take().expect("senders");
        assert!(senders[0].is_some() && senders[1].is_none());
        answers.finish(Ok((7, vec![applied(2)])));
        assert_eq!(chunk_rx.await.expect("answered"), Ok((7, vec![applied(2)])));

        let mut batch = Assembled::default();
        let (one, one_rx) = oneshot::channel();
        let (chunk, chunk_rx) = oneshot::channel();
        batch.add(Proposal::One(command(1), one));
        batch.add(Proposal::Chunk(vec![command(2)], chunk));
        let (_, answers) = batch.split();
        answers.finish(Err(Rejected::NotApplied("moved".into())));
        assert_eq!(one_rx.await.expect("answered"), Err(Rejected::NotApplied("moved".into())));
        assert_eq!(chunk_rx.await.expect("answered"), Err(Rejected::NotApplied("moved".into())));
    }

    /// A member that stopped leading refuses the chunks it holds and keeps its own commands.
    #[tokio::test]
    async fn refused_chunks_leave_the_batch() {
        let mut batch = Assembled::default();
        let (one, _one_rx) = oneshot::channel();
        let (chunk, chunk_rx) = oneshot::channel();
        batch.add(Proposal::Chunk(vec![command(2), command(3)], chunk));
        batch.add(Proposal::One(command(1), one));
        batch.refuse_chunks("leadership moved");
        assert_eq!(batch.commands, vec![command(1)]);
        assert!(matches!(chunk_rx.await, Ok(Err(Rejected::NotApplied(_)))));
    }
}
