//! A dead leader noticed at once: its followers elect the next one without waiting out
//! openraft's lease.
//!
//! A leader killed (`kill -9`, a crash) closes every connection it had, and its peer port
//! then refuses new ones. A follower sees its connection to the leader close, tries the port
//! once, and if the connection is refused, or accepted and closed at once without a word (a
//! forwarder in front of a member that is gone), it marks the leader of its current vote gone.
//! A port that is merely slow or silent proves nothing: a silent partition leaves the
//! connection open, and the leader's lease runs as before. It then asks the other voters whether
//! they find the same (each tries the port itself); when a majority of every configuration,
//! itself included, agrees, the voter among them with the longest log stands at once, without
//! Pre-Vote. A voter that has marked its leader gone waives openraft's lease for that vote
//! (it marks the vote request as a leadership transfer would), so the election is decided by
//! the logs alone, in a round trip and an fsync instead of the lease and an election timeout.
//!
//! Why this keeps G16 (a holder learns `lost()` before anyone else is granted its lock): the
//! lease a voter waives here was never what G16 rests on. The old leader acknowledges a touch
//! round at `r` only if a majority accepted appends it sent after `r − L` (`quorum`); a new
//! leader needs a majority of votes, so one voter both accepted such an append and then voted
//! (after voting for a higher term it refuses the old leader's appends): the new leader is
//! elected after `r − L`, and gives every session its timeout plus the grace `L + h` from when
//! it is ready, past `r + T` (docs/guarantees.md, G16). A mark is cleared as soon as an append
//! from a leader is accepted, and lapses after openraft's lease, when there is nothing left to
//! waive. Nothing here runs on a single server.

use super::types::{NodeId, Raft, Vote};
use crate::peer::{Channel, GoneAnswer, PeerRequest, PeerResponse, Peers};
use openraft::async_runtime::WatchReceiver;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a try of the leader's port may take to connect: on a live host a refusal is
/// immediate.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);
/// How long a connection the try opened must stay open, unasked, to count as served: a peer
/// listener waits for the caller's hello; a port that closes at once serves nothing (a
/// forwarder in front of a member that is gone, or a link that refuses).
const HELD_OPEN: Duration = Duration::from_millis(250);
/// How long the other voters have to answer whether they find the leader gone (each tries
/// its port first).
const ASK_TIMEOUT: Duration = Duration::from_secs(1);
/// While this member has no open connection to its leader (the touch rounds open one), how
/// often it looks again.
const NO_CONNECTION_POLL: Duration = Duration::from_millis(50);

/// What a try of a member's peer port found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Probe {
    /// Nothing serves there: the connection was refused, or closed at once unasked.
    Gone,
    /// Something accepted the connection and waits for the caller to speak.
    Serving,
    /// Timed out or failed otherwise: nothing can be concluded.
    Unknown,
}

/// Tries `addr` once: a bare TCP connect, held open for [`HELD_OPEN`] without a word.
pub(super) async fn probe(addr: &str) -> Probe {
    use tokio::io::AsyncReadExt;
    let mut stream = match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Probe::Gone,
        _ => return Probe::Unknown,
    };
    let mut byte = [0u8; 1];
    match tokio::time::timeout(HELD_OPEN, stream.read(&mut byte)).await {
        // Timed out: it waits for a hello, as a member does.
        Err(_) => Probe::Serving,
        Ok(Ok(0)) => Probe::Gone,
        Ok(Err(e))
            if matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted) =>
        {
            Probe::Gone
        }
        Ok(_) => Probe::Serving,
    }
}

/// This member's mark of a gone leader, shared by the watcher, the vote handler and the
/// answers to other voters.
pub(crate) struct GoneLeader {
    /// The vote whose leader's port refused a connection, and when that was found.
    mark: Mutex<Option<(Vote, Instant)>>,
    /// openraft's lease: past it there is nothing to waive.
    lease: Duration,
    /// Set while this member stands by this path, so that two triggers start one election.
    standing: AtomicBool,
    /// Elections this member started by this path (`ward_raft_fast_elections_total`).
    elections: AtomicU64,
}

