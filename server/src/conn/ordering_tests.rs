//! [`ConnOrder`] alone: each rule of `ordering.rs`, and the interleavings that make them
//! necessary, played as the reader, the writer and apply would call it.

use super::*;

/// What the writer does for a read's item: the messages due first, then the reply.
fn answer_read(order: &mut ConnOrder<&'static str>, fence: u64, out: &mut Vec<&'static str>) {
    while let Some(msg) = order.due_before_reply(fence) {
        out.push(msg);
    }
    out.push("reply");
    order.replied();
}

/// What the writer does when no item is ready: every message it may send.
fn send_free(order: &mut ConnOrder<&'static str>, out: &mut Vec<&'static str>) {
    while let Some(msg) = order.next_to_send() {
        out.push(msg);
    }
}

/// Rule 2 (G2, FIFO per session): a read waits for the writes submitted before it, and for
/// no later one.
#[test]
fn a_read_waits_for_the_writes_before_it_and_no_longer() {
    let mut order = ConnOrder::<&str>::default();
    assert_eq!(order.reads_may_run(), Reads::MayRun, "nothing submitted yet");
    let (first, second) = (order.submit_write(), order.submit_write());
    assert_eq!((first, second), (1, 2));
    order.applied(first);
    assert_eq!(order.reads_may_run(), Reads::Wait);
    order.applied(second);
    assert_eq!(order.reads_may_run(), Reads::MayRun);
    order.writer_gone();
    assert_eq!(order.reads_may_run(), Reads::MayRun, "applied stays applied after the writer is gone");
}

/// Rule 7: a read waiting for a write learns that the writer is gone.
#[test]
fn a_waiting_read_learns_that_the_writer_is_gone() {
    let mut order = ConnOrder::<&str>::default();
    order.submit_write();
    assert_eq!(order.reads_may_run(), Reads::Wait);
    order.writer_gone();
    assert_eq!(order.reads_may_run(), Reads::WriterGone);
}

/// Rule 2: outcomes reported out of order (a later write first) never move the count back.
#[test]
fn writes_reported_out_of_order_never_unapply_a_later_one() {
    let mut order = ConnOrder::<&str>::default();
    let (first, second) = (order.submit_write(), order.submit_write());
    order.applied(second);
    order.applied(first);
    assert_eq!(order.reads_may_run(), Reads::MayRun);
    order.submit_write();
    assert_eq!(order.reads_may_run(), Reads::Wait, "the third is still out");
}

/// Rule 5: with no read pending, messages go as soon as they are queued, in order.
#[test]
fn messages_leave_in_the_order_queued() {
    let mut order = ConnOrder::default();
    assert!(order.push("a") && order.push("b"));
    assert_eq!(order.queued(), 2);
    assert!(order.has_sendable());
    let mut out = Vec::new();
    send_free(&mut order, &mut out);
    assert_eq!(out, ["a", "b"]);
    assert!(!order.has_sendable());
    assert_eq!(order.queued(), 2, "what was sent still counts: fences are counts of everything queued");
}

/// Rules 3 and 4 (G6): the reply follows every message queued before its read looked, and
/// precedes every one queued after.
#[test]
fn a_reply_follows_the_messages_its_read_saw_and_precedes_the_rest() {
    let mut order = ConnOrder::default();
    order.push("seen 1");
    order.push("seen 2");
    let fence = order.fence();
    assert_eq!(fence, 2);
    order.push("unseen");
    let mut out = Vec::new();
    answer_read(&mut order, fence, &mut out);
    send_free(&mut order, &mut out);
    assert_eq!(out, ["seen 1", "seen 2", "reply", "unseen"]);
}

/// Rule 4, the case it exists for: an event for a change the read did not see is queued
/// while the read is in flight (looked, reply not yet out) and the writer is free. It must
/// wait for the reply, or a client arming its watch on the reply gets the event first.
#[test]
fn an_event_the_read_did_not_see_waits_while_the_read_is_in_flight() {
    let mut order = ConnOrder::default();
    let fence = order.fence();
    assert_eq!(fence, 0, "nothing queued when the read looked");
    order.push("event of a later change");
    assert!(!order.has_sendable(), "held by the fence");
    assert_eq!(order.next_to_send(), None);
    let mut out = Vec::new();
    answer_read(&mut order, fence, &mut out);
    assert!(order.has_sendable(), "the reply lifted the fence");
    send_free(&mut order, &mut out);
    assert_eq!(out, ["reply", "event of a later change"]);
}

