//! Loom models of where connection tasks meet the apply path: the real [`Core`] (its state
//! lock), [`WatchRegistry`](crate::watch::WatchRegistry), [`Outbox`] and
//! [`SessionTracker`](crate::session::SessionTracker), with their locks and counters
//! swapped for loom's by `--cfg ward_loom` (see `sync.rs`). Run with
//! `RUSTFLAGS="--cfg ward_loom" cargo test --release -p ward-server --lib loom_tests`.
//!
//! Each model is a few loom threads doing what the tasks do (a connection reading with a
//! watch, apply deleting, a connection closing); loom runs every interleaving of their
//! synchronization points (up to `LOOM_MAX_PREEMPTIONS`) and the asserts must hold in all.

use crate::command::{Command, CommandOp, Outcome};
use crate::conn::outbox::{Outbox, OutboxRx};
use crate::conn::{CloseReason, ConnId, Outbound};
use crate::core::Core;
use crate::local::Local;
use crate::read::Reader;
use loom::thread;
use std::sync::Arc;
use ward_proto::{CreateMode, ErrorCode, EventKind, Op, Request, Response, SessionId, SessionSecret, WatchEvent, Zxid};

fn command(session: SessionId, op: CommandOp) -> Command {
    Command { time_ms: 1, session, xid: 0, op }
}

/// A core with one live session and the persistent node `/n`.
fn core_with_node() -> (Arc<Core>, Arc<Local>, SessionId) {
    // The core publishes to a real `Local` (std `Arc`s: sharing them is not what is modelled).
    let (core, local) = Local::serving();
    let create = CommandOp::CreateSession { timeout_ms: 10_000, secret: SessionSecret([1; 16]), owner: None };
    let session = match core.apply(&command(SessionId(0), create)).outcome {
        Outcome::SessionCreated(id) => id,
        other => panic!("{other:?}"),
    };
    let op = Op::Create { path: "/n".into(), data: b"x".to_vec(), mode: CreateMode::Persistent };
    core.apply(&command(session, CommandOp::Op(op)));
    (core, local, session)
}

fn delete_n(core: &Core, session: SessionId) -> Zxid {
    core.apply(&command(session, CommandOp::Op(Op::Delete { path: "/n".into(), version: None }))).zxid
}

/// What a connection reads: through [`Outbox::view`], as `SessionConn::view` (`conn/session_conn.rs`)
/// does for both listeners.
fn read(core: &Core, local: &Local, outbox: &Outbox, conn: ConnId, session: SessionId, request: Request) -> ReadSeen {
    let mut events = Vec::new();
    let (zxid, events_before, result) =
        outbox.view(core, |state| Reader { local, conn, session, ids: &[] }.execute(state, request, &mut events));
    ReadSeen { zxid, events_before, result }
}

struct ReadSeen {
    zxid: Zxid,
    events_before: u64,
    result: Result<Response, ErrorCode>,
}

fn drain(rx: &mut OutboxRx) -> Vec<Outbound> {
    rx.take_all()
}

fn events(msgs: &[Outbound]) -> Vec<&WatchEvent> {
    msgs.iter().filter_map(|m| if let Outbound::Event(e) = m { Some(e) } else { None }).collect()
}

