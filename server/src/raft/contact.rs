//! Contact with the leader: whether a client's heartbeat received here is known to count.
//!
//! Heartbeats are not logged, and only the leader's deadlines decide expiry. So a member may
//! answer a client's ping only once it knows the leader has refreshed that session's
//! deadline after the ping arrived; otherwise a member cut off from the leader would keep a
//! client believing in a session (and its locks) that the leader is about to expire. That
//! knowledge comes in *rounds*: a follower passes its touched sessions to the leader and
//! the round counts when the leader acknowledges them; on the leader a round counts when it
//! is ready (see [`super::leadership`]) and a quorum has answered it recently (its lease).
//! A ping waits for a round that *started* after it arrived (R3 in docs/guarantees.md).
//!
//! A member with no round acknowledged for [`OUT_OF_CONTACT`] is out of contact: it closes
//! its client connections and refuses handshakes until a round succeeds again (R6), so its
//! clients move to a member that can keep their sessions alive.

use super::quorum::QuorumClock;
use super::rounds::Rounds;
use super::transfer::HandingOver;
use super::types::Raft;
use crate::conn::CloseReason;
use crate::local::Local;
use crate::peer::{Channel, PeerRequest, PeerResponse, Peers};
use openraft::async_runtime::WatchReceiver;
use openraft::Instant as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use ward_proto::SessionId;

/// Rounds run at least this often (a fraction of the shortest session timeout), and at once
/// when a ping waits.
pub(crate) const ROUND_EVERY: Duration = Duration::from_millis(300);
/// After a round that was not acknowledged while a ping or a resuming client waits for one:
/// the next try. Rounds fail while a leader is being elected or getting ready, and the
/// clients waiting on them should hear as soon as the new leader can answer, not a whole
/// [`ROUND_EVERY`] later (that was most of what a failover cost a client once the new
/// leader was ready).
const RETRY_WAITED: Duration = Duration::from_millis(20);
/// With no round acknowledged for this long a member gives its clients up. Longer than an
/// ordinary failover (1.03–1.26 s measured at the default timing, the new leader's readiness
/// included), so that a leader change does not cost every follower's client its connection;
/// clients whose pings go unconfirmed move on by themselves anyway (at 4/5 of their timeout,
/// or 2/3 for ZooKeeper's clients).
pub(crate) const OUT_OF_CONTACT: Duration = Duration::from_secs(5);

/// Shared between the round task, pings and handshakes.
pub(crate) struct Contact {
    rounds: Rounds,
    /// Bumped at every acknowledgement, to wake the pings waiting on `rounds`.
    acked: watch::Sender<()>,
    /// A ping is waiting: start a round now.
    wanted: Notify,
    /// False while out of contact.
    in_contact: AtomicBool,
}

impl Contact {
    /// A member of an ensemble starts out of contact (it accepts no clients until a leader
    /// acknowledges it); a single server is its own leader.
    pub(crate) fn new(in_contact: bool) -> Arc<Contact> {
        Arc::new(Contact {
            rounds: Rounds::default(),
            acked: watch::Sender::new(()),
            wanted: Notify::new(),
            in_contact: AtomicBool::new(in_contact),
        })
    }

    /// Whether clients may be accepted. When not, a round starts at once: a member that has
    /// just found its leader should not make a client wait for the next tick.
    pub(crate) fn in_contact(&self) -> bool {
        let yes = self.in_contact.load(Ordering::SeqCst);
        if !yes {
            self.wanted.notify_one();
        }
        yes
    }

    /// Resolves once a round started after this call has been acknowledged.
    pub(crate) async fn confirm(&self) {
        // Subscribed before the round can be acknowledged: no acknowledgement is missed.
        let mut acked = self.acked.subscribe();
        let need = self.rounds.needed();
        self.wanted.notify_one();
        // The sender lives as long as `self`.
        let _ = acked.wait_for(|()| self.rounds.confirmed(need)).await;
    }
}

