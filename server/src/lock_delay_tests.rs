//! Lock-delay in the state machine alone (G25): which contenders a session's end holds over,
//! and when the leader's deletion of them applies, judged by the commands' own clocks.

use crate::command::{Change, Command, CommandOp, Outcome};
use crate::lock::grants;
use crate::state::{check_fence, StateMachine};
use crate::tree::NodeKind;
use ward_proto::{ErrorCode, LockKind, LockState, Response, SessionId, SessionSecret};

const T: i64 = 1_000_000;
const DELAY: u64 = 100;

struct World {
    sm: StateMachine,
}

impl World {
    fn new() -> World {
        let mut w = World { sm: StateMachine::default() };
        let dir =
            ward_proto::Op::Create { path: "/l".into(), data: Vec::new(), mode: ward_proto::CreateMode::Persistent };
        let owner = w.session(None);
        w.apply(T, owner, CommandOp::Op(dir)).0.expect("create /l");
        w
    }

    fn apply(&mut self, time_ms: i64, session: SessionId, op: CommandOp) -> (Result<Response, ErrorCode>, Vec<Change>) {
        let (outcome, changes) = self.sm.apply(&Command { time_ms, session, xid: 0, op });
        match outcome {
            Outcome::Reply(reply) => (reply, changes),
            Outcome::SessionCreated(_) | Outcome::Attached => (Ok(Response::Closed), changes),
        }
    }

    fn session(&mut self, owner: Option<&str>) -> SessionId {
        let open = CommandOp::CreateSession {
            timeout_ms: 5000,
            secret: SessionSecret([1; 16]),
            owner: owner.map(str::to_string),
        };
        match self.sm.apply(&Command { time_ms: T, session: SessionId(0), xid: 0, op: open }).0 {
            Outcome::SessionCreated(id) => id,
            other => panic!("{other:?}"),
        }
    }

    /// An acquire of `/l` by `session`, asking for `delay` (`None`: a plain acquire).
    fn acquire(&mut self, session: SessionId, kind: LockKind, delay: Option<u64>) -> Result<LockState, ErrorCode> {
        let (dirs, tag, data) = (vec!["/l".to_string()], session.0, Vec::new());
        let op = match delay {
            Some(lock_delay_ms) => CommandOp::LockAcquireDelayed { dirs, tag, kind, data, lock_delay_ms },
            None => CommandOp::LockAcquire { dirs, tag, kind, data },
        };
        match self.apply(T, session, op).0? {
            Response::Lock(state) => Ok(state),
            other => panic!("{other:?}"),
        }
    }

    /// The sessions granted by the changes of one command.
    fn granted(&self, changes: &[Change]) -> Vec<SessionId> {
        grants(&self.sm, changes).into_iter().map(|g| g.session).collect()
    }

    /// The leader's deletion of a held-over contender, at `time_ms`.
    fn end_delay(&mut self, time_ms: i64, path: &str) -> (Result<Response, ErrorCode>, Vec<Change>) {
        self.apply(time_ms, SessionId(0), CommandOp::DeleteIfUnused { path: path.into(), never_used_ms: 0 })
    }
}

#[test]
fn an_expired_holder_keeps_its_place_until_its_delay_has_passed_by_the_commands_clock() {
    let mut w = World::new();
    let (a, b) = (w.session(None), w.session(None));
    let held = w.acquire(a, LockKind::Exclusive, Some(DELAY)).expect("a");
    assert!(held.held);
    assert!(!w.acquire(b, LockKind::Exclusive, Some(DELAY)).expect("b").held);
    assert_eq!(w.sm.tree().get("/l").map(|n| n.data().to_vec()), Some(b"ward-lock lock-delay-ms=100".to_vec()));
    let (path, token) = (held.nodes[0].path.clone(), held.nodes[0].token);

    let (_, changes) = w.apply(T + 10, a, CommandOp::ExpireSession);
    assert!(!changes.contains(&Change::Deleted(path.clone())), "{changes:?}");
    assert!(w.granted(&changes).is_empty(), "nobody is granted at the expiry");
    let node = w.sm.tree().get(&path).expect("held over");
    assert_eq!(
        (node.kind(), node.mtime, w.sm.tree().stat(node).ephemeral_owner),
        (NodeKind::LockDelay(DELAY), T + 10, None)
    );
    assert!(w.sm.tree().ephemerals(a).next().is_none());
    assert_eq!(check_fence(w.sm.tree(), &path, token), Err(ErrorCode::StaleFence), "its session is gone");
    let waiter = w.sm.tree().ephemerals(b).next().expect("b's contender").to_string();
    assert_eq!(w.sm.lock_state(&waiter).map(|s| s.held), Some(false));

    // Not yet: the delay is over only past mtime + delay, by the deleting command's clock.
    let (early, changes) = w.end_delay(T + 10 + DELAY as i64, &path);
    assert_eq!(early, Err(ErrorCode::BadVersion));
    assert!(changes.is_empty() && w.sm.tree().get(&path).is_some());
    let (over, changes) = w.end_delay(T + 11 + DELAY as i64, &path);
    assert_eq!(over, Ok(Response::Deleted));
    assert_eq!(w.granted(&changes), [b], "the deletion grants the next contender");
    assert!(w.sm.tree().lock_delayed().next().is_none());
}

