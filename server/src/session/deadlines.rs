//! Each live session's deadline on this server, and whether an expiry of it is proposed.

use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;
use ward_proto::SessionId;

struct Deadline {
    timeout: Duration,
    at: Instant,
    /// An expiry has been proposed; later heartbeats do not revive the session.
    expiring: bool,
}

#[derive(Default)]
pub(crate) struct Deadlines(HashMap<SessionId, Deadline>);

impl Deadlines {
    /// A session just known here: a whole timeout from `now`, nothing pending.
    pub(crate) fn register(&mut self, session: SessionId, timeout: Duration, now: Instant) {
        self.0.insert(session, Deadline { timeout, at: now + timeout, expiring: false });
    }

    /// Keeps only the sessions of `live`; returns the ones that ended.
    pub(crate) fn keep(&mut self, live: &HashMap<SessionId, Duration>) -> Vec<SessionId> {
        let ended: Vec<SessionId> = self.0.keys().filter(|id| !live.contains_key(id)).copied().collect();
        for id in &ended {
            self.0.remove(id);
        }
        ended
    }

    pub(crate) fn contains(&self, session: SessionId) -> bool {
        self.0.contains_key(&session)
    }

    pub(crate) fn remove(&mut self, session: SessionId) {
        self.0.remove(&session);
    }

    /// Gives every session `timeout + grace` from `now` and forgets pending expiries.
    pub(crate) fn restart(&mut self, grace: Duration, now: Instant) {
        for d in self.0.values_mut() {
            d.at = now + d.timeout + grace;
            d.expiring = false;
        }
    }

    /// Forgets every expiry proposed and not applied.
    pub(crate) fn forget_expiries(&mut self) {
        for d in self.0.values_mut() {
            d.expiring = false;
        }
    }

    /// A sign of life: a whole timeout from `now`, unless the session is unknown or expiring.
    /// Never shorter: a new leader's grace ([`Deadlines::restart`]) covers touches a deposed
    /// leader may still acknowledge after this one.
    pub(crate) fn revive(&mut self, session: SessionId, now: Instant) -> bool {
        match self.0.get_mut(&session) {
            Some(d) if !d.expiring => {
                d.at = d.at.max(now + d.timeout);
                true
            }
            _ => false,
        }
    }

    /// Tracked and not being expired.
    pub(crate) fn is_live(&self, session: SessionId) -> bool {
        self.0.get(&session).is_some_and(|d| !d.expiring)
    }

    /// Sessions whose deadline has passed and whose expiry is not yet proposed; marks them.
    pub(crate) fn take_due(&mut self, now: Instant) -> Vec<SessionId> {
        let mut due = Vec::new();
        for (id, d) in self.0.iter_mut() {
            if !d.expiring && d.at <= now {
                d.expiring = true;
                due.push(*id);
            }
        }
        due
    }

    /// An expiry proposal failed to be ordered; the next sweep may try again.
    pub(crate) fn retry(&mut self, session: SessionId) {
        if let Some(d) = self.0.get_mut(&session) {
            d.expiring = false;
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Each session with when it was last heard from (its deadline less its timeout) and
    /// whether it is expiring.
    pub(crate) fn heard(&self) -> impl Iterator<Item = (SessionId, Instant, bool)> + '_ {
        self.0.iter().map(|(id, d)| (*id, d.at.checked_sub(d.timeout).unwrap_or(d.at), d.expiring))
    }
}