impl GoneLeader {
    pub(crate) fn new(lease: Duration) -> Arc<GoneLeader> {
        Arc::new(GoneLeader {
            mark: Mutex::new(None),
            lease,
            standing: AtomicBool::new(false),
            elections: AtomicU64::new(0),
        })
    }

    fn found(&self, vote: &Vote) {
        *self.mark.lock().unwrap_or_else(PoisonError::into_inner) = Some((*vote, Instant::now()));
    }

    /// An append from a leader was accepted: whatever was marked is not gone, or not current.
    pub(crate) fn heard_leader(&self) {
        *self.mark.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Whether this member found the leader of `vote` (its current one) gone, recently
    /// enough that its lease may still stand in the way of the next election.
    pub(crate) fn waives(&self, vote: &Vote) -> bool {
        let mark = self.mark.lock().unwrap_or_else(PoisonError::into_inner);
        mark.is_some_and(|(marked, at)| marked == *vote && at.elapsed() < self.lease)
    }

    pub(crate) fn elections(&self) -> u64 {
        self.elections.load(Ordering::Relaxed)
    }
}

/// This member's vote and leader, the leader's peer address, and the voters of each
/// configuration (a joint membership has two).
struct Following {
    me: NodeId,
    vote: Vote,
    leader: NodeId,
    addr: String,
    configs: Vec<BTreeSet<NodeId>>,
}

fn following(raft: &Raft) -> Option<Following> {
    let m = raft.server_metrics().borrow_watched().clone();
    let leader = m.current_leader.filter(|l| *l != m.id)?;
    let membership = m.membership_config.membership();
    if !membership.voter_ids().any(|id| id == m.id) {
        return None;
    }
    let addr = membership.get_node(&leader)?.addr.clone();
    Some(Following { me: m.id, vote: m.vote, leader, addr, configs: membership.get_joint_config().clone() })
}

/// Watches the connection to the leader until `cancel`; see the module.
pub(super) async fn watch(raft: Raft, peers: Arc<Peers>, gone: Arc<GoneLeader>, cancel: CancellationToken) {
    let mut server = raft.server_metrics();
    loop {
        let now = following(&raft);
        let closed = now.as_ref().and_then(|f| peers.client(f.leader, Channel::Client).open_connection());
        let noticed = tokio::select! {
            () = cancel.cancelled() => return,
            changed = server.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
            () = async { match &closed {
                Some(token) => token.cancelled().await,
                None => tokio::time::sleep(NO_CONNECTION_POLL).await,
            } } => closed.is_some(),
        };
        let Some(f) = now.filter(|_| noticed) else { continue };
        if probe(&peers.route(f.leader, &f.addr)).await != Probe::Gone {
            continue;
        }
        if following(&raft).is_none_or(|again| again.vote != f.vote) {
            continue;
        }
        tracing::info!(leader = f.leader, addr = %f.addr, "the leader's peer port refuses connections: asking the other voters");
        gone.found(&f.vote);
        stand_if_agreed(&raft, &peers, &gone, f).await;
    }
}

/// Asks every other voter whether the leader of `f.vote` is gone for it too, and stands if
/// a majority of every configuration (this member included) says so and no voter that
/// agrees has a longer log (or as long, and a lower id).
async fn stand_if_agreed(raft: &Raft, peers: &Peers, gone: &GoneLeader, f: Following) {
    let mine = raft.metrics().borrow_watched().last_log_index.unwrap_or(0);
    let others: BTreeSet<NodeId> =
        f.configs.iter().flatten().copied().filter(|id| *id != f.me && *id != f.leader).collect();
    let addrs = {
        let m = raft.server_metrics().borrow_watched().clone();
        let membership = m.membership_config.membership();
        others.iter().filter_map(|id| Some((*id, membership.get_node(id)?.addr.clone()))).collect::<Vec<_>>()
    };
    let asks = addrs.into_iter().map(|(id, addr)| async move {
        let request = PeerRequest::LeaderGone { vote: f.vote, last_log: mine };
        match peers.call(id, &addr, Channel::Raft, request, ASK_TIMEOUT).await {
            Ok(PeerResponse::LeaderGone(answer)) => Some((id, answer)),
            _ => None,
        }
    });
    let answers: Vec<(NodeId, GoneAnswer)> =
        futures_util::future::join_all(asks).await.into_iter().flatten().filter(|(_, a)| a.gone).collect();
    let agreed: BTreeSet<NodeId> = answers.iter().map(|(id, _)| *id).chain([f.me]).collect();
    let majority =
        f.configs.iter().all(|voters| 2 * voters.iter().filter(|v| agreed.contains(v)).count() > voters.len());
    let longest = answers.iter().all(|(id, a)| ahead((mine, f.me), (a.last_log, *id)));
    tracing::info!(
        leader = f.leader,
        agreed = ?agreed,
        majority,
        longest,
        "voters that find the leader's port refusing connections"
    );
    if majority && longest {
        stand(raft, gone, &f.vote).await;
    }
}

/// Whether a voter with last log index and id `a` should stand rather than `b`.
pub(super) fn ahead(a: (u64, NodeId), b: (u64, NodeId)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 <= b.1)
}