/// Runs rounds until `cancel`.
pub(crate) async fn run(
    contact: Arc<Contact>,
    raft: Raft,
    (quorum, handing): (Arc<QuorumClock>, HandingOver),
    (local, peers): (Arc<Local>, Arc<Peers>),
    cancel: CancellationToken,
) {
    let mut last_ack = Instant::now();
    // Touches of a round that did not reach the leader go with the next one.
    let mut carried: Vec<SessionId> = Vec::new();
    let mut first = true;
    let mut pause = ROUND_EVERY;
    loop {
        if !std::mem::take(&mut first) {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = contact.wanted.notified() => {}
                _ = tokio::time::sleep(pause) => {}
            }
        }
        let round = contact.rounds.start();
        let mut touched = local.sessions.take_touched();
        touched.append(&mut carried);
        // Whether the leader acknowledged the round, and which of its touches it refused.
        let acknowledged = match leader_of(&raft) {
            Leader::Me { single } => {
                (single || (local.ready.is_ready() && lease_fresh(&raft, &quorum, &handing))).then(Vec::new)
            }
            Leader::Other(leader, addr) => {
                let applied = raft.metrics().borrow_watched().last_applied.map(|id| id.index);
                let request = PeerRequest::Touch { sessions: touched.clone(), applied };
                match peers.call(leader, &addr, Channel::Client, request, ROUND_EVERY * 3).await {
                    // Only from the leader of now: a deposed one's answer (this member may
                    // have been elected meanwhile) neither confirms pings nor refuses sessions.
                    Ok(PeerResponse::Touch(Ok(gone)))
                        if raft.metrics().borrow_watched().current_leader == Some(leader) =>
                    {
                        Some(gone)
                    }
                    answer => {
                        tracing::debug!(leader, ?answer, "touch round not acknowledged");
                        None
                    }
                }
            }
            Leader::Unknown => None,
        };
        // Each waiting `confirm` holds a receiver of `acked` until its round is acknowledged.
        pause = if acknowledged.is_none() && contact.acked.receiver_count() > 0 { RETRY_WAITED } else { ROUND_EVERY };
        if let Some(gone) = acknowledged {
            last_ack = Instant::now();
            contact.rounds.acknowledged(round, &local.sessions, &touched, &gone);
            contact.acked.send_replace(());
            if !contact.in_contact.swap(true, Ordering::SeqCst) {
                tracing::info!("back in contact with the leader: accepting clients again");
            }
        } else {
            touched.sort_unstable();
            touched.dedup();
            carried = touched;
            if last_ack.elapsed() > OUT_OF_CONTACT && contact.in_contact.swap(false, Ordering::SeqCst) {
                tracing::warn!(
                    silent_ms = last_ack.elapsed().as_millis() as u64,
                    "out of contact with a leader: closing client connections so they move to another member"
                );
                local.sessions.close_all(CloseReason::OutOfContact);
            }
        }
    }
}

enum Leader {
    Me { single: bool },
    Other(u64, String),
    Unknown,
}

fn leader_of(raft: &Raft) -> Leader {
    let m = raft.metrics().borrow_watched().clone();
    match m.current_leader {
        Some(leader) if leader == m.id => {
            Leader::Me { single: m.membership_config.membership().voter_ids().eq([m.id]) }
        }
        Some(leader) => match m.membership_config.membership().get_node(&leader) {
            Some(node) => Leader::Other(leader, node.addr.clone()),
            None => Leader::Unknown,
        },
        None => Leader::Unknown,
    }
}

/// Whether this leader heard from a quorum within its lease for touches
/// ([`super::timing::touch_lease`]): no other leader can have been elected meanwhile without
/// this one's acknowledgements being covered by the new leader's grace. Judged now, from when
/// the accepted appends were sent ([`QuorumClock`]), and also by openraft's own figure.
///
/// A leader handing its leadership over has given the lease up: the member it hands to is
/// elected without waiting for the voters' leases to pass, so from the moment the hand-over
/// begins this leader acknowledges no touch (G16, G26), and the new leader's grace covers
/// every touch acknowledged before.
pub(crate) fn lease_fresh(raft: &Raft, quorum: &QuorumClock, handing: &HandingOver) -> bool {
    if handing.is_set() {
        return false;
    }
    let m = raft.metrics().borrow_watched().clone();
    let membership = m.membership_config.membership();
    if membership.voter_ids().eq([m.id]) {
        return true;
    }
    let lease = super::timing::touch_lease(raft.config());
    m.last_quorum_acked.as_ref().is_some_and(|at| at.elapsed() < lease)
        && quorum.fresh(m.id, membership.get_joint_config(), std::time::Instant::now(), lease)
}