/// Model 6 (G6): a connection reads `/n` with a watch while apply deletes `/n`. The watch
/// is armed under the read lock, so it is either armed before the delete (and the delete
/// fires it, exactly once) or the read sees the node gone and arms nothing; it is never left
/// armed on a deleted node. And whatever the read saw, the events for the changes it saw
/// were queued before it looked: `events_before` covers them.
#[test]
fn watch_armed_while_the_node_is_deleted_fires_or_is_never_armed() {
    loom::model(|| {
        let (core, local, session) = core_with_node();
        let (outbox, mut rx) = Outbox::channel();
        local.watches.add_conn(1, outbox.clone(), crate::conn::Delivery::Streams);
        // Armed before the race: the delete also changes `/`'s children, and that event tells
        // whether the read's reply would go out after the events it depends on.
        let armed = read(&core, &local, &outbox, 1, session, Request::GetChildren { path: "/".into(), watch: true });
        assert!(armed.result.is_ok());

        let reader = {
            let (core, local) = (core.clone(), local.clone());
            thread::spawn(move || {
                read(&core, &local, &outbox, 1, session, Request::GetData { path: "/n".into(), watch: true })
            })
        };
        let deleted_at = delete_n(&core, session);
        let seen = reader.join().expect("reader");

        let msgs = drain(&mut rx);
        let events = events(&msgs);
        let on_n: Vec<_> = events.iter().filter(|e| e.path == "/n").collect();
        match &seen.result {
            Ok(Response::Data { .. }) => {
                // Read before the delete: its watch was armed, and the delete fired it once.
                assert!(seen.zxid < deleted_at);
                assert_eq!(seen.events_before, 0, "nothing had changed yet");
                assert_eq!(on_n.len(), 1, "the armed watch fires exactly once: {events:?}");
                assert_eq!(on_n[0].kind, EventKind::NodeDeleted);
            }
            Err(ErrorCode::NoNode) => {
                // Read after the delete: nothing armed, and the delete's event on `/` was
                // already counted, so it goes out before this reply.
                assert!(seen.zxid >= deleted_at);
                assert!(on_n.is_empty(), "no watch was armed on a deleted node: {events:?}");
                assert!(seen.events_before >= 1, "the reply shows the delete, so its event must precede it");
            }
            other => panic!("unexpected read result {other:?}"),
        }
        assert_eq!(local.watches.len(), 0, "a watch leaked on a deleted node");
    });
}

/// Model 6b: a connection closing (`remove_conn`, as `session_conn.rs` does when its tasks end)
/// races with a read arming a watch and with apply firing it. Whatever the order, the
/// registry ends empty: a watch armed by a connection that is going away is not leaked, and
/// firing one never reaches a removed connection's entry.
#[test]
fn watch_of_a_closing_connection_is_not_leaked() {
    loom::model(|| {
        let (core, local, session) = core_with_node();
        let (outbox, _rx) = Outbox::channel();
        local.watches.add_conn(1, outbox.clone(), crate::conn::Delivery::Streams);

        let reader = {
            let (core, local) = (core.clone(), local.clone());
            thread::spawn(move || {
                read(&core, &local, &outbox, 1, session, Request::Exists { path: "/n".into(), watch: true })
            })
        };
        let closer = {
            let local = local.clone();
            thread::spawn(move || local.watches.remove_conn(1))
        };
        delete_n(&core, session);
        reader.join().expect("reader");
        closer.join().expect("closer");
        assert_eq!(local.watches.len(), 0, "a closed connection's watch leaked");
    });
}

/// Model 7 (G5, G7): a connection attaching to a session (a resume) races with apply ending
/// the session. Either the attach is refused, or the new connection is told the session
/// ended; the connection it replaced is told exactly once why it lost the session; and the
/// tracker forgets the session.
#[test]
fn session_attached_while_it_ends_is_told_or_refused() {
    loom::model(|| {
        let (core, local, session) = core_with_node();
        let (old, mut old_rx) = Outbox::channel();
        assert!(local.sessions.attach(session, 1, old));
        let (new, mut new_rx) = Outbox::channel();

        let attacher = {
            let local = local.clone();
            thread::spawn(move || local.sessions.attach(session, 2, new))
        };
        core.apply(&command(session, CommandOp::ExpireSession));
        let attached = attacher.join().expect("attacher");

        let closes = |msgs: Vec<Outbound>| -> Vec<CloseReason> {
            msgs.into_iter().filter_map(|m| if let Outbound::Close(r) = m { Some(r) } else { None }).collect()
        };
        let old_closes = closes(drain(&mut old_rx));
        let new_closes = closes(drain(&mut new_rx));
        assert_eq!(old_closes.len(), 1, "the replaced connection hears once: {old_closes:?}");
        if attached {
            assert_eq!(old_closes, [CloseReason::SessionMoved]);
            assert_eq!(new_closes, [CloseReason::SessionEnded], "an attached connection learns the session ended");
        } else {
            assert_eq!(old_closes, [CloseReason::SessionEnded]);
            assert!(new_closes.is_empty());
        }
        assert!(local.sessions.is_empty(), "the ended session is forgotten");
        assert!(!local.sessions.is_owner(session, 2));
    });
}

