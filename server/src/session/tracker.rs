//! The sessions live on this server, under one lock: their deadlines ([`Deadlines`]), the
//! touch rounds that pass their heartbeats to the leader ([`Touches`]), and the connection
//! serving each ([`Directory`]). One lock because they change together: a heartbeat revives
//! a deadline and lists a touch; an attach checks the session is live and binds its
//! connection, which an ending session must not slip between.

use super::deadlines::Deadlines;
use super::readiness::Readiness;
use super::touches::Touches;
use crate::conn::directory::Directory;
use crate::conn::{CloseReason, ConnId, Outbound, OutboundTx};
use crate::sync::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;
use tokio::time::Instant;
use ward_proto::SessionId;

/// One session's liveness here ([`SessionTracker::liveness`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Liveness {
    /// The connection serving the session on this server, if any.
    pub conn: Option<ConnId>,
    /// When this server last heard from it (or restarted its timeout).
    pub heard: Instant,
    /// An expiry has been proposed.
    pub expiring: bool,
}

#[derive(Default)]
struct Sessions {
    deadlines: Deadlines,
    touches: Touches,
    conns: Directory,
}

/// Every live session's deadline and connection. Heartbeats only touch this; they never
/// reach the log.
pub struct SessionTracker {
    // A std mutex: touched on every frame, never held across an await.
    inner: Mutex<Sessions>,
    /// Read under `inner` by the sweep, so that the switch and the deadlines it restarts are
    /// seen together.
    ready: Arc<Readiness>,
}

impl Default for SessionTracker {
    fn default() -> Self {
        SessionTracker::new(Arc::default())
    }
}

impl SessionTracker {
    /// A tracker whose sweep runs while `ready` is on; it switches `ready` itself.
    pub fn new(ready: Arc<Readiness>) -> SessionTracker {
        SessionTracker { inner: Mutex::default(), ready }
    }

    fn lock(&self) -> MutexGuard<'_, Sessions> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts tracking a session created by apply, with a full timeout ahead of it.
    pub fn register(&self, session: SessionId, timeout: Duration) {
        self.lock().deadlines.register(session, timeout, Instant::now());
    }

    /// Makes the tracked sessions exactly `live` (after the state was replaced by a
    /// snapshot): those not in it have ended, and those new to it start a full timeout.
    pub fn follow(&self, live: Vec<(SessionId, Duration)>) {
        let live: HashMap<SessionId, Duration> = live.into_iter().collect();
        let mut s = self.lock();
        for id in s.deadlines.keep(&live) {
            s.touches.forget(id);
            s.conns.close(id, CloseReason::SessionEnded);
        }
        let now = Instant::now();
        for (id, timeout) in live {
            if !s.deadlines.contains(id) {
                s.deadlines.register(id, timeout, now);
            }
        }
    }

    /// Closes every connection serving a session here, for `reason`.
    pub fn close_all(&self, reason: CloseReason) {
        self.lock().conns.close_all(reason);
    }

    /// This server leads and has applied every earlier entry: gives every tracked session
    /// `timeout + grace` from now, forgets pending expiry proposals and the last leader's
    /// refusals, and only then turns the leader's duties on. A new leader does not know when
    /// another member last heard from a client, so each gets a whole timeout (and `grace`,
    /// the time a deposed leader may still have been acknowledging that client) before this
    /// one may expire it.
    pub(crate) fn ready_to_lead(&self, grace: Duration) {
        let mut s = self.lock();
        s.deadlines.restart(grace, Instant::now());
        s.touches.forget_refusals();
        self.ready.set(true);
    }

    /// Turns the leader's duties off, and forgets every expiry this server proposed and has
    /// not applied: a member that stopped leading decides no expiry, and must not turn its
    /// sessions' resumes and touches away as if it had.
    pub(crate) fn not_leading(&self) {
        self.ready.set(false);
        self.lock().deadlines.forget_expiries();
    }

    /// The leader acknowledged a round that carried the touches of `touched`, and answered
    /// `gone` of them gone.
    pub(crate) fn heard_back(&self, touched: &[SessionId], gone: &[SessionId]) {
        let mut s = self.lock();
        let tracked: Vec<SessionId> = touched.iter().copied().filter(|id| s.deadlines.contains(*id)).collect();
        s.touches.heard_back(&tracked, gone);
    }

    /// Whether a heartbeat of `session` that a round has confirmed may be answered as
    /// confirmed (a pong, or the welcome of a resume): tracked here, not being expired by
    /// this member, and not refused by the leader at the last touch that reached it.
    pub(crate) fn may_confirm(&self, session: SessionId) -> bool {
        let s = self.lock();
        s.deadlines.is_live(session) && !s.touches.refused(session)
    }

    /// Sessions heard from since the last call.
    pub fn take_touched(&self) -> Vec<SessionId> {
        self.lock().touches.take()
    }

    /// Binds the session to a connection, closing the one that served it before. Returns
    /// false when the session is not live here.
    pub(crate) fn attach(&self, session: SessionId, conn: ConnId, tx: OutboundTx) -> bool {
        let mut s = self.lock();
        if !s.deadlines.revive(session, Instant::now()) {
            return false;
        }
        s.touches.mark(session);
        s.conns.bind(session, conn, tx);
        true
    }

    /// Records a sign of life: any frame on the session's connection, or a touch passed on
    /// by another member. False when the session is not live here (unknown, or expiring).
    pub fn touch(&self, session: SessionId) -> bool {
        let mut s = self.lock();
        let live = s.deadlines.revive(session, Instant::now());
        if live {
            s.touches.mark(session);
        }
        live
    }