async fn stand(raft: &Raft, gone: &GoneLeader, vote: &Vote) {
    if !gone.waives(vote) || gone.standing.swap(true, Ordering::AcqRel) {
        return;
    }
    // No Pre-Vote: this member's own lease would refuse it, and a majority has just agreed
    // that the leader is gone.
    match raft.trigger().elect(false).await {
        Ok(()) => {
            gone.elections.fetch_add(1, Ordering::Relaxed);
            tracing::info!("standing at once: the leader is gone for a majority of the voters");
        }
        Err(error) => tracing::warn!(%error, "standing after the leader was found gone"),
    }
    gone.standing.store(false, Ordering::Release);
}

/// A voter's answer to another's `LeaderGone`: it tries the leader's port itself (unless it
/// has already found it refusing), and if it finds the leader gone and its own log ahead of
/// the asker's, it stands itself.
pub(super) async fn answer(
    raft: &Raft,
    peers: &Peers,
    gone: &Arc<GoneLeader>,
    (from, vote, their_log): (NodeId, Vote, u64),
) -> GoneAnswer {
    let mine = raft.metrics().borrow_watched().last_log_index.unwrap_or(0);
    let Some(f) = following(raft).filter(|f| f.vote == vote) else {
        return GoneAnswer { gone: false, last_log: mine };
    };
    if !gone.waives(&vote) && probe(&peers.route(f.leader, &f.addr)).await == Probe::Gone {
        gone.found(&vote);
    }
    let is_gone = gone.waives(&vote);
    if is_gone && ahead((mine, f.me), (their_log, from)) {
        let (raft, gone) = (raft.clone(), gone.clone());
        tokio::spawn(async move { stand(&raft, &gone, &vote).await });
    }
    GoneAnswer { gone: is_gone, last_log: mine }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_log_stands_and_the_lower_id_breaks_a_tie() {
        assert!(ahead((10, 3), (9, 1)));
        assert!(!ahead((9, 1), (10, 3)));
        assert!(ahead((10, 1), (10, 2)));
        assert!(!ahead((10, 2), (10, 1)));
    }

    #[tokio::test]
    async fn a_port_that_refuses_or_closes_at_once_is_gone_and_one_that_waits_serves() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        // Accepts and waits, as a member's peer listener waits for a hello.
        let waiting = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.expect("accept");
            tokio::time::sleep(HELD_OPEN * 4).await;
            drop(stream);
            listener
        });
        assert_eq!(probe(&addr).await, Probe::Serving);
        let listener = waiting.await.expect("listener");
        // Accepts and closes at once, as a forwarder in front of a dead member does.
        let closing = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.expect("accept");
            drop(stream);
            listener
        });
        assert_eq!(probe(&addr).await, Probe::Gone);
        drop(closing.await.expect("listener"));
        assert_eq!(probe(&addr).await, Probe::Gone, "refused");
    }
}