/// R3 (docs/guarantees.md, G16): a ping is confirmed only by a round whose touches were
/// taken after the ping arrived. One thread is a connection receiving a ping and asking
/// which round it needs; the other is the round task running two rounds (start, take the
/// touched sessions, get the leader's acknowledgement). A shared counter orders the ping's
/// arrival against each round's taking of touches. Making `Rounds::needed` return
/// `started` instead of `started + 1` breaks it: loom finds a round that took its touches
/// before the ping arrived and confirms it.
#[test]
fn a_ping_is_confirmed_only_by_a_round_that_started_after_it() {
    use crate::raft::rounds::Rounds;
    use loom::sync::atomic::{AtomicU64, Ordering};
    use loom::sync::{Arc, Mutex};
    loom::model(|| {
        let rounds = Arc::new(Rounds::default());
        let clock = Arc::new(AtomicU64::new(1));
        // When each round (1, 2) took its touches.
        let touched_at = Arc::new(Mutex::new([0u64; 3]));
        let task = {
            let (rounds, clock, touched_at) = (rounds.clone(), clock.clone(), touched_at.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    let round = rounds.start();
                    let at = clock.fetch_add(1, Ordering::SeqCst);
                    touched_at.lock().expect("touches")[round as usize] = at;
                    rounds.ack(round);
                }
            })
        };
        let arrival = clock.fetch_add(1, Ordering::SeqCst);
        let need = rounds.needed();
        let confirmed_early = rounds.confirmed(need);
        task.join().expect("round task");
        let touched_at = *touched_at.lock().expect("touches");
        for confirmed in [confirmed_early, rounds.confirmed(need)] {
            if confirmed {
                let at = touched_at[need as usize];
                assert!(at > arrival, "round {need} took its touches at {at}, before the ping arrived at {arrival}");
            }
        }
        assert!(need <= 3, "at most one round more than the task ran");
    });
}

/// R3, defence in depth: a ping is not answered as confirmed for a session whose touch the
/// leader refused. The leader refuses every touch of the session here; the round task runs
/// two rounds (start, take the touched sessions, the leader's answer), while a connection
/// receives a ping (touch, then the round it needs) and, if that round is acknowledged,
/// asks whether it may pong. Recording the refusals after the round's acknowledgement
/// (swapping the two lines of `Rounds::acknowledged`) breaks it: loom finds a pong allowed
/// by a round whose refusal was not yet recorded.
#[test]
fn a_ping_confirmed_by_a_round_that_refused_its_session_is_not_ponged() {
    use crate::raft::rounds::Rounds;
    use crate::session::SessionTracker;
    use loom::sync::Arc;
    use std::time::Duration;
    loom::model(|| {
        let (rounds, tracker) = (Arc::new(Rounds::default()), Arc::new(SessionTracker::default()));
        let session = SessionId(7);
        tracker.register(session, Duration::from_secs(10));
        let task = {
            let (rounds, tracker) = (rounds.clone(), tracker.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    let round = rounds.start();
                    let touched = tracker.take_touched();
                    rounds.acknowledged(round, &tracker, &touched, &touched);
                }
            })
        };
        tracker.touch(session);
        let need = rounds.needed();
        let early = rounds.confirmed(need) && tracker.may_confirm(session);
        task.join().expect("round task");
        let late = rounds.confirmed(need) && tracker.may_confirm(session);
        assert!(!early && !late, "a pong for a session the leader refused");
    });
}

/// G15: a new leader's sweep never expires a session on a deadline from before it led. The
/// leader's duties restart every deadline and only then turn the sweep on; the sweep task
/// may run at any moment meanwhile. Switching readiness on before `SessionTracker::ready_to_lead`
/// takes the lock under which it restarts the deadlines breaks it: loom finds the sweep
/// expiring the session on its stale deadline.
#[test]
fn a_new_leader_expires_nothing_before_deadlines_restart() {
    use crate::session::SessionTracker;
    use loom::sync::Arc;
    use std::time::Duration;
    loom::model(|| {
        let tracker = Arc::new(SessionTracker::default());
        tracker.not_leading();
        // Known from the log, last heard of by another leader: already past its deadline.
        tracker.register(SessionId(7), Duration::ZERO);
        let duties = {
            let tracker = tracker.clone();
            thread::spawn(move || {
                tracker.ready_to_lead(Duration::from_secs(3600));
            })
        };
        let expired = tracker.take_due(tokio::time::Instant::now());
        duties.join().expect("duties");
        assert!(expired.is_empty(), "expired {expired:?} on a deadline from before this leader");
    });
}