    /// The connection went away; the session lives on until its deadline.
    pub(crate) fn detach(&self, session: SessionId, conn: ConnId) {
        self.lock().conns.unbind(session, conn);
    }

    /// Pushes `msg` to the connection serving `session`; false if none does.
    pub fn send(&self, session: SessionId, msg: Outbound) -> bool {
        self.lock().conns.send(session, msg)
    }

    /// True while `conn` is the connection serving `session`. A connection that lost its
    /// session to a newer one must not submit more writes for it.
    pub(crate) fn is_owner(&self, session: SessionId, conn: ConnId) -> bool {
        self.lock().conns.owner(session) == Some(conn)
    }

    /// True while the session is tracked here and not being expired.
    pub(crate) fn is_live(&self, session: SessionId) -> bool {
        self.lock().deadlines.is_live(session)
    }

    /// The session ended in the state machine: forget it and close its connection.
    pub fn ended(&self, session: SessionId) {
        let mut s = self.lock();
        s.deadlines.remove(session);
        s.touches.forget(session);
        s.conns.close(session, CloseReason::SessionEnded);
    }

    /// Sessions whose deadline has passed and whose expiry is not yet proposed, while this
    /// server is ready to lead; marks them.
    pub fn take_due(&self, now: Instant) -> Vec<SessionId> {
        let mut s = self.lock();
        // Read under the lock: `ready_to_lead` restarts the deadlines before it switches.
        if !self.ready.is_ready() {
            return Vec::new();
        }
        s.deadlines.take_due(now)
    }

    /// An expiry proposal failed to be ordered; let the next sweep try again.
    pub(crate) fn retry_expiry(&self, session: SessionId) {
        self.lock().deadlines.retry(session);
    }

    pub fn len(&self) -> usize {
        self.lock().deadlines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What this server knows of each tracked session's liveness, for the console: the
    /// connection serving it here, and when it was last heard from (its deadline less its
    /// timeout; after a restart or a change of leader, when its fresh timeout began).
    pub(crate) fn liveness(&self) -> Vec<(SessionId, Liveness)> {
        let s = self.lock();
        s.deadlines
            .heard()
            .map(|(id, heard, expiring)| (id, Liveness { conn: s.conns.owner(id), heard, expiring }))
            .collect()
    }
}

#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(4);

    fn heard(tracker: &SessionTracker, id: SessionId) -> Instant {
        tracker.liveness().into_iter().find(|(s, _)| *s == id).map(|(_, l)| l.heard).expect("tracked")
    }

    /// G16: a touch never shortens the timeout and grace a new leader gave a session: a
    /// deposed leader may still acknowledge a later heartbeat of it.
    #[test]
    fn a_touch_never_shortens_a_new_leaders_grace() {
        let tracker = SessionTracker::default();
        let id = SessionId(7);
        tracker.register(id, TIMEOUT);
        tracker.ready_to_lead(Duration::from_secs(60));
        let given = heard(&tracker, id);
        assert!(tracker.touch(id));
        assert_eq!(heard(&tracker, id), given, "the touch moved the deadline back");
    }

    /// G15: a member that stops sweeping (it no longer leads) forgets the expiries it
    /// proposed and has not applied: the session's touches count again.
    #[test]
    fn expiries_proposed_before_the_sweep_stopped_are_forgotten() {
        let tracker = SessionTracker::default();
        let id = SessionId(7);
        tracker.register(id, TIMEOUT);
        assert_eq!(tracker.take_due(Instant::now() + 2 * TIMEOUT), vec![id]);
        assert!(!tracker.touch(id), "expiring");
        tracker.not_leading();
        assert!(tracker.touch(id), "still expiring after the lead was lost");
        assert!(tracker.take_due(Instant::now() + 4 * TIMEOUT).is_empty(), "swept while off");
    }

    /// R3, defence in depth: a heartbeat is not confirmed for a session the leader refused
    /// at the last touch that reached it, nor one this member is expiring; the refusal lasts
    /// until a later round carries a touch the leader takes, or this member leads.
    #[test]
    fn a_session_the_leader_refused_is_not_confirmed_until_a_later_touch_is_taken() {
        let tracker = SessionTracker::default();
        let (refused, taken, untouched) = (SessionId(7), SessionId(8), SessionId(9));
        for id in [refused, taken, untouched] {
            tracker.register(id, TIMEOUT);
        }
        tracker.heard_back(&[refused, taken], &[refused]);
        assert!(!tracker.may_confirm(refused), "the leader refused its touch");
        assert!(tracker.may_confirm(taken) && tracker.may_confirm(untouched));
        tracker.heard_back(&[taken], &[]);
        assert!(!tracker.may_confirm(refused), "a round without its touch changes nothing");
        tracker.heard_back(&[refused], &[]);
        assert!(tracker.may_confirm(refused), "a later touch taken");
        tracker.heard_back(&[refused], &[refused]);
        tracker.ready_to_lead(Duration::ZERO);
        assert!(tracker.may_confirm(refused), "a new leader decides for itself");
        assert_eq!(tracker.take_due(Instant::now() + 2 * TIMEOUT).len(), 3);
        assert!(!tracker.may_confirm(taken), "this member is expiring it");
        assert!(!tracker.may_confirm(SessionId(10)), "not tracked here");
    }
}