#[test]
fn an_orderly_release_or_close_hands_over_at_once() {
    let mut w = World::new();
    let (a, b, c) = (w.session(None), w.session(None), w.session(None));
    for s in [a, b, c] {
        w.acquire(s, LockKind::Exclusive, Some(DELAY)).expect("acquire");
    }
    let release = CommandOp::LockRelease { dirs: vec!["/l".into()], tag: a.0 };
    let (_, changes) = w.apply(T + 1, a, release);
    assert_eq!(w.granted(&changes), [b], "a release hands over in the same command");
    let (_, changes) = w.apply(T + 2, b, CommandOp::CloseSession);
    assert_eq!(w.granted(&changes), [c], "so does closing the session");
    assert!(w.sm.tree().lock_delayed().next().is_none());
}

#[test]
fn only_holders_in_directories_with_a_delay_are_held_over_and_a_replaced_owner_is_one() {
    let mut w = World::new();
    let old = w.session(Some("app"));
    let (waiter, last) = (w.session(None), w.session(None));
    w.acquire(old, LockKind::Exclusive, Some(DELAY)).expect("old");
    w.acquire(waiter, LockKind::Exclusive, None).expect("a plain acquire takes the directory's delay");
    w.acquire(last, LockKind::Exclusive, None).expect("another");
    // A waiter that expires leaves the queue at once.
    let (_, changes) = w.apply(T + 1, waiter, CommandOp::ExpireSession);
    assert!(changes.iter().any(|c| matches!(c, Change::Deleted(p) if p.starts_with("/l/"))), "{changes:?}");
    assert!(w.sm.tree().lock_delayed().next().is_none());
    // A new session of the same owner ends the old one: by the server, so the lock is held
    // over (the old process may only be paused).
    let _new = w.session(Some("app"));
    assert_eq!(w.sm.tree().lock_delayed().count(), 1);
    let last_path = w.sm.tree().ephemerals(last).next().expect("last").to_string();
    assert_eq!(w.sm.lock_state(&last_path).map(|s| s.held), Some(false));

    // Without a delay in the directory, an expired holder goes at once.
    let mut w = World::new();
    let (a, b) = (w.session(None), w.session(None));
    w.acquire(a, LockKind::Exclusive, None).expect("a");
    w.acquire(b, LockKind::Exclusive, None).expect("b");
    let (_, changes) = w.apply(T + 1, a, CommandOp::ExpireSession);
    assert_eq!(w.granted(&changes), [b]);
}

#[test]
fn the_first_acquire_on_an_empty_queue_fixes_the_delay_and_others_must_match() {
    let mut w = World::new();
    let (a, b) = (w.session(None), w.session(None));
    w.acquire(a, LockKind::Exclusive, Some(DELAY)).expect("a");
    assert_eq!(w.acquire(b, LockKind::Exclusive, Some(2 * DELAY)), Err(ErrorCode::LockDelayMismatch));
    assert!(w.sm.tree().ephemerals(b).next().is_none(), "a refused acquire leaves no contender");
    w.acquire(b, LockKind::Exclusive, Some(DELAY)).expect("the same delay");

    // A semaphore records its permits and its delay together.
    let mut w = World::new();
    let (a, b) = (w.session(None), w.session(None));
    w.acquire(a, LockKind::Semaphore { permits: 2 }, Some(DELAY)).expect("a");
    let header = w.sm.tree().get("/l").map(|n| n.data().to_vec());
    assert_eq!(header, Some(b"ward-semaphore permits=2 lock-delay-ms=100".to_vec()));
    assert_eq!(w.acquire(b, LockKind::Semaphore { permits: 3 }, None), Err(ErrorCode::PermitsMismatch));
    w.acquire(b, LockKind::Semaphore { permits: 2 }, None).expect("b");
    // Both hold a permit; one expires and keeps it for the delay.
    w.apply(T + 1, a, CommandOp::ExpireSession).0.expect("expire");
    assert_eq!(w.sm.tree().lock_delayed().count(), 1);
}
