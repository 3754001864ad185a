//! The blocking client's guards (G12, G7): release on drop and on panic, without waiting
//! for an unreachable server; their loss told by channel and by callback; the election's
//! observer.
//!
//! Each test body runs on a plain thread of its own (the blocking client cannot run inside
//! a runtime), bounded like the async tests.

use crate::harness::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use ward_client::{blocking, SessionState};
use ward_testkit::TEST_DEADLINE;

/// The blocking clients' session timeout: far longer than the `try_lock` waits below, so
/// that only a release (never an expiry) can free a lock in time.
const SESSION: Duration = Duration::from_secs(30);

const SHORT_WAIT: Duration = Duration::from_secs(3);

fn blocking_client(addr: &str) -> blocking::Client {
    blocking::Client::builder(addr)
        .session_timeout(SESSION)
        .connect_timeout(Duration::from_secs(20))
        .connect()
        .expect("blocking connect")
}

/// A blocking client named `owner`: a second one of the same name ends the first one's
/// session at once.
fn owned_client(addr: &str, owner: &str) -> blocking::Client {
    let builder = blocking::Client::builder(addr).owner(owner).session_timeout(SESSION);
    builder.connect().expect("blocking connect")
}

/// Runs `body` on a thread of its own, failing the test if it does not finish within the
/// test bound, and re-raising its panic here if it panics.
fn on_a_plain_thread(body: impl FnOnce() + Send + 'static) {
    let (done, finished) = channel();
    let thread = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(TEST_DEADLINE) {
        Ok(()) => thread.join().expect("test thread"),
        Err(RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(thread.join().expect_err("the test thread panicked"))
        }
        Err(RecvTimeoutError::Timeout) => panic!("the test did not finish within {TEST_DEADLINE:?}"),
    }
}

// G12: blocking guards release on drop and while a panic unwinds; the session's next
// request sees the release (G2), and another session gets the lock long before the old
// holder's session could have expired.
#[test]
fn blocking_guards_release_on_drop_and_on_panic() {
    on_a_plain_thread(blocking_guards);
}

fn blocking_guards() {
    let server = ServerProcess::start();
    let addr = server.addr_str();
    let (a, b) = (blocking_client(&addr), blocking_client(&addr));

    let dropped = {
        let a = a.clone();
        std::thread::spawn(move || {
            let guard = a.try_lock("/blk", DEADLINE).expect("lock").expect("free lock");
            let token = guard.fencing_token();
            drop(guard);
            token
        })
    };
    let dropped = dropped.join().expect("thread");
    let guard = b.try_lock("/blk", SHORT_WAIT).expect("try_lock").expect("released by drop");
    assert!(guard.fencing_token() > dropped);
    drop(guard);

    let held = Arc::new(AtomicU64::new(0));
    let panicked = {
        let (a, held) = (a.clone(), Arc::clone(&held));
        std::thread::spawn(move || {
            let guard = a.try_lock("/blk", DEADLINE).expect("lock").expect("free lock");
            held.store(guard.fencing_token(), Ordering::SeqCst);
            panic!("intentional panic while holding {} (test of release on unwind)", guard.path());
        })
    };
    assert!(panicked.join().is_err(), "the thread panicked");
    assert!(held.load(Ordering::SeqCst) > 0);
    // Released while the thread unwound: the holder's session's next request comes after
    // the release (G2), so it finds the queue empty.
    assert_eq!(a.get_children("/blk").expect("ls"), Vec::<String>::new());
    let guard = b.try_lock("/blk", SHORT_WAIT).expect("try_lock").expect("released during unwinding");
    assert!(guard.fencing_token() > held.load(Ordering::SeqCst));
    guard.unlock().expect("unlock");
    assert_eq!(a.state(), SessionState::Connected, "the panicking thread's session lives on");

    let resigned = {
        let a = a.clone();
        std::thread::spawn(move || {
            let _leadership = a.election("/blk-elect").campaign(b"a").expect("campaign");
            panic!("intentional panic while leading (test of resign on unwind)");
        })
    };
    assert!(resigned.join().is_err(), "the thread panicked");
    assert_eq!(a.election("/blk-elect").leader().expect("leader"), None);
    let leadership = b.election("/blk-elect").campaign(b"b").expect("campaign");
    assert_eq!(b.election("/blk-elect").leader().expect("leader").map(|l| l.data), Some(b"b".to_vec()));
    drop(leadership);
    assert_eq!(b.get_children("/blk-elect").expect("ls"), Vec::<String>::new());
}

