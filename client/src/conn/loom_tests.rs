//! Loom models of what the connection task hands to the application's tasks: request
//! outcomes (model 1), lock guards' validity (model 3), releases (model 4) and watch events
//! (model 5). The task here is the real [`Task`] without a socket: the models call the
//! handlers its loops call (`on_message`, `while_disconnected`, `end_session`, ...), in the
//! order a connection's life produces them, while application threads wait on the real
//! [`oneshot`](crate::sync::oneshot), [`Watch`], [`LockGuard`] and [`Validity`]. Run with
//! `RUSTFLAGS="--cfg ward_loom" cargo test --release -p ward-client --lib loom_tests`.

use super::{after_end, End, Task};
use crate::conn::pending::Waiter;
use crate::conn::Cmd;
use crate::error::Error;
use crate::lock::{Fence, LockGuard, Validity};
use crate::state::{SessionCell, SessionState};
use crate::sync::oneshot;
use crate::watch::Watch;
use loom::future::block_on;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use ward_proto::{EventKind, Response, ServerMessage, SessionId, SessionSecret, Stat, WatchEvent, WatchKind};

/// A connection task between connections: what `ClientBuilder::connect` builds, without the
/// socket. Its command channel is returned for the application side.
fn task() -> (Task, mpsc::UnboundedSender<Cmd>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (state, _) = watch::channel(SessionState::Connected);
    let task = Task {
        addrs: vec!["127.0.0.1:1".into()],
        next_addr: 0,
        session_id: SessionId(1),
        secret: SessionSecret([0; 16]),
        requested_timeout_ms: 3_000,
        timeout: Duration::from_secs(3),
        connect_timeout: Duration::from_secs(1),
        tls: None,
        last_zxid: 0,
        next_xid: 1,
        pending: Default::default(),
        watches: Default::default(),
        streams: Default::default(),
        state,
        session: Arc::new(SessionCell::new()),
        last_ack: tokio::time::Instant::now(),
        locks: Default::default(),
        resend: Vec::new(),
        auth: Vec::new(),
        rx,
    };
    (task, tx)
}

fn reply(xid: u64, zxid: u64, result: Result<Response, ward_proto::ErrorCode>) -> ServerMessage {
    ServerMessage::Reply { xid, zxid, result }
}

fn data(bytes: &[u8]) -> Response {
    Response::Data { data: bytes.to_vec(), stat: Stat::default() }
}

/// Polls `fut` once, as a task that then gives up on it would.
fn poll_once<F: Future>(fut: F) {
    let mut fut = pin!(fut);
    let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
}

/// Model 1 (G2, G7): three requests in flight; the reply to one arrives, then the connection
/// drops; one caller has given up on its request. Every caller still waiting gets exactly
/// one outcome and it is its own: the answered one its reply, the others `ConnectionLoss`;
/// a late reply to a failed request completes nobody (the task treats it as a broken
/// connection). Loom runs the callers' polls against the task's sends in every order.
#[test]
fn every_request_gets_exactly_its_own_outcome() {
    loom::model(|| {
        let (mut task, _tx) = task();
        let mut callers = Vec::new();
        for xid in 1..=3 {
            let (reply, rx) = oneshot::channel();
            task.pending.insert(xid, Waiter::User { reply, watch: None, resend: None });
            callers.push(rx);
        }
        let gone = callers.pop().expect("third caller");
        let second = callers.pop().expect("second caller");
        let first = callers.pop().expect("first caller");
        let first = thread::spawn(move || block_on(first));
        let second = thread::spawn(move || block_on(second));
        let quitter = thread::spawn(move || drop(gone));

        assert!(task.on_message(reply(2, 10, Ok(data(b"two")))).is_none());
        // What `run` does when `serve` ends with `End::Lost`.
        task.pending.fail_all(&Error::ConnectionLoss);
        let late = task.on_message(reply(1, 11, Ok(data(b"one"))));
        assert!(matches!(late, Some(End::Lost(_))), "a reply to a failed request completes nobody");

        assert_eq!(first.join().expect("first"), Ok(Err(Error::ConnectionLoss)));
        assert_eq!(second.join().expect("second"), Ok(Ok(data(b"two"))), "its own reply, not another's");
        quitter.join().expect("quitter");
        assert!(task.pending.take(1).is_none() && task.pending.take(2).is_none() && task.pending.take(3).is_none());
    });
}

/// Model 3 (locks: `LockGuard::lost`): the task goes through a connection's end: lost, so
/// long that the session may have expired (doubt), resumed, then expired. A guard granted
/// before the race sees `lost()` complete, and once `is_lost` is true it stays true. A guard
/// made during the race (the application picking up a grant that arrived on the live
/// connection) is never valid while that doubt stands, whenever exactly it is made.
#[test]
fn guard_validity_is_lost_for_good() {
    loom::model(|| {
        let (mut task, _tx) = task();
        let session = task.session.clone();
        let early = Validity::now(&session);
        let in_doubt = Arc::new(AtomicBool::new(false));

        let waiter = thread::spawn(move || {
            block_on(early.lost());
            assert!(early.is_lost(), "lost() completed, so the guard is lost");
            early
        });
        let late = {
            let (session, in_doubt) = (session.clone(), in_doubt.clone());
            thread::spawn(move || {
                let guard = Validity::now(&session);
                let doubted = in_doubt.load(Ordering::SeqCst);
                let first = guard.is_lost();
                if doubted {
                    assert!(first, "a guard made while its session is in doubt must not be valid");
                }
                let second = guard.is_lost();
                assert!(!first || second, "lost, then valid again");
            })
        };

        task.publish(SessionState::Disconnected);
        task.doubt_session();
        in_doubt.store(true, Ordering::SeqCst);
        in_doubt.store(false, Ordering::SeqCst);
        task.publish(SessionState::Connected);
        let error = task.end_session(End::Expired);
        assert_eq!(error, Some(Error::SessionExpired));

        let early = waiter.join().expect("waiter");
        late.join().expect("late");
        assert!(early.is_lost());
        assert!(Validity::now(&session).is_lost(), "nothing is valid after expiry");
    });
}

