//! Held locks for plain threads: [`LockGuard`] (every kind of lock: exclusive, read,
//! semaphore permit, multi-lock) and the reentrant [`Mutex`] with its [`MutexGuard`].
//!
//! Dropping a guard never waits for the server. The async guard inside hands the release
//! to the connection task, which sends it at once, ahead of anything the session sends
//! afterwards, and again after every reconnect until the server acknowledges it. A drop
//! that waited would hold the dropping thread for as long as the server is unreachable (up
//! to the session timeout, or longer while a durable server restarts); `unlock` is there
//! for a caller that wants to wait and to hear about errors.

use super::lost::LostWatch;
use super::Shared;
use crate::error::Result;
use crate::Fence;
use std::sync::{mpsc, Arc};

/// A held lock. Dropping it releases the lock in the background: `drop` returns at once,
/// also while the server is unreachable or a panic unwinds, and the release reaches the
/// server when it is back (within the session). [`unlock`](Self::unlock) waits for it.
#[must_use = "dropping the guard releases the lock"]
pub struct LockGuard {
    // Dropped in this order: the release is queued and the loss watchers end before the
    // handle goes, which, if it is the client's last, closes the session.
    guard: crate::LockGuard,
    lost: LostWatch,
    shared: Arc<Shared>,
}

impl LockGuard {
    pub(super) fn new(shared: Arc<Shared>, guard: crate::LockGuard) -> LockGuard {
        let lost = LostWatch::new(guard.validity().clone());
        LockGuard { guard, lost, shared }
    }

    pub fn fencing_token(&self) -> u64 {
        self.guard.fencing_token()
    }

    pub fn path(&self) -> &str {
        self.guard.path()
    }

    pub fn fence(&self) -> Fence {
        self.guard.fence()
    }

    /// True once the lock can no longer be trusted (see [`crate::LockGuard::lost`]).
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Blocks until the lock is lost.
    pub fn wait_lost(&self) {
        self.shared.rt().block_on(self.guard.lost())
    }

    /// Tells of the loss without a thread of the caller's waiting for it: the receiver gets
    /// one `()` once the lock is lost (as [`is_lost`](Self::is_lost) turns true; at once if
    /// it already has), and is disconnected without a message if the guard is released
    /// first. Check it with `try_recv` or `recv_timeout` between steps of the work, or hand
    /// it to whatever the thread already waits on. Each call gives a receiver of its own.
    pub fn lost_signal(&self) -> mpsc::Receiver<()> {
        self.lost.signal(self.shared.rt())
    }

    /// Runs `callback` once the lock is lost (at once if it already is), and never if the
    /// guard is released first. It runs on a thread of the client's runtime set aside for
    /// blocking work, so it may block and may call this client; stop the work the lock
    /// protects from there (set a flag, close a connection, signal a process).
    pub fn on_lost(&self, callback: impl FnOnce() + Send + 'static) {
        self.lost.on_lost(self.shared.rt(), callback)
    }

    /// Releases the lock and blocks until the server has applied the release (or the
    /// session is over, which releases it too), and says if that failed; a dropped guard
    /// has nobody to tell.
    pub fn unlock(self) -> Result<()> {
        let LockGuard { guard, lost, shared } = self;
        // The release is the caller's own doing: no loss to tell of from here on.
        drop(lost);
        shared.rt().block_on(guard.unlock())
    }
}

/// A blocking reentrant handle (see [`crate::Mutex`]).
pub struct Mutex {
    shared: Arc<Shared>,
    inner: crate::Mutex,
}

impl Mutex {
    pub(super) fn new(shared: Arc<Shared>, inner: crate::Mutex) -> Mutex {
        Mutex { shared, inner }
    }

    /// Blocks until this handle holds the lock (at once, if it already does).
    pub fn lock(&self) -> Result<MutexGuard> {
        let inner = self.shared.rt().block_on(self.inner.lock())?;
        let lost = LostWatch::new(inner.validity().clone());
        Ok(MutexGuard { inner, lost, shared: self.shared.clone() })
    }
}

/// A held blocking [`Mutex`]. Dropping it leaves the lock in the background, as a
/// [`LockGuard`] does; [`unlock`](Self::unlock) waits.
#[must_use = "dropping the guard leaves the lock"]
pub struct MutexGuard {
    // Dropped in this order, as a `LockGuard`'s fields are.
    inner: crate::MutexGuard,
    lost: LostWatch,
    shared: Arc<Shared>,
}

impl MutexGuard {
    pub fn fencing_token(&self) -> u64 {
        self.inner.fencing_token()
    }

    pub fn is_lost(&self) -> bool {
        self.inner.is_lost()
    }

    /// Blocks until the lock is lost.
    pub fn wait_lost(&self) {
        self.shared.rt().block_on(self.inner.lost())
    }

    /// See [`LockGuard::lost_signal`].
    pub fn lost_signal(&self) -> mpsc::Receiver<()> {
        self.lost.signal(self.shared.rt())
    }

    /// See [`LockGuard::on_lost`].
    pub fn on_lost(&self, callback: impl FnOnce() + Send + 'static) {
        self.lost.on_lost(self.shared.rt(), callback)
    }

    /// Leaves the lock once and blocks until the next local holder has it or the server
    /// has the release (see [`crate::MutexGuard::unlock`]).
    pub fn unlock(self) -> Result<()> {
        let MutexGuard { inner, lost, shared } = self;
        drop(lost);
        shared.rt().block_on(inner.unlock())
    }
}
