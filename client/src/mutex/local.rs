//! The local queue in front of a distributed lock: which handle of this client holds it,
//! who waits, and what the one server-side contender is doing. Pure state with no I/O, so
//! its transitions can be reasoned about (and model-checked) on their own; `mod.rs` drives
//! it with the network.
//!
//! Invariants: at most one handle holds; a holder exists only while the remote lock is held;
//! the client keeps at most one contender in the server's queue for all its handles.

use std::collections::VecDeque;

/// The server-side contender, as far as the local queue is concerned.
#[derive(Debug)]
pub(crate) enum Remote<R> {
    /// No contender.
    Idle,
    /// Handle `acquirer` is taking the remote lock on behalf of the queue.
    Acquiring(u64),
    /// The remote lock is held (by one of our handles, or about to be handed to one).
    Held(R),
    /// Held, and passing from the holder that left to the next local waiter: nobody is
    /// granted until the server has the new fencing token ([`LocalQueue::handed_off`]).
    HandingOff(R),
}

/// What a handle asking for the lock should do next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// It holds the lock, with this fencing token.
    Granted(u64),
    /// It must take the remote lock for the queue, then poll again.
    Acquire,
    /// Wait for a change and poll again.
    Wait,
}

/// What a holder leaving the lock must do next.
#[derive(Debug)]
pub(crate) enum Exit<R> {
    /// It still holds (reentrant depth was above one).
    Nested,
    /// A local waiter is next: change the fencing token on the server, then call
    /// [`LocalQueue::handed_off`].
    HandOff,
    /// Nobody local waits: release the remote lock.
    Release(R),
}

#[derive(Debug)]
pub(crate) struct LocalQueue<R> {
    /// The holding handle and its reentrant depth.
    holder: Option<(u64, u32)>,
    waiters: VecDeque<u64>,
    remote: Remote<R>,
    /// The current holder's fencing token.
    token: u64,
}

impl<R> Default for LocalQueue<R> {
    fn default() -> Self {
        LocalQueue { holder: None, waiters: VecDeque::new(), remote: Remote::Idle, token: 0 }
    }
}

impl<R> LocalQueue<R> {
    /// `handle` asks for the lock. A handle that already holds it re-enters.
    pub(crate) fn enter(&mut self, handle: u64) -> Step {
        if let Some((h, depth)) = &mut self.holder {
            if *h == handle {
                *depth += 1;
                return Step::Granted(self.token);
            }
        }
        if !self.waiters.contains(&handle) {
            self.waiters.push_back(handle);
        }
        self.poll(handle)
    }

    /// `handle`, waiting, looks again after a change.
    pub(crate) fn poll(&mut self, handle: u64) -> Step {
        match (&self.holder, &self.remote) {
            (Some((h, _)), _) if *h == handle => Step::Granted(self.token),
            (_, Remote::Idle) if self.waiters.contains(&handle) => {
                self.remote = Remote::Acquiring(handle);
                Step::Acquire
            }
            _ => Step::Wait,
        }
    }

    /// The remote lock was granted: the first local waiter holds.
    pub(crate) fn acquired(&mut self, remote: R, token: u64) -> Option<R> {
        self.remote = Remote::Held(remote);
        self.token = token;
        self.grant_next()
    }

    /// Taking the remote lock failed: `acquirer` leaves the queue (it reports the error);
    /// another waiter may try.
    pub(crate) fn acquire_failed(&mut self, acquirer: u64) {
        self.remote = Remote::Idle;
        self.waiters.retain(|&h| h != acquirer);
    }

    /// `handle` gave up waiting (its future was dropped). Returns the remote lock if that
    /// leaves it held by nobody.
    pub(crate) fn cancel(&mut self, handle: u64) -> Option<R> {
        self.waiters.retain(|&h| h != handle);
        if matches!(self.holder, Some((h, _)) if h == handle) {
            // Granted, but gone before it looked: nobody used the grant, so the next waiter
            // takes it as it is (or the remote lock is released).
            self.holder = None;
        }
        match &self.remote {
            // Its own attempt is being dropped with it and releases the contender.
            Remote::Acquiring(h) if *h == handle => {
                self.remote = Remote::Idle;
                None
            }
            _ => self.grant_next(),
        }
    }

    /// The holder `handle` leaves once.
    pub(crate) fn exit(&mut self, handle: u64) -> Exit<R> {
        match &mut self.holder {
            Some((h, depth)) if *h == handle && *depth > 1 => {
                *depth -= 1;
                return Exit::Nested;
            }
            Some((h, _)) if *h == handle => self.holder = None,
            _ => return Exit::Nested,
        }
        match std::mem::replace(&mut self.remote, Remote::Idle) {
            Remote::Held(remote) if !self.waiters.is_empty() => {
                self.remote = Remote::HandingOff(remote);
                Exit::HandOff
            }
            Remote::Held(remote) => Exit::Release(remote),
            other => {
                self.remote = other;
                Exit::Nested
            }
        }
    }

