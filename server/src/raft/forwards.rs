//! A follower's batches on their way to the leader: several at once, none sharing a session
//! with another.
//!
//! A session's writes must reach the log in the order it sent them (G2), even when a batch
//! fails at one leader and is sent again to the next. Batches of different sessions need
//! no order between them: they are concurrent, and either order is a valid history. So a
//! follower may have up to [`MAX_FORWARDS`] batches in flight as long as no session has
//! commands in two of them; a command whose session is busy waits, with every later command
//! of its session, for that batch's answer. One batch at a time left a follower's writers
//! waiting a whole round trip to the leader for the next batch to leave.

use super::answers::{Answers, Assembled, Outcome, Proposal};
use super::route::Route;
use super::unsettled::fence;
use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use std::collections::{HashSet, VecDeque};
use ward_proto::{SessionId, Zxid};

/// Batches a follower may have at the leader at once.
pub(super) const MAX_FORWARDS: usize = 4;

/// A batch's outcome, who waits for it, its sessions, and its connections' fences
/// ([`super::unsettled::fence`]).
type Done = (Outcome, Answers, Vec<SessionId>, Vec<(SessionId, Zxid)>);

/// See the module's doc.
#[derive(Default)]
pub(super) struct Forwards {
    running: FuturesUnordered<BoxFuture<'static, Done>>,
    /// Sessions with commands in a running batch.
    busy: HashSet<SessionId>,
}

impl Forwards {
    pub(super) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    pub(super) fn has_room(&self) -> bool {
        self.running.len() < MAX_FORWARDS
    }

    /// Takes from `held`, in order, the proposals whose session has no batch running and no
    /// earlier proposal left behind in `held`, until the batch is full; the rest stay, in
    /// their order.
    pub(super) fn assemble(&self, held: &mut VecDeque<Proposal>, full: impl Fn(&Assembled) -> bool) -> Assembled {
        let mut batch = Assembled::default();
        let mut left: HashSet<SessionId> = HashSet::new();
        let mut kept = VecDeque::new();
        while let Some(proposal) = held.pop_front() {
            if full(&batch) {
                held.push_front(proposal);
                break;
            }
            match proposal.session() {
                Some(session) if self.busy.contains(&session) || left.contains(&session) => {
                    left.insert(session);
                    kept.push_back(proposal);
                }
                _ => batch.add(proposal),
            }
        }
        kept.append(held);
        *held = kept;
        batch
    }

    /// Sends `batch` to the leader; its sessions are busy until its answer.
    pub(super) fn start(&mut self, route: &Route, batch: Assembled) {
        let (commands, answers) = batch.split();
        let mut sessions: Vec<SessionId> = commands.iter().map(|cmd| cmd.session).collect();
        sessions.sort_unstable();
        sessions.dedup();
        self.busy.extend(sessions.iter().copied());
        let fences = commands.iter().filter_map(fence).collect();
        let route = route.clone();
        let n = commands.len();
        self.running.push(
            async move {
                let outcome = route.commit(commands).await.map(|applied| {
                    if applied.len() != n {
                        tracing::error!(sent = n, got = applied.len(), "batch reply has the wrong length");
                    }
                    (0, applied)
                });
                (outcome, answers, sessions, fences)
            }
            .boxed(),
        );
    }

    /// The next batch to be answered, its sessions free again, and the fences of its
    /// connections' writes. Never resolves while none runs.
    pub(super) async fn next(&mut self) -> (Outcome, Answers, Vec<(SessionId, Zxid)>) {
        let Some((outcome, answers, sessions, fences)) = self.running.next().await else {
            return std::future::pending().await;
        };
        for session in sessions {
            self.busy.remove(&session);
        }
        (outcome, answers, fences)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, CommandOp};
    use tokio::sync::oneshot;

    fn proposal(session: u64, xid: u64) -> Proposal {
        let (reply, _) = oneshot::channel();
        Proposal::One(Command { time_ms: 0, session: SessionId(session), xid, op: CommandOp::CloseSession }, reply)
    }

    fn taken(batch: &Assembled) -> Vec<(u64, u64)> {
        batch.commands.iter().map(|c| (c.session.0, c.xid)).collect()
    }

    fn left(held: &VecDeque<Proposal>) -> Vec<(u64, u64)> {
        held.iter()
            .map(|p| match p {
                Proposal::One(c, _) => (c.session.0, c.xid),
                Proposal::Chunk(..) => (0, 0),
            })
            .collect()
    }

    /// G2: a session with a batch on its way keeps every later command back, in order, while
    /// other sessions' commands leave.
    #[test]
    fn a_busy_session_waits_in_order_and_others_go() {
        let mut forwards = Forwards::default();
        forwards.busy.insert(SessionId(1));
        let mut held: VecDeque<Proposal> =
            [proposal(1, 1), proposal(2, 1), proposal(1, 2), proposal(3, 1), proposal(2, 2)].into_iter().collect();
        let batch = forwards.assemble(&mut held, |_| false);
        assert_eq!(taken(&batch), vec![(2, 1), (3, 1), (2, 2)]);
        assert_eq!(left(&held), vec![(1, 1), (1, 2)]);
        forwards.busy.clear();
        let batch = forwards.assemble(&mut held, |_| false);
        assert_eq!(taken(&batch), vec![(1, 1), (1, 2)]);
        assert!(held.is_empty());
    }

    /// G2: a full batch stops the pass; what was not looked at stays behind what was kept.
    #[test]
    fn a_full_batch_leaves_the_rest_in_order() {
        let mut forwards = Forwards::default();
        forwards.busy.insert(SessionId(9));
        let mut held: VecDeque<Proposal> =
            [proposal(9, 1), proposal(2, 1), proposal(3, 1), proposal(9, 2), proposal(4, 1)].into_iter().collect();
        let batch = forwards.assemble(&mut held, |b| b.commands.len() >= 2);
        assert_eq!(taken(&batch), vec![(2, 1), (3, 1)]);
        assert_eq!(left(&held), vec![(9, 1), (9, 2), (4, 1)]);
    }
}
