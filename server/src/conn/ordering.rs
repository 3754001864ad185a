//! The order of everything a connection sends, as one value: [`ConnOrder`]. It takes no
//! lock, awaits nothing and touches no socket; the connection's shared state
//! (`crate::conn::outbox::Outbox`) keeps it under a mutex, and the reader, the writer and the
//! code that queues messages (apply firing watches, lock grants, session closes) each call
//! its methods there. What it decides is tested here alone, and with those callers racing
//! in `crate::loom_tests`.
//!
//! # The rules
//!
//! A connection carries two streams: replies to the client's requests, in the order the
//! requests came (items, `conn/writer.rs`), and messages the server sends on its own (watch
//! events, lock grants, closes), numbered 1, 2, … in the order they were queued.
//!
//! 1. **Replies leave in request order** (G2). The writer completes items strictly in
//!    arrival order; the item queue is FIFO.
//! 2. **A read waits for the session's earlier writes.** The reader numbers each write it
//!    submits ([`submit_write`](ConnOrder::submit_write)); the writer reports a write
//!    applied once its outcome is in ([`applied`](ConnOrder::applied)). A read runs only
//!    when every write numbered so far is applied ([`reads_may_run`](ConnOrder::reads_may_run)),
//!    so it sees exactly the session's earlier writes (FIFO per session).
//! 3. **A read's reply goes out after the messages its view could show** (G6). The read
//!    takes its fence under the state lock ([`fence`](ConnOrder::fence)): the number of
//!    messages queued so far. Apply queues its events under the state write lock, so every
//!    event for a change the read saw is within that number, and the writer sends messages
//!    up to it before the reply ([`due_before_reply`](ConnOrder::due_before_reply)).
//! 4. **Fences: nothing the read did not see goes out before its reply.** A message
//!    numbered beyond the oldest unanswered read's fence reports a change that read did not
//!    see; it waits until that read's reply is out ([`replied`](ConnOrder::replied)), or a
//!    client that arms its watch on the reply (every ZooKeeper client) would get the event
//!    before the watch. [`next_to_send`](ConnOrder::next_to_send) says no while it waits.
//! 5. **Messages keep their order.** Messages leave in the order queued: one held back by a
//!    fence holds back every later one, and a read's catching up (rule 3) takes them from
//!    the front.
//! 6. **A write's reply follows the messages queued before its outcome.** Once a write is
//!    applied, every message queued by then is at least as old as that apply; the writer
//!    sends those the fences allow (rule 4) before the write's reply. Events and replies thus
//!    interleave in zxid order.
//! 7. **The writer's end is final.** Once the writer is gone ([`writer_gone`](ConnOrder::writer_gone)),
//!    nothing more is queued, what waited is dropped, and a read waiting for writes learns
//!    it will wait forever.
//!
//! A close is a message like the others: it takes its turn (rule 5), so it may wait behind a
//! message a fence holds back. The read owning that fence has only applied writes ahead of
//! it (rule 2), so that wait is only for replies already due.
//!
//! Messages are counted from 1; `sent` are out, `waiting` queued behind them, so message
//! `sent + 1` is the next. Fences are counts of messages queued when a read looked.

use std::collections::VecDeque;

/// A queue emptied after growing past this many slots gives them back.
const SHRINK_ABOVE: usize = 1024;

/// Whether a read may look at the state yet (rule 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reads {
    /// Every write submitted so far is applied.
    MayRun,
    /// Some write submitted before the read is still to be applied.
    Wait,
    /// The writer is gone with writes unapplied: the read would wait forever.
    WriterGone,
}