// G12, G7: dropping a lock guard, a leadership and a mutex guard while the server is down
// returns while it is still down (the releases go on in the background), and once the
// server is back the releases are applied within the holder's session: another client
// takes all three locks while that session still lives.
#[test]
fn blocking_drops_return_while_the_server_is_down_and_release_once_it_is_back() {
    on_a_plain_thread(drops_while_the_server_is_down);
}

fn drops_while_the_server_is_down() {
    let mut server = ServerProcess::start();
    let addr = server.addr_str();
    let a = blocking_client(&addr);
    let dirs = ["/blk-down/lock", "/blk-down/elect", "/blk-down/mutex"];
    let guard = a.lock(dirs[0]).expect("lock");
    let leadership = a.election(dirs[1]).campaign(b"a").expect("campaign");
    let mutex_guard = a.mutex(dirs[2]).lock().expect("mutex");
    let tokens = [guard.fencing_token(), leadership.fencing_token(), mutex_guard.fencing_token()];

    server.kill9();
    let mut events = vec!["server stopped"];
    let dropping = Instant::now();
    drop((guard, leadership, mutex_guard));
    let drop_took = dropping.elapsed();
    events.push("drops returned");
    server.restart();
    events.push("server restarted");
    assert_eq!(events, ["server stopped", "drops returned", "server restarted"]);
    // A drop that waited for the server would take up to the session timeout here. The
    // bound is a generous one, on the test's own clock.
    assert!(drop_took < SESSION / 3, "the drops took {drop_took:?}, not well under the {SESSION:?} session");

    let b = blocking_client(&addr);
    for (dir, token) in dirs.iter().zip(tokens) {
        let next = b.try_lock(dir, DEADLINE).expect("try_lock").unwrap_or_else(|| panic!("{dir} never released"));
        assert!(next.fencing_token() > token, "{dir}: a later holder's token");
    }
    // Released, not expired: the holder's session lives on after its locks passed on.
    let session = a.session_id();
    assert!(a.exists("/blk-down").expect("the holder's session lives").is_some());
    assert_eq!(a.session_id(), session);
}

// G12, G7: every kind of blocking guard tells of its loss without a thread of the caller's
// waiting on it. The server ends the holder's session (a new session of the same owner);
// then this test's only thread finds each guard's message in its receiver and each
// callback's report in a channel, waiting with bounded `recv_timeout`s. A callback runs on
// the client's runtime and may call the client (which now says the session expired). A
// guard released before the loss tells nothing: its receiver disconnects and its callback
// is dropped without running.
#[test]
fn blocking_guards_tell_of_their_loss_by_channel_and_callback() {
    on_a_plain_thread(lost_by_channel_and_callback);
}

fn lost_by_channel_and_callback() {
    let server = ServerProcess::start();
    let addr = server.addr_str();
    let owned = |owner: &str| owned_client(&addr, owner);
    let holder = owned("blk-lost");
    let lock = holder.lock("/blk-lost/lock").expect("lock");
    let read = holder.read_lock("/blk-lost/rw").expect("read lock");
    let permit = holder.acquire_permit("/blk-lost/sem", 2).expect("permit");
    let both = holder.lock_all(&["/blk-lost/a", "/blk-lost/b"]).expect("multi-lock");
    let leadership = holder.election("/blk-lost/elect").campaign(b"h").expect("campaign");
    let mutex_guard = holder.mutex("/blk-lost/mutex").lock().expect("mutex");
    let released = holder.lock("/blk-lost/released").expect("lock");

    let names = ["lock", "read lock", "permit", "multi-lock", "leadership", "mutex"];
    let signals = [
        lock.lost_signal(),
        read.lost_signal(),
        permit.lost_signal(),
        both.lost_signal(),
        leadership.lost_signal(),
        mutex_guard.lost_signal(),
    ];
    let (report, reports) = channel();
    let reporter = |name: &'static str| {
        let (report, client) = (report.clone(), holder.clone());
        move || {
            let _ = report.send((name, client.exists("/")));
        }
    };
    lock.on_lost(reporter(names[0]));
    read.on_lost(reporter(names[1]));
    permit.on_lost(reporter(names[2]));
    both.on_lost(reporter(names[3]));
    leadership.on_lost(reporter(names[4]));
    mutex_guard.on_lost(reporter(names[5]));
    drop(report);

    let released_signal = released.lost_signal();
    let (released_report, released_reports) = channel::<()>();
    released.on_lost(move || {
        let _ = released_report.send(());
    });
    released.unlock().expect("unlock");
    assert_eq!(released_signal.recv_timeout(DEADLINE), Err(RecvTimeoutError::Disconnected));
    assert_eq!(released_reports.recv_timeout(DEADLINE), Err(RecvTimeoutError::Disconnected));
    for (name, signal) in names.iter().zip(&signals) {
        assert_eq!(signal.try_recv(), Err(TryRecvError::Empty), "{name}: no message while held");
    }

    // The same owner again: the server ends the holder's session at once.
    let _successor = owned("blk-lost");
    for (name, signal) in names.iter().zip(&signals) {
        assert_eq!(signal.recv_timeout(DEADLINE), Ok(()), "{name}: the loss told");
    }
    let mut told: Vec<_> = (0..names.len()).map(|_| reports.recv_timeout(DEADLINE).expect("a callback ran")).collect();
    told.sort_by_key(|(name, _)| names.iter().position(|n| n == name));
    let expected: Vec<_> = names.iter().map(|&name| (name, Err(ward_client::Error::SessionExpired))).collect();
    assert_eq!(told, expected);
    assert!(lock.is_lost() && read.is_lost() && permit.is_lost() && both.is_lost());
    assert!(leadership.is_lost() && mutex_guard.is_lost());
}

