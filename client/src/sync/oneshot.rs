//! A one-shot channel: one value from a sender to a receiver that may wait for it as a
//! future. The connection task completes requests, watches and lock grants through it.
//!
//! One mutex guards the slot, the receiver's waker and who is still there: a send stores the
//! value and takes the waker under the lock and wakes after it, and a poll looks for the value
//! and leaves its waker under the same lock, so a send cannot fall between the two.

use super::{lock, Arc, Mutex};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    /// The sender sent or was dropped: nothing more will come.
    sender_done: bool,
    receiver_gone: bool,
}

type Shared<T> = Arc<Mutex<Slot<T>>>;

/// Sends the one value.
pub(crate) struct Sender<T> {
    shared: Shared<T>,
}

/// Receives it: as a future, or with [`try_recv`](Receiver::try_recv).
pub(crate) struct Receiver<T> {
    shared: Shared<T>,
}

/// The sender went away without sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecvError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TryRecvError {
    /// Nothing yet.
    Empty,
    /// Nothing will come: the sender went away, or the value was already taken.
    Closed,
}

pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Mutex::new(Slot { value: None, waker: None, sender_done: false, receiver_gone: false }));
    (Sender { shared: shared.clone() }, Receiver { shared })
}

impl<T> Sender<T> {
    /// Delivers `value`; gives it back if the receiver is gone.
    pub(crate) fn send(self, value: T) -> Result<(), T> {
        let waker = {
            let mut slot = lock(&self.shared);
            if slot.receiver_gone {
                return Err(value);
            }
            slot.value = Some(value);
            slot.sender_done = true;
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// True once the receiver is gone: a send would be thrown away.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.shared).receiver_gone
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut slot = lock(&self.shared);
            slot.sender_done = true;
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Receiver<T> {
    /// The value if it has come, without waiting.
    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut slot = lock(&self.shared);
        match slot.value.take() {
            Some(value) => Ok(value),
            None if slot.sender_done => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = lock(&self.shared);
        if let Some(value) = slot.value.take() {
            return Poll::Ready(Ok(value));
        }
        if slot.sender_done {
            return Poll::Ready(Err(RecvError));
        }
        match &mut slot.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            waker => *waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // The value, if any, is dropped after the lock is released.
        let _value = {
            let mut slot = lock(&self.shared);
            slot.receiver_gone = true;
            slot.waker = None;
            slot.value.take()
        };
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Sender").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Receiver").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn delivers_once_and_reports_a_vanished_side() {
        let (tx, rx) = channel::<u32>();
        tx.send(7).expect("receiver is there");
        assert_eq!(rx.await, Ok(7));

        let (tx, mut rx) = channel::<u32>();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
        assert_eq!(rx.await, Err(RecvError));

        let (tx, rx) = channel::<u32>();
        assert!(!tx.is_closed());
        drop(rx);
        assert!(tx.is_closed());
        assert_eq!(tx.send(1), Err(1));
    }

    #[tokio::test]
    async fn wakes_a_waiting_receiver() {
        let (tx, rx) = channel::<&str>();
        let waiter = tokio::spawn(rx);
        tokio::task::yield_now().await;
        tx.send("done").expect("receiver is there");
        assert_eq!(waiter.await.expect("join"), Ok("done"));
    }
}
