//! The queue from a connection's reader to its writer: bounded, one sender, one receiver.
//! (The messages the rest of the server queues for the connection wait in its
//! `ConnOrder`, `conn/ordering.rs`, which also decides when they may go.)
//!
//! A tokio channel did this job, but its cache-padded state and first block of 32 slots
//! cost about 800 bytes on every connection, busy or idle. This is a `VecDeque` under a
//! mutex with a `Notify` each way: an idle queue is about 150 bytes, and a busy one grows
//! only as far as it is used (ward-bench f). The mutex is `crate::sync`'s.

use crate::sync::{Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::Notify;

/// A queue emptied after growing past this many slots gives them back.
const SHRINK_ABOVE: usize = 1024;

/// The state both ends share.
pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    /// Wakes the receiver (an item, or the sender gone). `notify_one` keeps a permit when
    /// nobody waits, so a wake-up between a check and the wait is not lost.
    to_receiver: Notify,
    /// Wakes a sender waiting for room (room, or the receiver gone).
    to_sender: Notify,
    capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    sender_gone: bool,
    receiver_gone: bool,
}

/// The other end is gone.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Closed;

/// Why `try_recv` returned nothing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TryRecvError {
    Empty,
    Closed,
}

/// Why `try_push` did not queue its item, which it gives back.
enum Refused<T> {
    Full(T),
    Closed,
}

impl<T> Queue<T> {
    /// A queue holding at most `capacity` items (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Queue {
            state: Mutex::new(State { items: VecDeque::new(), sender_gone: false, receiver_gone: false }),
            to_receiver: Notify::new(),
            to_sender: Notify::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Every critical section is a push, a pop or a flag: none leaves the state half-done.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn try_push(&self, item: T) -> Result<(), Refused<T>> {
        let mut state = self.lock();
        if state.receiver_gone {
            return Err(Refused::Closed);
        }
        if state.items.len() >= self.capacity {
            return Err(Refused::Full(item));
        }
        state.items.push_back(item);
        drop(state);
        self.to_receiver.notify_one();
        Ok(())
    }

    /// Queues `item`, waiting while the queue is full. Fails if the receiver is gone.
    /// Cancel-safe: if the wait is dropped, the item was not queued.
    pub(crate) async fn push(&self, mut item: T) -> Result<(), Closed> {
        loop {
            match self.try_push(item) {
                Ok(()) => return Ok(()),
                Err(Refused::Closed) => return Err(Closed),
                Err(Refused::Full(back)) => item = back,
            }
            self.to_sender.notified().await;
        }
    }

    /// The next item if one is queued.
    pub(crate) fn try_pop(&self) -> Result<T, TryRecvError> {
        let mut state = self.lock();
        match state.items.pop_front() {
            Some(item) => {
                if state.items.is_empty() && state.items.capacity() > SHRINK_ABOVE {
                    // A burst is over: its room goes back, not kept for the connection's life.
                    state.items = VecDeque::new();
                }
                drop(state);
                self.to_sender.notify_one();
                Ok(item)
            }
            None if state.sender_gone => Err(TryRecvError::Closed),
            None => Err(TryRecvError::Empty),
        }
    }

    /// The next item, waiting for one; `None` once the sender is gone and the queue is empty.
    /// Cancel-safe: an item is only taken by the call that returns it.
    pub(crate) async fn pop(&self) -> Option<T> {
        loop {
            match self.try_pop() {
                Ok(item) => return Some(item),
                Err(TryRecvError::Closed) => return None,
                Err(TryRecvError::Empty) => self.to_receiver.notified().await,
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lock().items.is_empty()
    }

    /// The (only) sender is gone: the receiver gets what is queued, then the end.
    pub(crate) fn close_sender(&self) {
        self.lock().sender_gone = true;
        self.to_receiver.notify_one();
    }

    /// The receiver is gone: senders are refused, and what was queued is dropped now rather
    /// than when the last sender lets go.
    pub(crate) fn close_receiver(&self) {
        let items = {
            let mut state = self.lock();
            state.receiver_gone = true;
            std::mem::take(&mut state.items)
        };
        // Dropped outside the lock: an item's drop may do anything.
        drop(items);
        self.to_sender.notify_one();
    }
}

/// The reader's end of a bounded queue.
pub(crate) struct Sender<T>(Arc<Queue<T>>);

/// The writer's end of a bounded queue.
pub(crate) struct Receiver<T>(Arc<Queue<T>>);

/// A queue holding at most `capacity` items (at least one), with one sender.
pub(crate) fn bounded<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let queue = Arc::new(Queue::new(capacity));
    (Sender(queue.clone()), Receiver(queue))
}

impl<T> Sender<T> {
    /// Queues `item`, waiting while the queue is full; see [`Queue::push`].
    pub(crate) async fn send(&self, item: T) -> Result<(), Closed> {
        self.0.push(item).await
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.0.close_sender();
    }
}

impl<T> Receiver<T> {
    /// See [`Queue::pop`].
    pub(crate) async fn recv(&mut self) -> Option<T> {
        self.0.pop().await
    }

    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.0.try_pop()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.0.close_receiver();
    }
}

// Tokio tests: not under loom, whose mutex works only inside a model.
#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    const LONG: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn items_come_out_in_order_and_a_full_queue_holds_the_sender_back() {
        let (tx, mut rx) = bounded(2);
        tx.send(1).await.expect("room");
        tx.send(2).await.expect("room");
        // Full: the third waits until the receiver takes one.
        assert!(tokio::time::timeout(Duration::from_millis(20), tx.send(3)).await.is_err());
        let sender = tokio::spawn(async move {
            tx.send(3).await.expect("room after a take");
            tx.send(4).await.expect("room after a take");
        });
        let mut got = Vec::new();
        while got.len() < 4 {
            got.push(tokio::time::timeout(LONG, rx.recv()).await.expect("in time").expect("an item"));
        }
        assert_eq!(got, [1, 2, 3, 4], "the item whose send was abandoned must not appear");
        sender.await.expect("sender");
        // The sender is gone: what was queued is still delivered, then the end.
        assert_eq!(rx.recv().await, None);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    }

    #[tokio::test]
    async fn the_receiver_drains_what_was_queued_before_the_sender_went() {
        let (tx, mut rx) = bounded(8);
        tx.send("a").await.expect("room");
        tx.send("b").await.expect("room");
        drop(tx);
        assert_eq!(rx.try_recv(), Ok("a"));
        assert_eq!(rx.recv().await, Some("b"));
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn a_waiting_receiver_wakes_for_an_item_and_for_the_end() {
        let (tx, mut rx) = bounded::<u32>(1);
        let receiver = tokio::spawn(async move { (rx.recv().await, rx.recv().await) });
        tokio::task::yield_now().await;
        tx.send(7).await.expect("room");
        drop(tx);
        let got = tokio::time::timeout(LONG, receiver).await.expect("in time").expect("receiver");
        assert_eq!(got, (Some(7), None));
    }

    #[tokio::test]
    async fn sending_fails_once_the_receiver_is_gone_even_while_waiting_for_room() {
        let (tx, rx) = bounded(1);
        tx.send(1).await.expect("room");
        let waiting = tokio::spawn(async move { tx.send(2).await });
        tokio::task::yield_now().await;
        drop(rx);
        let result = tokio::time::timeout(LONG, waiting).await.expect("in time").expect("sender");
        assert_eq!(result, Err(Closed));
    }
}