// G7: an `on_lost` callback may own a client's last handle. Dropping it there (the guard
// is gone by then) closes the client on another thread and returns: a runtime cannot shut
// down on one of its own threads, which would wait for itself for ever.
#[test]
fn blocking_callback_may_drop_the_clients_last_handle() {
    on_a_plain_thread(last_handle_in_a_callback);
}

fn last_handle_in_a_callback() {
    let server = ServerProcess::start();
    let addr = server.addr_str();
    let owned = |owner: &str| owned_client(&addr, owner);
    let holder = owned("blk-last");
    let guard = holder.lock("/blk-last").expect("lock");
    let lost = guard.lost_signal();
    let (guard_gone, wait_for_guard) = channel::<()>();
    let (dropped, handle_dropped) = channel();
    guard.on_lost(move || {
        // The guard holds a handle too: wait until the test has dropped it.
        let _ = wait_for_guard.recv_timeout(DEADLINE);
        drop(holder);
        let _ = dropped.send(());
    });
    let _successor = owned("blk-last");
    assert_eq!(lost.recv_timeout(DEADLINE), Ok(()), "the loss told");
    drop(guard);
    drop(guard_gone);
    assert_eq!(handle_dropped.recv_timeout(DEADLINE), Ok(()), "the callback dropped the last handle and returned");
}

/// Polls `check` (a blocking read) until it holds; panics naming `what` after [`DEADLINE`].
fn poll_until(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < DEADLINE, "timed out after {DEADLINE:?} waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// G12: the blocking observer of an election reports the leader and each change of leader,
// as the async one does: nobody, then a, then b when a resigns with b queued behind it,
// then nobody when b's leadership is dropped; as an iterator too, which ends after the
// error of a closed client.
#[test]
fn blocking_observer_reports_the_leader_and_each_change() {
    on_a_plain_thread(observe_leaders);
}

fn observe_leaders() {
    let server = ServerProcess::start();
    let addr = server.addr_str();
    let (a, b, watcher) = (blocking_client(&addr), blocking_client(&addr), blocking_client(&addr));
    let dir = "/blk-observe";
    let mut observer = watcher.election(dir).observe();
    assert_eq!(observer.next_leader().expect("observe"), None, "nobody leads yet");
    assert_eq!(observer.next_leader_timeout(Duration::from_millis(100)).expect("observe"), None, "no change");

    let lead_a = a.election(dir).campaign(b"a").expect("campaign");
    let seen = observer.next_leader().expect("observe").expect("a leader");
    assert_eq!((seen.data, seen.token), (b"a".to_vec(), lead_a.fencing_token()));

    let queued = std::thread::spawn(move || b.election(dir).campaign(b"b").expect("campaign"));
    poll_until("b queues behind a", || watcher.get_children(dir).expect("ls").len() == 2);
    lead_a.resign().expect("resign");
    let lead_b = queued.join().expect("b's thread");
    let seen = observer.next_leader_timeout(DEADLINE).expect("observe").expect("a change").expect("a leader");
    assert_eq!((seen.data, seen.token), (b"b".to_vec(), lead_b.fencing_token()));

    drop(lead_b);
    assert_eq!(observer.next().expect("a report").expect("observe"), None, "nobody leads");
    watcher.close().expect("close");
    assert_eq!(observer.next(), Some(Err(ward_client::Error::Closed)));
    assert_eq!(observer.next(), None, "the iteration ends after an error");
}
