//! Idle connections park: they keep their socket and their order, but not the futures of
//! their reader and writer, which are most of what a connection costs (ward-bench f).
//!
//! A connection's task runs its reader and writer as one boxed future (the *active* part,
//! `conn/session_conn.rs`). Each says when it waits with nothing to do ([`Idle`]): the reader for
//! its socket to become readable with no part of a frame buffered, the writer for a message
//! or an item with nothing queued, sendable or unflushed. When both wait so, nothing is in
//! flight: every request read has been answered and written. [`until_idle`] then gives the
//! active part up (the box is freed), and the task waits in [`parked`] for what would have
//! woken either: the socket readable, a message the writer may send, or the connection's
//! token. It then builds a new active part, which finds everything where the old one left
//! it: the waits both gave up are cancel-safe (a readiness, a message only taken by the
//! call that returns it, an empty queue) and the reader and writer keep nothing of their
//! own between frames.
//!
//! A TLS connection never parks: its reader cannot wait for readability through tokio's
//! `split`, so it never says it is idle.

use crate::conn::outbox::OutboxRx;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use tokio::net::TcpStream;

/// Whether the reader and the writer of one connection wait with nothing to do. Both run in
/// the connection's task, so when its active future returns `Pending` these say exactly where
/// each of them stopped.
#[derive(Debug, Default)]
pub(crate) struct Idle {
    reader: AtomicBool,
    writer: AtomicBool,
}

/// Set while its wait lasts; cleared when the wait ends or is given up.
#[must_use]
pub(crate) struct Mark<'a>(&'a AtomicBool);

impl Idle {
    /// The reader waits for a new frame, with none of one buffered.
    pub(crate) fn reader(&self) -> Mark<'_> {
        Mark::set(&self.reader)
    }

    /// The writer waits for work, with nothing queued, sendable or left unflushed.
    pub(crate) fn writer(&self) -> Mark<'_> {
        Mark::set(&self.writer)
    }

    fn both(&self) -> bool {
        self.reader.load(Ordering::Relaxed) && self.writer.load(Ordering::Relaxed)
    }
}

impl<'a> Mark<'a> {
    fn set(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Relaxed);
        Mark(flag)
    }

    /// For a wait that is idle at some polls and not at others.
    pub(crate) fn set_to(&self, idle: bool) {
        self.0.store(idle, Ordering::Relaxed);
    }
}

impl Drop for Mark<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// How the active part stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The connection is over.
    Ended,
    /// Reader and writer both wait with nothing to do: the active part may be dropped.
    Idle,
}

/// Drives `active` until it ends, or until it waits and `idle` says both its halves are idle.
pub(crate) async fn until_idle<F: Future>(mut active: Pin<&mut F>, idle: &Idle) -> Stopped {
    poll_fn(|cx| match active.as_mut().poll(cx) {
        Poll::Ready(_) => Poll::Ready(Stopped::Ended),
        Poll::Pending if idle.both() => Poll::Ready(Stopped::Idle),
        Poll::Pending => Poll::Pending,
    })
    .await
}

/// Counts a connection as parked while it lives (`ward_connections_parked`).
struct Counted<'a>(&'a AtomicU64);

impl<'a> Counted<'a> {
    fn enter(parked: &'a AtomicU64) -> Self {
        parked.fetch_add(1, Ordering::Relaxed);
        Counted(parked)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A parked connection's wait: until its socket is readable (a request, or the client's
/// end), or its outbox wakes it: a message the writer may send (an event, a lock grant, a
/// close), or the connection's token cancelled; counted in `parked_now` meanwhile. `socket` is `None` only for a connection
/// that cannot park (TLS), which returns at once. The socket and the outbox keep the
/// wakers, so the wait itself holds nothing but its references: the token is not waited on
/// directly (its wait is the largest of futures), which is why whoever cancels it wakes
/// the outbox too (`Outbox::wake_parked`).
pub(crate) async fn parked(socket: Option<&TcpStream>, out: &OutboxRx, parked_now: &AtomicU64) {
    let Some(socket) = socket else { return };
    let _counted = Counted::enter(parked_now);
    poll_fn(|cx| {
        // Both register their wakers; an error on the socket shows on the read that follows.
        let woken = [out.poll_wake(cx).is_ready(), socket.poll_read_ready(cx).is_ready()];
        if woken.contains(&true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(all(test, not(ward_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// An active part that takes `steps` polls to end, and says it is idle (both halves) on
    /// the polls `idle_at` names; every poll wakes itself again.
    async fn active(idle: &Idle, polls: &AtomicUsize, idle_at: &[usize], steps: usize) {
        loop {
            let n = polls.fetch_add(1, Ordering::Relaxed) + 1;
            if n >= steps {
                return;
            }
            let (_r, _w) = if idle_at.contains(&n) { (Some(idle.reader()), Some(idle.writer())) } else { (None, None) };
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn an_active_part_is_given_up_only_when_both_halves_are_idle() {
        let idle = Idle::default();
        let polls = AtomicUsize::new(0);
        let mut fut = Box::pin(active(&idle, &polls, &[3], 10));
        assert_eq!(until_idle(fut.as_mut(), &idle).await, Stopped::Idle);
        assert_eq!(polls.load(Ordering::Relaxed), 3, "given up at the first poll both were idle");
        drop(fut);
        assert!(!idle.both(), "the marks go with the future given up");
        let polls = AtomicUsize::new(0);
        let mut fut = Box::pin(active(&idle, &polls, &[], 5));
        assert_eq!(until_idle(fut.as_mut(), &idle).await, Stopped::Ended);
        let _reader = idle.reader();
        assert!(!idle.both(), "one half idle is not enough");
    }
}
