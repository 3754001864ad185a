//! The local queue as the handles share it: [`LocalQueue`] behind a lock, and a [`Signal`]
//! that every transition a waiting handle may care about notifies after it. A waiting handle
//! takes the signal's generation before it looks at the queue and waits for a later one, so a
//! holder that leaves between the look and the wait still wakes it.
//!
//! No I/O here: taking the remote lock is the caller's `acquire`, and `mod.rs` does the
//! network side of leaving (release, hand-off); the loom models drive this same type.

use super::local::{Exit, LocalQueue, Step};
use crate::sync::{lock, Mutex, MutexGuard, Signal};
use std::future::Future;

pub(crate) struct Queue<R> {
    state: Mutex<LocalQueue<R>>,
    changed: Signal,
}

impl<R> Default for Queue<R> {
    fn default() -> Self {
        Queue { state: Mutex::new(LocalQueue::default()), changed: Signal::default() }
    }
}

impl<R> Queue<R> {
    fn state(&self) -> MutexGuard<'_, LocalQueue<R>> {
        lock(&self.state)
    }

    /// Waits until `handle` holds the lock and returns the fencing token it holds it with.
    /// When the queue needs the remote lock taken, this handle takes it with `acquire`
    /// (remote guard and its token) for everyone. Dropping the future leaves the queue.
    pub(crate) async fn hold<E, F, Fut>(&self, handle: u64, mut acquire: F) -> Result<u64, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(R, u64), E>>,
    {
        let mut waiting = Waiting { queue: self, handle, armed: true };
        let mut first = true;
        loop {
            // Before looking: a change after the look moves the generation past this.
            let seen = self.changed.generation();
            let step = {
                let mut state = self.state();
                if std::mem::take(&mut first) {
                    state.enter(handle)
                } else {
                    state.poll(handle)
                }
            };
            match step {
                Step::Granted(token) => {
                    waiting.armed = false;
                    return Ok(token);
                }
                Step::Acquire => match acquire().await {
                    // An orphan (every waiter left meanwhile) is released by its own drop.
                    Ok((remote, token)) => drop(self.acquired(remote, token)),
                    Err(e) => {
                        waiting.armed = false;
                        self.acquire_failed(handle);
                        return Err(e);
                    }
                },
                Step::Wait => self.changed.changed(seen).await,
            }
        }
    }

    fn acquired(&self, remote: R, token: u64) -> Option<R> {
        let orphan = self.state().acquired(remote, token);
        self.changed.notify();
        orphan
    }

    fn acquire_failed(&self, handle: u64) {
        self.state().acquire_failed(handle);
        self.changed.notify();
    }

    /// The holder `handle` leaves once (see [`LocalQueue::exit`]).
    pub(crate) fn exit(&self, handle: u64) -> Exit<R> {
        self.state().exit(handle)
    }

    /// See [`LocalQueue::handed_off`]: returns the remote lock if it must be released.
    pub(crate) fn handed_off(&self, token: u64) -> Option<R> {
        let orphan = self.state().handed_off(token);
        self.changed.notify();
        orphan
    }

    /// See [`LocalQueue::remote_lost`]: waiters start over.
    pub(crate) fn remote_lost(&self) -> Option<R> {
        let remote = self.state().remote_lost();
        self.changed.notify();
        remote
    }

    /// `f` of the remote lock, if it is held.
    pub(crate) fn with_remote<T>(&self, f: impl FnOnce(&R) -> T) -> Option<T> {
        self.state().remote().map(f)
    }
}

/// Takes a waiting handle out of the queue if its `hold` future is dropped.
struct Waiting<'a, R> {
    queue: &'a Queue<R>,
    handle: u64,
    armed: bool,
}

impl<R> Drop for Waiting<'_, R> {
    fn drop(&mut self) {
        if self.armed {
            let orphan = self.queue.state().cancel(self.handle);
            self.queue.changed.notify();
            // Released in the background by its own drop.
            drop(orphan);
        }
    }
}
