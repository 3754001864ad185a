//! A change signal: shared state changes under its own lock, then [`Signal::notify`]; a
//! waiter takes the [`generation`](Signal::generation) *before* it looks at the state, and
//! waits with [`changed`](Signal::changed) for a generation after it. A change that lands
//! between the look and the wait has already moved the generation on, so the wait returns at
//! once: no wake-up is lost (tokio's `Notify::notified` + `enable` serve the same purpose,
//! but loom cannot see inside them).

use super::{lock, Mutex};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
pub(crate) struct Signal {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    generation: u64,
    /// Waiters since the last notify (a waiter that gave up stays until the next one).
    wakers: Vec<Waker>,
}

impl Signal {
    /// The current generation: take it before looking at the state.
    pub(crate) fn generation(&self) -> u64 {
        lock(&self.inner).generation
    }

    /// Wakes every waiter: call it after changing the state.
    pub(crate) fn notify(&self) {
        let wakers = {
            let mut inner = lock(&self.inner);
            inner.generation = inner.generation.wrapping_add(1);
            std::mem::take(&mut inner.wakers)
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// Completes once the generation is no longer `seen`.
    pub(crate) fn changed(&self, seen: u64) -> Changed<'_> {
        Changed { signal: self, seen }
    }
}

/// See [`Signal::changed`].
pub(crate) struct Changed<'a> {
    signal: &'a Signal,
    seen: u64,
}

impl Future for Changed<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut inner = lock(&self.signal.inner);
        if inner.generation != self.seen {
            return Poll::Ready(());
        }
        if !inner.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            inner.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
