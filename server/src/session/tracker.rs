//! Deadlines and connection ownership of live sessions.

use crate::conn::{CloseReason, ConnId, Outbound, OutboundTx};
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use std::collections::HashMap;
use std::sync::PoisonError;
use std::time::Duration;
use tokio::time::Instant;
use ward_proto::SessionId;

struct Tracked {
    timeout: Duration,
    deadline: Instant,
    /// The connection serving the session now, if any.
    conn: Option<(ConnId, OutboundTx)>,
    /// An expiry has been proposed; later heartbeats do not revive the session.
    expiring: bool,
    /// Heard from since the last [`SessionTracker::take_touched`]: a follower passes these
    /// on to the leader, whose deadlines are the ones that count.
    touched: bool,
    /// The leader answered the last round that carried this session's touch "gone" (it
    /// does not know the session, or is expiring it): its heartbeats are not confirmed here
    /// until a later round carries a touch the leader takes.
    refused: bool,
}

impl Tracked {
    /// A session just known here: a whole timeout from `now`, no connection, nothing pending.
    fn fresh(timeout: Duration, now: Instant) -> Tracked {
        Tracked { timeout, deadline: now + timeout, conn: None, expiring: false, touched: false, refused: false }
    }
}

/// One session's liveness here ([`SessionTracker::liveness`]).
#[derive(Clone, Copy, Debug)]
pub struct Liveness {
    /// The connection serving the session on this server, if any.
    pub conn: Option<ConnId>,
    /// When this server last heard from it (or restarted its timeout).
    pub heard: Instant,
    /// An expiry has been proposed.
    pub expiring: bool,
}

/// Every live session's deadline. Heartbeats only touch this map; they never reach the log.
pub struct SessionTracker {
    // A std mutex: touched on every frame, never held across an await.
    inner: Mutex<HashMap<SessionId, Tracked>>,
    /// The sessions whose `touched` flag is set, so draining costs what was touched and not
    /// every session. Locked after `inner`, never before.
    touched: Mutex<Vec<SessionId>>,
    /// 1 while this server may expire sessions: always on a single server; in an ensemble
    /// only on a leader that has applied every earlier entry and restarted every deadline.
    sweeping: AtomicU64,
}

impl Default for SessionTracker {
    fn default() -> Self {
        SessionTracker { inner: Mutex::default(), touched: Mutex::default(), sweeping: AtomicU64::new(1) }
    }
}

impl SessionTracker {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Tracked>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts tracking a session created by apply, with a full timeout ahead of it.
    pub fn register(&self, session: SessionId, timeout: Duration) {
        self.lock().insert(session, Tracked::fresh(timeout, Instant::now()));
    }

    /// Makes the tracked sessions exactly `live` (after the state was replaced by a
    /// snapshot): those not in it have ended, and those new to it start a full timeout.
    pub fn follow(&self, live: Vec<(SessionId, Duration)>) {
        let live: HashMap<SessionId, Duration> = live.into_iter().collect();
        let mut map = self.lock();
        map.retain(|id, t| {
            let keep = live.contains_key(id);
            if !keep {
                if let Some((_, tx)) = t.conn.take() {
                    let _ = tx.send(Outbound::Close(CloseReason::SessionEnded));
                }
            }
            keep
        });
        let now = Instant::now();
        for (id, timeout) in live {
            map.entry(id).or_insert(Tracked::fresh(timeout, now));
        }
    }

    /// Whether this server may expire sessions now.
    pub fn is_sweeping(&self) -> bool {
        self.sweeping.load(Ordering::SeqCst) == 1
    }

    /// Closes every connection serving a session here, for `reason`.
    pub fn close_all(&self, reason: CloseReason) {
        for t in self.lock().values_mut() {
            if let Some((_, tx)) = t.conn.take() {
                let _ = tx.send(Outbound::Close(reason));
            }
        }
    }

    /// Turns the expiry sweep on or off (see the `sweeping` field). Off also forgets every
    /// expiry this server proposed and has not applied: a member that stopped leading decides
    /// no expiry, and must not turn its sessions' resumes and touches away as if it had.
    pub fn set_sweeping(&self, on: bool) {
        self.sweeping.store(u64::from(on), Ordering::SeqCst);
        if !on {
            for t in self.lock().values_mut() {
                t.expiring = false;
            }
        }
    }

    /// Gives every tracked session `timeout + grace` from now, and forgets pending expiry
    /// proposals: a new leader does not know when another member last heard from a client,
    /// so each gets a whole timeout (and `grace`, the time a deposed leader may still have
    /// been acknowledging that client) before this one may expire it.
    pub fn restart_deadlines(&self, grace: Duration) {
        let now = Instant::now();
        for t in self.lock().values_mut() {
            t.deadline = now + t.timeout + grace;
            t.expiring = false;
            // The refusals were another leader's: this one decides now.
            t.refused = false;
        }
    }

    /// The leader acknowledged a round that carried the touches of `touched`, and answered
    /// `gone` of them gone.
    pub fn heard_back(&self, touched: &[SessionId], gone: &[SessionId]) {
        let gone: std::collections::HashSet<&SessionId> = gone.iter().collect();
        let mut map = self.lock();
        for id in touched {
            if let Some(t) = map.get_mut(id) {
                t.refused = gone.contains(id);
            }
        }
    }

    /// Whether a heartbeat of `session` that a round has confirmed may be answered as
    /// confirmed (a pong, or the welcome of a resume): tracked here, not being expired by
    /// this member, and not refused by the leader at the last touch that reached it.
    pub fn may_confirm(&self, session: SessionId) -> bool {
        self.lock().get(&session).is_some_and(|t| !t.expiring && !t.refused)
    }

