//! Holding back a batch that nobody waits for ([`crate::replication::Replication::submit_waiting`]).
//!
//! The proposer keeps one batch at the disk at a time, so a batch sent alone takes a sync of
//! its own and makes whatever arrives next wait for that sync. Under a contended lock with awaited
//! releases, the holder that just released queues again at the moment its successor's release
//! is on its way: sent alone, that re-queue's sync sits in front of the release, and each
//! handoff costs two syncs in sequence. A re-queue will wait for the grant anyway, so while
//! everything held is of that kind the proposer holds it back, up to [`BatchLimits::defer`],
//! and sends it with the next command that someone does wait for. Nothing is reordered: a
//! held command only waits, and a command submitted after it goes in the same batch or a
//! later one.
//!
//! [`BatchLimits::defer`]: super::BatchLimits::defer

use tokio::time::Instant;

/// Whether what the proposer holds may wait, and until when.
#[derive(Debug, Default)]
pub(super) struct Deferral {
    /// Set while everything held was submitted as waiting: when the first of it must go.
    until: Option<Instant>,
}

impl Deferral {
    /// A proposal was held; `first`: nothing was held before it.
    pub(super) fn held(&mut self, waiting: bool, first: bool, now: Instant, defer: std::time::Duration) {
        match (waiting, first) {
            (false, _) => self.until = None,
            (true, true) => self.until = (!defer.is_zero()).then(|| now + defer),
            // Joins what is held: waits no longer than it, and not at all if it does not.
            (true, false) => {}
        }
    }

    /// Whether the held proposals may go now.
    pub(super) fn ready(&self, now: Instant) -> bool {
        self.timer(now).is_none()
    }

    /// When to wake to send held proposals that wait, if that is still ahead. A deadline that
    /// has passed needs no timer (what is held goes at the next chance the disk and openraft
    /// give), and a timer in the past would fire at once, again and again: the proposer
    /// would spin.
    pub(super) fn timer(&self, now: Instant) -> Option<Instant> {
        self.until.filter(|until| *until > now)
    }

    /// A batch was sent (or forwarded): whatever is still held goes as soon as the disk allows.
    pub(super) fn sent(&mut self) {
        self.until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const D: Duration = Duration::from_millis(5);

    #[test]
    fn waiting_proposals_wait_until_their_deadline_or_a_proposal_that_does_not() {
        let t0 = Instant::now();
        let mut d = Deferral::default();
        assert!(d.ready(t0), "nothing held: nothing to wait for");
        d.held(true, true, t0, D);
        assert!(!d.ready(t0), "a waiting proposal alone waits");
        assert!(d.ready(t0 + D), "until its deadline");
        d.held(true, false, t0 + Duration::from_millis(3), D);
        assert_eq!(d.timer(t0), Some(t0 + D), "a second waiting one waits no longer than the first");
        assert_eq!(d.timer(t0 + D), None, "a deadline that has passed arms no timer");
        d.held(false, false, t0 + Duration::from_millis(4), D);
        assert!(d.ready(t0), "a proposal someone waits for sends them all");
        d.held(true, false, t0, D);
        assert!(d.ready(t0), "a waiting one behind it does not hold it back");
        d.sent();
        d.held(true, true, t0, Duration::ZERO);
        assert!(d.ready(t0), "no deferral configured");
    }
}