/// A write of `session` setting `/n` to `data`, sent through a connection that attached at
/// `epoch`.
fn fenced_set(session: SessionId, epoch: Zxid, data: &[u8]) -> Command {
    let set = Op::SetData { path: "/n".into(), data: data.to_vec(), version: None };
    command(session, CommandOp::Fenced { epoch, op: Box::new(CommandOp::Op(set)) })
}

/// G19: a session's write sent through a connection it has left never applies after what
/// it sent through the connection it moved to. The old connection's write (fenced by the
/// session's creation) and the move (an `AttachIf` logged, then a write fenced by it) reach
/// apply in either order; whatever loom picks, the old write applied before the move or was
/// refused. Without the fence check in `StateMachine::apply_command`, loom finds the old
/// write applied after the new one.
#[test]
fn a_write_from_a_connection_the_session_left_never_applies_after_the_move() {
    loom::model(|| {
        let (core, _local, session) = core_with_node();
        let old = {
            let core = core.clone();
            thread::spawn(move || core.apply(&fenced_set(session, session.0, b"old")))
        };
        let attach = core.apply(&command(session, CommandOp::AttachIf { expected: session.0 }));
        assert_eq!(attach.outcome, Outcome::Attached);
        let new = core.apply(&fenced_set(session, attach.zxid, b"new"));
        let old = old.join().expect("old connection");
        assert!(matches!(new.outcome, Outcome::Reply(Ok(_))), "{new:?}");
        match old.outcome {
            Outcome::Reply(Ok(_)) => assert!(old.zxid < attach.zxid, "the old write applied after the move"),
            Outcome::Reply(Err(ErrorCode::SessionMoved)) => {}
            other => panic!("unexpected outcome of the old write: {other:?}"),
        }
        let data = core.read(|s| s.tree().get("/n").map(|n| n.data().to_vec()));
        assert_eq!(data, Some(b"new".to_vec()), "the last write the client sent is the one that stays");
    });
}

/// G19: two handshakes of one session (the one a client gave up and the one it uses now)
/// race to log their attachments, each naming the attachment it saw. Whatever order loom
/// picks, exactly one takes the session, and that connection's writes apply. With the
/// expectation ignored (an unconditional attachment), loom finds both taking it, and the
/// later one, possibly the abandoned handshake, leaving the client's connection refused.
#[test]
fn of_two_racing_attachments_of_a_session_exactly_one_takes_it() {
    loom::model(|| {
        let (core, _local, session) = core_with_node();
        let abandoned = {
            let core = core.clone();
            thread::spawn(move || core.apply(&command(session, CommandOp::AttachIf { expected: session.0 })))
        };
        let current = core.apply(&command(session, CommandOp::AttachIf { expected: session.0 }));
        let abandoned = abandoned.join().expect("abandoned handshake");
        let won: Vec<_> = [&current, &abandoned].into_iter().filter(|a| a.outcome == Outcome::Attached).collect();
        assert_eq!(won.len(), 1, "exactly one attachment takes the session: {current:?}, {abandoned:?}");
        let written = core.apply(&fenced_set(session, won[0].zxid, b"w"));
        assert!(matches!(written.outcome, Outcome::Reply(Ok(_))), "the winner's writes apply: {written:?}");
    });
}

fn set_n(core: &Core, session: SessionId, data: &[u8]) -> Zxid {
    let op = Op::SetData { path: "/n".into(), data: data.to_vec(), version: None };
    core.apply(&command(session, CommandOp::Op(op))).zxid
}

