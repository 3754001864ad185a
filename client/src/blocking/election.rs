//! Leader election for plain threads: [`Election`], [`Leadership`], and the [`Observer`]
//! that follows who leads, as etcd's `Observe` does.

use super::lost::LostWatch;
use super::Shared;
use crate::error::Result;
use crate::{Acl, Leader};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// A blocking view of an [`crate::Election`].
pub struct Election {
    shared: Arc<Shared>,
    inner: crate::Election,
}

impl Election {
    pub(super) fn new(shared: Arc<Shared>, inner: crate::Election) -> Election {
        Election { shared, inner }
    }

    /// See [`crate::Election::with_acl`].
    pub fn with_acl(self, acl: Vec<Acl>) -> Election {
        Election { shared: self.shared, inner: self.inner.with_acl(acl) }
    }

    /// Blocks until this candidate leads.
    pub fn campaign(&self, data: &[u8]) -> Result<Leadership> {
        let inner = self.shared.rt().block_on(self.inner.campaign(data))?;
        let lost = LostWatch::new(inner.validity().clone());
        Ok(Leadership { inner, lost, shared: self.shared.clone() })
    }

    pub fn leader(&self) -> Result<Option<Leader>> {
        self.shared.rt().block_on(self.inner.leader())
    }

    /// Follows leader changes without campaigning (see [`crate::Election::observe`]).
    pub fn observe(&self) -> Observer {
        Observer { shared: self.shared.clone(), inner: self.inner.observe(), ended: false }
    }
}

/// Reports each change of leader, including to "no leader": the blocking
/// [`crate::Observer`]. It is also an iterator over the reports, for a thread that does
/// nothing but follow the leader.
pub struct Observer {
    shared: Arc<Shared>,
    inner: crate::Observer,
    /// The iteration has yielded an error. Going on would spin on the same error (every
    /// call fails at once while disconnected, and for good once the session is over).
    ended: bool,
}

impl Observer {
    /// The first call returns the current leader (`None`: nobody leads); later calls block
    /// until the leader changes and return the new one. As with the async observer, an
    /// error (the connection lost, the session over) is returned as it happens; the
    /// observer can be asked again once the client is connected.
    pub fn next_leader(&mut self) -> Result<Option<Leader>> {
        self.shared.rt().block_on(self.inner.next())
    }

    /// [`next_leader`](Self::next_leader), waiting at most `timeout`: `Ok(None)` if the
    /// leader did not change meanwhile. Nothing is missed by giving up: the next call
    /// compares with the leader last returned.
    pub fn next_leader_timeout(&mut self, timeout: Duration) -> Result<Option<Option<Leader>>> {
        let inner = &mut self.inner;
        match self.shared.rt().block_on(async { tokio::time::timeout(timeout, inner.next()).await }) {
            Ok(leader) => leader.map(Some),
            Err(_elapsed) => Ok(None),
        }
    }
}

/// Each report of [`Observer::next_leader`] in turn, blocking for each. The iteration ends
/// after the first error, which it yields.
impl Iterator for Observer {
    type Item = Result<Option<Leader>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let report = self.next_leader();
        self.ended = report.is_err();
        Some(report)
    }
}

/// Being the leader. Dropping it resigns in the background, as dropping a
/// [`LockGuard`](super::LockGuard) releases; [`resign`](Self::resign) waits.
#[must_use = "dropping the leadership resigns"]
pub struct Leadership {
    // Dropped in this order, as a `LockGuard`'s fields are.
    inner: crate::Leadership,
    lost: LostWatch,
    shared: Arc<Shared>,
}

impl Leadership {
    pub fn fencing_token(&self) -> u64 {
        self.inner.fencing_token()
    }

    pub fn is_lost(&self) -> bool {
        self.inner.is_lost()
    }

    pub fn wait_lost(&self) {
        self.shared.rt().block_on(self.inner.lost())
    }

    /// See [`LockGuard::lost_signal`](super::LockGuard::lost_signal).
    pub fn lost_signal(&self) -> mpsc::Receiver<()> {
        self.lost.signal(self.shared.rt())
    }

    /// See [`LockGuard::on_lost`](super::LockGuard::on_lost).
    pub fn on_lost(&self, callback: impl FnOnce() + Send + 'static) {
        self.lost.on_lost(self.shared.rt(), callback)
    }

    /// Steps down and blocks until the next candidate can take over.
    pub fn resign(self) -> Result<()> {
        let Leadership { inner, lost, shared } = self;
        drop(lost);
        shared.rt().block_on(inner.resign())
    }
}