/// One connection's ordering state (see the module's rules). `M` is what the server queues
/// for the client (`crate::conn::Outbound`; tests use anything).
#[derive(Debug)]
pub(crate) struct ConnOrder<M> {
    /// Writes the reader has numbered (rule 2).
    submitted: u64,
    /// Writes the writer has reported applied.
    applied: u64,
    /// Messages handed to the writer so far: message `sent + 1` is next.
    sent: u64,
    /// Messages queued and not yet handed to the writer, oldest first.
    waiting: VecDeque<M>,
    /// The fence of every read that has looked at the state and not been answered yet,
    /// oldest first (rule 4).
    fences: VecDeque<u64>,
    writer_gone: bool,
}

impl<M> Default for ConnOrder<M> {
    fn default() -> Self {
        ConnOrder {
            submitted: 0,
            applied: 0,
            sent: 0,
            waiting: VecDeque::new(),
            fences: VecDeque::new(),
            writer_gone: false,
        }
    }
}

impl<M> ConnOrder<M> {
    /// Queues `msg` as the next message; false (and `msg` dropped) once the writer is gone.
    pub(crate) fn push(&mut self, msg: M) -> bool {
        if self.writer_gone {
            return false;
        }
        self.waiting.push_back(msg);
        true
    }

    /// How many messages have been queued so far.
    pub(crate) fn queued(&self) -> u64 {
        self.sent + self.waiting.len() as u64
    }

    /// Numbers the next write the reader submits (rule 2).
    pub(crate) fn submit_write(&mut self) -> u64 {
        self.submitted += 1;
        self.submitted
    }

    /// May a read look at the state now (rule 2)?
    pub(crate) fn reads_may_run(&self) -> Reads {
        match (self.applied >= self.submitted, self.writer_gone) {
            (true, _) => Reads::MayRun,
            (false, false) => Reads::Wait,
            (false, true) => Reads::WriterGone,
        }
    }

    /// A read looks at the state now: records and returns its fence, the number of messages
    /// queued so far (rules 3 and 4). Called under the state lock, so no event can be
    /// queued between the look and the count.
    pub(crate) fn fence(&mut self) -> u64 {
        let fence = self.queued();
        self.fences.push_back(fence);
        fence
    }

    /// The writer has the outcome of write `number`: reads after it may run (rule 2).
    pub(crate) fn applied(&mut self, number: u64) {
        self.applied = self.applied.max(number);
    }

    /// The next message, if one is queued and no unanswered read's fence holds it back
    /// (rules 4 and 5).
    pub(crate) fn next_to_send(&mut self) -> Option<M> {
        let next = self.sent + 1;
        if self.fences.front().is_some_and(|&fence| next > fence) {
            return None;
        }
        self.take()
    }

    /// The next message the head read's reply must follow, if any is left: those numbered
    /// up to `fence`, the read's own (rule 3). `None`: the reply may go.
    pub(crate) fn due_before_reply(&mut self, fence: u64) -> Option<M> {
        if self.sent >= fence {
            return None;
        }
        self.take()
    }

    /// The head read's reply is out: its fence no longer holds messages back (rule 4).
    pub(crate) fn replied(&mut self) {
        self.fences.pop_front();
    }

    /// True if [`next_to_send`](Self::next_to_send) would give a message.
    pub(crate) fn has_sendable(&self) -> bool {
        !self.waiting.is_empty() && self.fences.front().is_none_or(|&fence| self.sent < fence)
    }

    /// The writer is gone (rule 7): refuses every later message, and gives back those that
    /// waited, for the caller to drop outside its lock.
    pub(crate) fn writer_gone(&mut self) -> VecDeque<M> {
        self.writer_gone = true;
        std::mem::take(&mut self.waiting)
    }

    fn take(&mut self) -> Option<M> {
        let msg = self.waiting.pop_front()?;
        self.sent += 1;
        if self.waiting.is_empty() && self.waiting.capacity() > SHRINK_ABOVE {
            // A burst is over: its room goes back, not kept for the connection's life.
            self.waiting = VecDeque::new();
        }
        Some(msg)
    }
}

#[cfg(test)]
#[path = "ordering_tests.rs"]
mod tests;