    /// The token changed on the server for the next local holder. Returns the remote lock
    /// if the waiters left meanwhile and it must be released.
    pub(crate) fn handed_off(&mut self, token: u64) -> Option<R> {
        match std::mem::replace(&mut self.remote, Remote::Idle) {
            Remote::HandingOff(remote) => self.remote = Remote::Held(remote),
            // Lost meanwhile (see `remote_lost`): waiters take the remote lock anew.
            other => {
                self.remote = other;
                return None;
            }
        }
        self.token = token;
        self.grant_next()
    }

    /// The remote lock turned out to be lost during a handoff: forget it; a waiter will take
    /// the remote lock anew.
    pub(crate) fn remote_lost(&mut self) -> Option<R> {
        match std::mem::replace(&mut self.remote, Remote::Idle) {
            Remote::Held(remote) | Remote::HandingOff(remote) => Some(remote),
            other => {
                self.remote = other;
                None
            }
        }
    }

    pub(crate) fn remote(&self) -> Option<&R> {
        match &self.remote {
            Remote::Held(r) | Remote::HandingOff(r) => Some(r),
            _ => None,
        }
    }

    /// Hands the held remote lock to the first waiter; if there is none, gives it back for
    /// release. Not while a hand-off is under way: it grants when done.
    fn grant_next(&mut self) -> Option<R> {
        if self.holder.is_some() || !matches!(self.remote, Remote::Held(_)) {
            return None;
        }
        match self.waiters.pop_front() {
            Some(next) => {
                self.holder = Some((next, 1));
                None
            }
            None => self.remote_lost(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reenters_queues_and_hands_off_locally() {
        let mut q = LocalQueue::<&str>::default();
        assert_eq!(q.enter(1), Step::Acquire);
        assert_eq!(q.enter(2), Step::Wait);
        assert!(q.acquired("remote", 10).is_none());
        assert_eq!(q.poll(1), Step::Granted(10));
        assert_eq!(q.enter(1), Step::Granted(10), "reentrant");
        assert!(matches!(q.exit(1), Exit::Nested));
        assert!(matches!(q.exit(1), Exit::HandOff));
        assert_eq!(q.poll(2), Step::Wait, "not before the token changed");
        assert!(q.handed_off(11).is_none());
        assert_eq!(q.poll(2), Step::Granted(11));
        assert!(matches!(q.exit(2), Exit::Release("remote")));
        assert_eq!(q.enter(3), Step::Acquire);
    }

    #[test]
    fn cancelled_acquirer_lets_the_next_waiter_acquire() {
        let mut q = LocalQueue::<&str>::default();
        assert_eq!(q.enter(1), Step::Acquire);
        assert_eq!(q.enter(2), Step::Wait);
        assert!(q.cancel(1).is_none());
        assert_eq!(q.poll(2), Step::Acquire);
        q.acquire_failed(2);
        assert_eq!(q.enter(3), Step::Acquire);
    }

    #[test]
    fn nobody_is_granted_during_a_hand_off_with_the_old_token() {
        let mut q = LocalQueue::<&str>::default();
        assert_eq!(q.enter(1), Step::Acquire);
        assert!(q.acquired("remote", 10).is_none());
        assert_eq!(q.enter(2), Step::Wait);
        assert_eq!(q.enter(3), Step::Wait);
        assert!(matches!(q.exit(1), Exit::HandOff));
        // Handle 3 gives up while the server records the hand-off: 2 must not hold yet.
        assert!(q.cancel(3).is_none());
        assert_eq!(q.poll(2), Step::Wait);
        assert!(q.handed_off(11).is_none());
        assert_eq!(q.poll(2), Step::Granted(11));
    }

    #[test]
    fn a_grant_to_a_handle_that_gave_up_passes_on() {
        let mut q = LocalQueue::<&str>::default();
        assert_eq!(q.enter(1), Step::Acquire);
        assert!(q.acquired("remote", 10).is_none());
        assert_eq!(q.enter(2), Step::Wait);
        assert_eq!(q.enter(3), Step::Wait);
        assert!(matches!(q.exit(1), Exit::HandOff));
        assert!(q.handed_off(11).is_none());
        // 2 holds now, but its `lock()` was dropped before it looked.
        assert!(q.cancel(2).is_none());
        assert_eq!(q.poll(3), Step::Granted(11));
        assert!(matches!(q.exit(3), Exit::Release("remote")));

        assert_eq!(q.enter(4), Step::Acquire);
        assert!(q.acquired("again", 12).is_none());
        assert_eq!(q.cancel(4), Some("again"), "nobody left: the remote lock is released");
    }

    #[test]
    fn remote_granted_after_every_waiter_left_is_released() {
        let mut q = LocalQueue::<&str>::default();
        assert_eq!(q.enter(1), Step::Acquire);
        q.waiters.clear();
        assert_eq!(q.acquired("remote", 5), Some("remote"));
    }
}