/// G23: a persistent watch armed again after a reconnect (`AddWatches` since the last change
/// its client had) races with a change being applied. The replay is taken and the watch
/// armed in one view under the state's read lock, and apply records and fires under the
/// write lock, so each change the client missed reaches it exactly once: the one made while
/// it was away in the replay, the racing one either in the replay or live after, never both
/// and never neither.
#[test]
fn a_persistent_watch_armed_again_gets_every_missed_change_once() {
    loom::model(|| {
        let (core, local, session) = core_with_node();
        let (outbox, mut rx) = Outbox::channel();
        local.watches.add_conn(1, outbox.clone(), crate::conn::Delivery::Streams);
        let since = ward_proto::Position::after(core.read(|s| s.last_zxid()));
        let away = set_n(&core, session, b"while away");
        let rearm = {
            let (core, local) = (core.clone(), local.clone());
            thread::spawn(move || {
                let watch = ward_proto::PersistentWatch {
                    path: "/n".into(),
                    mode: ward_proto::WatchMode::Persistent,
                    since: Some(since),
                };
                read(&core, &local, &outbox, 1, session, Request::AddWatches { watches: vec![watch] })
            })
        };
        let racing = set_n(&core, session, b"racing");
        let seen = rearm.join().expect("re-arm");
        let Ok(Response::WatchesAdded { replay, missed }) = seen.result else { panic!("{:?}", seen.result) };
        assert!(missed.is_empty());
        let live: Vec<Zxid> = drain(&mut rx)
            .into_iter()
            .filter_map(|m| if let Outbound::Streamed(s) = m { Some(s.event.zxid) } else { None })
            .collect();
        let replayed: Vec<Zxid> = replay.iter().map(|s| s.event.zxid).collect();
        let all: Vec<Zxid> = replayed.iter().chain(&live).copied().collect();
        assert_eq!(all, [away, racing], "each once, in order: replayed {replayed:?}, live {live:?}");
    });
}

/// What the writer put on the wire, in order: an event (its zxid) or the read's reply.
#[derive(Debug, PartialEq)]
enum Wire {
    Event(Zxid),
    Reply,
}

fn on_wire(msg: Outbound) -> Wire {
    match msg {
        Outbound::Event(event) => Wire::Event(event.zxid),
        other => panic!("only events are queued here: {other:?}"),
    }
}

/// G6 and the fences (`conn/ordering.rs`, rules 3 to 5): the reader, the writer and apply
/// share one connection's [`ConnOrder`](crate::conn::ordering::ConnOrder). The connection has a
/// data watch on `/n`; apply changes `/n` (queuing the event under the state lock) while the
/// reader reads `/n` and the writer, with no item yet, sends whatever the order lets it.
/// Then the writer answers the read. Whatever the interleaving, the event goes before the
/// reply if the read saw the change, and after it if not: an event for a change the read
/// did not see, arriving while the read is in flight, waits for the reply.
///
/// Broken on purpose, loom finds both halves: taking the fence in `Outbox::view` before the
/// state lock instead of under it (the reply shows the change, its event follows), and
/// `ConnOrder::next_to_send` ignoring the fences (the free writer sends the event of a
/// change the read did not see before the reply).
#[test]
fn an_event_and_a_read_reply_leave_in_zxid_order() {
    loom::model(|| {
        let (core, local, session) = core_with_node();
        let (outbox, mut rx) = Outbox::channel();
        local.watches.add_conn(1, outbox.clone(), crate::conn::Delivery::Streams);
        local.watches.register(1, ward_proto::WatchKind::Data, "/n");

        let reader = {
            let (core, local) = (core.clone(), local.clone());
            thread::spawn(move || {
                read(&core, &local, &outbox, 1, session, Request::GetData { path: "/n".into(), watch: false })
            })
        };
        let writer = thread::spawn(move || {
            let mut wire = Vec::new();
            for _ in 0..2 {
                if let Some(msg) = rx.try_next() {
                    wire.push(on_wire(msg));
                }
            }
            (rx, wire)
        });
        let changed_at = set_n(&core, session, b"new");
        let seen = reader.join().expect("reader");
        let (mut rx, mut wire) = writer.join().expect("writer");

        // The read's item reaches the writer: what its view could show, the reply, the rest.
        while let Some(msg) = rx.due_before_reply(seen.events_before) {
            wire.push(on_wire(msg));
        }
        wire.push(Wire::Reply);
        rx.replied();
        while let Some(msg) = rx.try_next() {
            wire.push(on_wire(msg));
        }

        let saw_change = matches!(&seen.result, Ok(Response::Data { data, .. }) if data == b"new");
        assert_eq!(saw_change, seen.zxid >= changed_at, "{:?} at {}", seen.result, seen.zxid);
        let expected = match saw_change {
            true => [Wire::Event(changed_at), Wire::Reply],
            false => [Wire::Reply, Wire::Event(changed_at)],
        };
        assert_eq!(wire, expected, "the read saw the change: {saw_change}");
    });
}