    /// Sessions heard from since the last call.
    pub fn take_touched(&self) -> Vec<SessionId> {
        let mut map = self.lock();
        let touched = std::mem::take(&mut *self.touched.lock().unwrap_or_else(PoisonError::into_inner));
        for id in &touched {
            if let Some(t) = map.get_mut(id) {
                t.touched = false;
            }
        }
        touched
    }

    /// Sets the session's `touched` flag, listing it if it was clear (under `inner`'s lock).
    fn mark_touched(&self, id: SessionId, t: &mut Tracked) {
        if !std::mem::replace(&mut t.touched, true) {
            self.touched.lock().unwrap_or_else(PoisonError::into_inner).push(id);
        }
    }

    /// Binds the session to a connection, closing the one that served it before. Returns
    /// false when the session is not live here.
    pub fn attach(&self, session: SessionId, conn: ConnId, tx: OutboundTx) -> bool {
        let mut map = self.lock();
        let Some(t) = map.get_mut(&session) else { return false };
        if !self.revive(session, t) {
            return false;
        }
        if let Some((_, old)) = t.conn.replace((conn, tx)) {
            let _ = old.send(Outbound::Close(CloseReason::SessionMoved));
        }
        true
    }

    /// Records a sign of life: any frame on the session's connection, or a touch passed on
    /// by another member. False when the session is not live here (unknown, or expiring).
    pub fn touch(&self, session: SessionId) -> bool {
        self.lock().get_mut(&session).is_some_and(|t| self.revive(session, t))
    }

    /// A touch or an attach of a tracked session: a whole timeout from now, unless it is
    /// expiring. Never shorter: a new leader's grace (`restart_deadlines`) covers touches a
    /// deposed leader may still acknowledge after this one.
    fn revive(&self, id: SessionId, t: &mut Tracked) -> bool {
        if t.expiring {
            return false;
        }
        t.deadline = t.deadline.max(Instant::now() + t.timeout);
        self.mark_touched(id, t);
        true
    }

    /// The connection went away; the session lives on until its deadline.
    pub fn detach(&self, session: SessionId, conn: ConnId) {
        if let Some(t) = self.lock().get_mut(&session) {
            if t.conn.as_ref().is_some_and(|(id, _)| *id == conn) {
                t.conn = None;
            }
        }
    }

    /// Pushes `msg` to the connection serving `session`; false if none does.
    pub fn send(&self, session: SessionId, msg: Outbound) -> bool {
        match self.lock().get(&session).and_then(|t| t.conn.as_ref()) {
            Some((_, tx)) => tx.send(msg),
            None => false,
        }
    }

    /// True while `conn` is the connection serving `session`. A connection that lost its
    /// session to a newer one must not submit more writes for it.
    pub fn is_owner(&self, session: SessionId, conn: ConnId) -> bool {
        self.lock().get(&session).and_then(|t| t.conn.as_ref()).is_some_and(|(id, _)| *id == conn)
    }

    /// True while the session is tracked here and not being expired.
    pub fn is_live(&self, session: SessionId) -> bool {
        self.lock().get(&session).is_some_and(|t| !t.expiring)
    }

    /// The session ended in the state machine: forget it and close its connection.
    pub fn ended(&self, session: SessionId) {
        if let Some(t) = self.lock().remove(&session) {
            if let Some((_, tx)) = t.conn {
                let _ = tx.send(Outbound::Close(CloseReason::SessionEnded));
            }
        }
    }

    /// Sessions whose deadline has passed and whose expiry is not yet proposed; marks them.
    pub fn take_due(&self, now: Instant) -> Vec<SessionId> {
        let mut map = self.lock();
        // Read under the lock: `restart_deadlines` and the switch are ordered with the sweep.
        if self.sweeping.load(Ordering::SeqCst) == 0 {
            return Vec::new();
        }
        let mut due = Vec::new();
        for (id, t) in map.iter_mut() {
            if !t.expiring && t.deadline <= now {
                t.expiring = true;
                due.push(*id);
            }
        }
        due
    }

    /// An expiry proposal failed to be ordered; let the next sweep try again.
    pub fn retry_expiry(&self, session: SessionId) {
        if let Some(t) = self.lock().get_mut(&session) {
            t.expiring = false;
        }
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// What this server knows of each tracked session's liveness, for the console: the
    /// connection serving it here, and when it was last heard from (its deadline less its
    /// timeout; after a restart or a change of leader, when its fresh timeout began).
    pub fn liveness(&self) -> Vec<(SessionId, Liveness)> {
        let map = self.lock();
        map.iter()
            .map(|(id, t)| {
                let heard = t.deadline.checked_sub(t.timeout).unwrap_or(t.deadline);
                (*id, Liveness { conn: t.conn.as_ref().map(|(c, _)| *c), heard, expiring: t.expiring })
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        tracker.restart_deadlines(Duration::from_secs(60));
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
        tracker.set_sweeping(false);
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
        tracker.restart_deadlines(Duration::ZERO);
        assert!(tracker.may_confirm(refused), "a new leader decides for itself");
        assert_eq!(tracker.take_due(Instant::now() + 2 * TIMEOUT).len(), 3);
        assert!(!tracker.may_confirm(taken), "this member is expiring it");
        assert!(!tracker.may_confirm(SessionId(10)), "not tracked here");
    }
}