/// Model 4 (locks: release on drop): three guards, one unlocked, one dropped, one whose
/// `unlock` is started and then abandoned (its future dropped, as a caller's timeout around
/// it does), while the task loses the connection and then learns that the session expired.
/// Each guard's release reaches the task exactly once, and `unlock` returns `Ok` whether the
/// release was queued before the expiry (and answered by it) or came after it.
#[test]
fn release_is_sent_exactly_once() {
    loom::model(|| {
        let (mut task, tx) = task();
        let guard = |tag: u64| {
            let fence = Fence { path: format!("/l/c-{tag}"), token: tag };
            LockGuard::granted(tx.clone(), vec!["/l".into()], tag, vec![fence], Validity::now(&task.session))
        };
        let (unlocked, dropped, abandoned) = (guard(1), guard(2), guard(3));
        drop(tx);

        let unlocker = thread::spawn(move || block_on(unlocked.unlock()));
        let dropper = thread::spawn(move || drop(dropped));
        let quitter = thread::spawn(move || poll_once(abandoned.unlock()));

        // The task: the connection drops; what arrives meanwhile is queued for the resume.
        let mut releases = [0u32; 4];
        let mut count = |cmd: &Cmd| {
            if let Cmd::Release { tag, .. } = cmd {
                releases[*tag as usize] += 1;
            }
        };
        task.publish(SessionState::Disconnected);
        while let Ok(cmd) = task.rx.try_recv() {
            count(&cmd);
            task.while_disconnected(Some(cmd)).unwrap_or_else(|_| panic!("only releases are sent"));
        }
        // Then the server says the session expired: `finish`, one command at a time.
        let error = task.end_session(End::Expired).expect("expired");
        while let Some(cmd) = block_on(task.rx.recv()) {
            count(&cmd);
            after_end(cmd, &error);
        }

        assert_eq!(unlocker.join().expect("unlocker"), Ok(()));
        dropper.join().expect("dropper");
        quitter.join().expect("quitter");
        assert_eq!(releases[1..], [1, 1, 1], "each guard releases exactly once");
    });
}

/// Model 5 (G6): two `Watch`es on `/n` (one server watch), and a request whose reply
/// follows the event on the connection. The application side sees the event before the
/// reply: once the reply is in, the watch has fired. Each watch fires once, with the first
/// event; a later event on `/n` reaches neither (it has no watch left to fire).
#[test]
fn watch_fires_once_and_before_the_following_reply() {
    loom::model(|| {
        let (mut task, _tx) = task();
        let (w1, mut watch1) = Watch::new();
        let (w2, watch2) = Watch::new();
        task.watches.add(WatchKind::Data, "/n".into(), w1);
        task.watches.add(WatchKind::Data, "/n".into(), w2);
        let (reply_tx, reply_rx) = oneshot::channel();
        task.pending.insert(7, Waiter::User { reply: reply_tx, watch: None, resend: None });

        let reader = thread::spawn(move || {
            let answer = block_on(reply_rx).expect("answered");
            assert!(answer.is_ok());
            let event = watch1.try_recv();
            assert!(
                matches!(&event, Some(Ok(e)) if e.kind == EventKind::NodeDataChanged && e.zxid == 5),
                "the event must be visible once the reply that follows it is: {event:?}"
            );
            watch1
        });
        let watcher = thread::spawn(move || block_on(watch2));

        let changed = WatchEvent { kind: EventKind::NodeDataChanged, path: "/n".into(), zxid: 5 };
        assert!(task.on_message(ServerMessage::Event(changed)).is_none());
        assert!(task.on_message(reply(7, 5, Ok(Response::DataSet(Stat::default())))).is_none());
        let deleted = WatchEvent { kind: EventKind::NodeDeleted, path: "/n".into(), zxid: 6 };
        assert!(task.on_message(ServerMessage::Event(deleted)).is_none());

        let mut watch1 = reader.join().expect("reader");
        let fired = watcher.join().expect("watcher");
        assert!(matches!(&fired, Ok(e) if e.zxid == 5), "fired by the first event: {fired:?}");
        assert!(!matches!(watch1.try_recv(), Some(Ok(_))), "a one-shot watch fires at most once");
        assert!(task.watches.batches(usize::MAX).is_empty(), "nothing left armed");
    });
}

/// G12: a release the server refuses as not applied (its member stopped leading before
/// logging it) while keeping the connection open is not left pending on that connection for
/// good: the task gives the connection up, and the release stays pending, to be sent again
/// on the next one. Answering it as before (keep waiting) would leave the lock held by nobody
/// who uses it.
#[test]
fn a_release_refused_on_a_connection_that_stays_open_ends_it_and_stays_pending() {
    loom::model(|| {
        let (mut task, _tx) = task();
        task.locks.release(7, vec!["/l".into()], None);
        task.pending.insert(5, Waiter::LockRelease { tag: 7 });
        let end = task.on_message(reply(5, 0, Err(ward_proto::ErrorCode::Unavailable)));
        assert!(matches!(end, Some(End::Lost(_))), "the connection must end");
        assert_eq!(task.locks.pending_releases(), vec![(7, vec!["/l".to_string()])]);
    });
}