/// Rules 4 and 5: the free writer sends up to the fence and holds the rest; one held
/// message holds back every later one, which then leave in order.
#[test]
fn the_free_writer_sends_up_to_the_fence_and_holds_the_rest_in_order() {
    let mut order = ConnOrder::default();
    order.push("before");
    let fence = order.fence();
    order.push("after 1");
    let mut out = Vec::new();
    send_free(&mut order, &mut out);
    assert_eq!(out, ["before"], "the seen message goes at once");
    order.push("after 2");
    send_free(&mut order, &mut out);
    assert_eq!(out, ["before"], "nothing past the fence");
    answer_read(&mut order, fence, &mut out);
    send_free(&mut order, &mut out);
    assert_eq!(out, ["before", "reply", "after 1", "after 2"]);
}

/// Rule 4 with two reads in flight: each reply lifts only its own fence.
#[test]
fn two_reads_in_flight_lift_their_fences_one_at_a_time() {
    let mut order = ConnOrder::default();
    order.push("m1");
    let first = order.fence();
    order.push("m2");
    order.push("m3");
    let second = order.fence();
    order.push("m4");
    let mut out = Vec::new();
    send_free(&mut order, &mut out);
    assert_eq!(out, ["m1"]);
    answer_read(&mut order, first, &mut out);
    send_free(&mut order, &mut out);
    assert_eq!(out, ["m1", "reply", "m2", "m3"], "m4 waits for the second read");
    answer_read(&mut order, second, &mut out);
    send_free(&mut order, &mut out);
    assert_eq!(out, ["m1", "reply", "m2", "m3", "reply", "m4"]);
}

/// Rules 1, 4 and 6 together: a read, then a write whose event is queued while the read's
/// reply is not out yet (the write applied quickly, the writer is behind). The write's event
/// shows a change the read did not see: it goes after the read's reply and before the
/// write's, so events and replies interleave in zxid order.
#[test]
fn a_later_write_event_goes_between_the_read_reply_and_the_write_reply() {
    let mut order = ConnOrder::default();
    let read_fence = order.fence();
    let write = order.submit_write();
    order.push("event of the write");
    let mut out = Vec::new();
    // The writer is free first (its select is biased toward messages): held.
    send_free(&mut order, &mut out);
    assert!(out.is_empty());
    // The read's item: its reply.
    answer_read(&mut order, read_fence, &mut out);
    // The write's item: applied, then what is queued by now, then its reply.
    order.applied(write);
    send_free(&mut order, &mut out);
    out.push("write reply");
    assert_eq!(out, ["reply", "event of the write", "write reply"]);
}

/// Rule 3: a read whose seen messages already went out (the writer was free) has nothing
/// due; its reply goes at once.
#[test]
fn a_read_whose_messages_are_out_replies_at_once() {
    let mut order = ConnOrder::default();
    order.push("a");
    let mut out = Vec::new();
    send_free(&mut order, &mut out);
    let fence = order.fence();
    assert_eq!(order.due_before_reply(fence), None);
    answer_read(&mut order, fence, &mut out);
    assert_eq!(out, ["a", "reply"]);
}

/// Rule 7: once the writer is gone nothing is queued, and what waited is given back.
#[test]
fn the_writers_end_refuses_messages_and_gives_back_the_waiting_ones() {
    let mut order = ConnOrder::default();
    order.fence();
    order.push("held");
    let dropped = order.writer_gone();
    assert_eq!(dropped, ["held"]);
    assert!(!order.push("late"));
    assert_eq!(order.queued(), 0);
    assert_eq!(order.next_to_send(), None);
}

/// A burst's room is given back once it is sent.
#[test]
fn an_emptied_burst_gives_its_room_back() {
    let mut order = ConnOrder::default();
    for i in 0..(2 * SHRINK_ABOVE as u64) {
        order.push(i);
    }
    while order.next_to_send().is_some() {}
    assert_eq!(order.waiting.capacity(), 0);
    assert_eq!(order.queued(), 2 * SHRINK_ABOVE as u64);
}