/// Runs `future` on the current loom thread: a pending poll parks the thread until the
/// future's waker unparks it, so a lost wake-up shows as a loom deadlock.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(output) => return output,
            std::task::Poll::Pending => thread::park(),
        }
    }
}

/// Rules 2 and 7 of `conn/ordering.rs` across the reader and the writer: a read waiting for
/// the session's earlier writes is woken by the writer's report that they are applied, or
/// by the writer's end, whichever order loom picks; it never sleeps through either. The
/// writer applies the first of two writes and ends: the reader, waiting for both, must learn
/// that it would wait forever; had the writer applied both, it goes on.
#[test]
fn a_read_waiting_for_its_writes_is_woken_by_their_apply_or_the_writers_end() {
    loom::model(|| {
        for applied in [1, 2] {
            let (outbox, rx) = Outbox::channel();
            let (first, second) = (outbox.submit_write(), outbox.submit_write());
            let writer = thread::spawn(move || {
                rx.applied(first);
                if applied == 2 {
                    rx.applied(second);
                }
                drop(rx);
            });
            let caught_up = block_on(outbox.caught_up());
            writer.join().expect("writer");
            assert_eq!(caught_up, applied == 2, "{applied} of 2 writes applied before the writer ended");
        }
    });
}

/// A parked connection (`conn/park.rs`) waits on its outbox's waker, not on a future of its
/// own: it registers the waker, then looks for a message it may send or a cancelled token.
/// Whatever order loom picks, a message queued or a token cancelled while it parks wakes it;
/// it never sleeps through either (which would leave a lock waiter without its grant, or a
/// shutdown waiting forever).
#[test]
fn a_parked_connection_is_woken_by_a_message_or_a_cancel_that_comes_while_it_parks() {
    loom::model(|| {
        for cancel in [false, true] {
            let token = tokio_util::sync::CancellationToken::new();
            let (outbox, rx) = Outbox::bounded(usize::MAX, token.clone());
            let sender = thread::spawn(move || {
                if cancel {
                    token.cancel();
                    outbox.wake_parked();
                } else {
                    let event = WatchEvent { kind: EventKind::NodeCreated, path: "/a".into(), zxid: 1 };
                    assert!(outbox.send(Outbound::Event(event)));
                }
            });
            block_on(std::future::poll_fn(|cx| rx.poll_wake(cx)));
            sender.join().expect("sender");
        }
    });
}

/// G16: a leader counts a quorum as fresh only while the appends it accepted were sent less
/// than the touch lease before the check. The replication task sends an append, the peer
/// takes it (its lease starts), and the acceptance is recorded; the process may be paused for
/// longer than the lease at any point (a thread moving the clock), and the touch round may
/// check at any point. Judging the age when the acceptance is recorded rather than at the
/// check (as openraft's published `millis_since_quorum_ack` is), or not at all, breaks it:
/// loom finds a check after the pause passing on an acceptance from before it.
#[test]
fn a_leader_counts_a_quorum_fresh_only_within_the_lease_at_the_check() {
    use crate::raft::quorum::QuorumClock;
    use loom::sync::atomic::{AtomicU64, Ordering};
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};
    const LEASE_MS: u64 = 70;
    loom::model(|| {
        let base = Instant::now();
        let at = move |ms: u64| base + Duration::from_millis(ms);
        // Milliseconds since `base`.
        let clock = Arc::new(AtomicU64::new(0));
        let quorum = Arc::new(QuorumClock::default());
        let replication = {
            let (clock, quorum) = (clock.clone(), quorum.clone());
            thread::spawn(move || {
                let sent = clock.load(Ordering::SeqCst);
                let peer_took_it = clock.load(Ordering::SeqCst);
                quorum.accepted(2, at(sent));
                peer_took_it
            })
        };
        let pause = {
            let clock = clock.clone();
            thread::spawn(move || clock.fetch_add(10 * LEASE_MS, Ordering::SeqCst))
        };
        let now = clock.load(Ordering::SeqCst);
        let voters = [BTreeSet::from([1, 2, 3])];
        let fresh = quorum.fresh(1, &voters, at(now), Duration::from_millis(LEASE_MS));
        let peer_took_it = replication.join().expect("replication");
        pause.join().expect("pause");
        if fresh {
            // Peer 2 refuses other leaders for openraft's lease (longer) from when it took
            // the append: no leader can have been elected by `now`.
            assert!(now < peer_took_it + LEASE_MS, "fresh at {now} on an append the peer took at {peer_took_it}");
        }
    });
}

/// The fast path for a dead leader (G28) under G16. A voter that found its leader's port
/// serving nothing waives openraft's lease, so here voter 2 grants candidate 3 its vote at
/// any moment, lease or not. What keeps a holder's `lost()` first is that the old leader 1
/// acknowledges a touch at `r` only on a majority of acceptances of appends it sent less
/// than the touch lease `L` before `r` (`QuorumClock`), and a voter that took such an append
/// and voted for 3 did so in that order: once it has voted for a higher term it takes
/// nothing more from 1. So 3 is elected after `r − L`, and its grace (`≥ L`) carries every
/// session's deadline past `r + T`. Threads: 1's replication and touch check, 3's election,
/// and a pause that moves the clock. With `fenced` false (voter 2 takes 1's append after
/// voting for 3), loom finds a touch acknowledged after the new leader's deadline for it.
fn a_new_leader_without_the_lease_outlasts_every_acknowledged_touch(fenced: bool) {
    use crate::raft::quorum::QuorumClock;
    use loom::sync::atomic::{AtomicU64, Ordering};
    use loom::sync::Mutex;
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};
    const LEASE_MS: u64 = 70;
    const GRACE_MS: u64 = LEASE_MS;
    const TIMEOUT_MS: u64 = 1000;
    loom::model(move || {
        let base = Instant::now();
        let at = move |ms: u64| base + Duration::from_millis(ms);
        let clock = Arc::new(AtomicU64::new(0));
        let quorum = Arc::new(QuorumClock::default());
        // Voter 2's term: 1 while it follows leader 1.
        let voter = Arc::new(Mutex::new(1u64));
        let old_leader = {
            let (clock, quorum, voter) = (clock.clone(), quorum.clone(), voter.clone());
            thread::spawn(move || {
                let sent = clock.load(Ordering::SeqCst);
                let took = {
                    let term = voter.lock().expect("voter");
                    !fenced || *term == 1
                };
                if took {
                    quorum.accepted(2, at(sent));
                }
                let r = clock.load(Ordering::SeqCst);
                let voters = [BTreeSet::from([1, 2, 3])];
                quorum.fresh(1, &voters, at(r), Duration::from_millis(LEASE_MS)).then_some(r)
            })
        };
        let candidate = {
            let (clock, voter) = (clock.clone(), voter.clone());
            thread::spawn(move || {
                let granted = {
                    let mut term = voter.lock().expect("voter");
                    let granted = *term < 2;
                    *term = 2;
                    granted
                };
                // With 2's vote, 3 leads; ready at once, it gives every session its timeout
                // and the grace from now.
                granted.then(|| clock.load(Ordering::SeqCst) + TIMEOUT_MS + GRACE_MS)
            })
        };
        let pause = {
            let clock = clock.clone();
            thread::spawn(move || clock.fetch_add(10 * LEASE_MS, Ordering::SeqCst))
        };
        let touched = old_leader.join().expect("old leader");
        let deadline = candidate.join().expect("candidate");
        pause.join().expect("pause");
        if let (Some(r), Some(deadline)) = (touched, deadline) {
            assert!(deadline > r + TIMEOUT_MS, "a touch acknowledged at {r}, the new leader's deadline {deadline}");
        }
    });
}

#[test]
fn a_leader_elected_by_the_fast_path_outlasts_every_touch_the_old_one_acknowledged() {
    a_new_leader_without_the_lease_outlasts_every_acknowledged_touch(true);
}

#[test]
#[should_panic(expected = "a touch acknowledged at")]
fn the_fast_path_model_fails_when_a_voter_takes_the_old_leaders_append_after_voting() {
    a_new_leader_without_the_lease_outlasts_every_acknowledged_touch(false);
}
