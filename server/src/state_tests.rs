//! The state machine on its own: commands in, state and changes out. No I/O, so these pin
//! down ZooKeeper's rules exactly (checks, counters, rollback).

use crate::command::{Change, Command, CommandOp, Outcome};
use crate::state::StateMachine;
use ward_proto::{CreateMode, ErrorCode, Op, OpResult, Response, SessionId, SessionSecret};

struct Harness {
    sm: StateMachine,
    time: i64,
}

impl Harness {
    fn new() -> Self {
        Harness { sm: StateMachine::default(), time: 1_000 }
    }

    fn run(&mut self, session: SessionId, op: CommandOp) -> (Outcome, Vec<Change>) {
        self.time += 1;
        self.sm.apply(&Command { time_ms: self.time, session, xid: 0, op })
    }

    fn session(&mut self) -> SessionId {
        match self.run(
            SessionId(0),
            CommandOp::CreateSession { timeout_ms: 5000, secret: SessionSecret([7; 16]), owner: None },
        ) {
            (Outcome::SessionCreated(id), _) => id,
            other => panic!("{other:?}"),
        }
    }

    fn op(&mut self, session: SessionId, op: Op) -> Result<Response, ErrorCode> {
        match self.run(session, CommandOp::Op(op)).0 {
            Outcome::Reply(r) => r,
            other => panic!("{other:?}"),
        }
    }

    fn create(&mut self, s: SessionId, path: &str, mode: CreateMode) -> Result<String, ErrorCode> {
        match self.op(s, Op::Create { path: path.into(), data: b"d".to_vec(), mode })? {
            Response::Created { path, .. } => Ok(path),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn every_command_takes_the_next_zxid_even_when_it_fails() {
    let mut h = Harness::new();
    let s = h.session();
    assert_eq!(h.sm.last_zxid(), 1);
    assert_eq!(h.create(s, "/a/b", CreateMode::Persistent), Err(ErrorCode::NoNode));
    assert_eq!(h.sm.last_zxid(), 2);
    h.create(s, "/a", CreateMode::Persistent).unwrap();
    assert_eq!(h.sm.tree().get("/a").unwrap().czxid, 3);
}

#[test]
fn sequence_suffix_counts_child_creates_not_deletes_like_zookeeper() {
    let mut h = Harness::new();
    let s = h.session();
    h.create(s, "/q", CreateMode::Persistent).unwrap();
    assert_eq!(h.create(s, "/q/n-", CreateMode::PersistentSequential).unwrap(), "/q/n-0000000000");
    h.op(s, Op::Delete { path: "/q/n-0000000000".into(), version: None }).unwrap();
    assert_eq!(h.create(s, "/q/n-", CreateMode::EphemeralSequential).unwrap(), "/q/n-0000000001");
    assert_eq!(h.create(s, "/q/", CreateMode::PersistentSequential).unwrap(), "/q/0000000002");
    let q = h.sm.tree().get("/q").unwrap().stat(0);
    assert_eq!((q.cversion, q.num_children), (4, 2));
}

#[test]
fn checks_come_in_zookeepers_order() {
    let mut h = Harness::new();
    let s = h.session();
    h.create(s, "/e", CreateMode::Ephemeral).unwrap();
    // An existing name wins over the ephemeral-parent rule, as in ZooKeeper's prep.
    assert_eq!(h.create(s, "/e", CreateMode::Persistent), Err(ErrorCode::NodeExists));
    assert_eq!(h.create(s, "/e/c", CreateMode::Persistent), Err(ErrorCode::NoChildrenForEphemerals));
    h.create(s, "/p", CreateMode::Persistent).unwrap();
    h.create(s, "/p/c", CreateMode::Persistent).unwrap();
    assert_eq!(h.op(s, Op::Delete { path: "/p".into(), version: Some(9) }), Err(ErrorCode::BadVersion));
    assert_eq!(h.op(s, Op::Delete { path: "/p".into(), version: Some(0) }), Err(ErrorCode::NotEmpty));
    assert_eq!(h.op(s, Op::Delete { path: "/".into(), version: None }), Err(ErrorCode::BadArguments));
    assert_eq!(h.create(s, "/", CreateMode::Persistent), Err(ErrorCode::NodeExists));
}

#[test]
fn stat_counters_follow_zookeeper() {
    let mut h = Harness::new();
    let s = h.session();
    h.create(s, "/n", CreateMode::Persistent).unwrap();
    let created = h.sm.tree().get("/n").unwrap().stat(0);
    assert_eq!((created.czxid, created.mzxid, created.pzxid, created.version), (2, 2, 2, 0));
    assert_eq!(created.ctime, created.mtime);
    h.op(s, Op::SetData { path: "/n".into(), data: b"four".to_vec(), version: Some(0) }).unwrap();
    h.create(s, "/n/c", CreateMode::Persistent).unwrap();
    let n = h.sm.tree().get("/n").unwrap().stat(0);
    assert_eq!((n.czxid, n.mzxid, n.pzxid, n.version, n.cversion), (2, 3, 4, 1, 1));
    assert_eq!((n.data_length, n.num_children, n.ephemeral_owner), (4, 1, None));
    assert!(n.mtime > n.ctime);
}

#[test]
fn failed_multi_restores_every_counter_and_reports_each_op() {
    let mut h = Harness::new();
    let s = h.session();
    h.create(s, "/m", CreateMode::Persistent).unwrap();
    h.create(s, "/m/old", CreateMode::Persistent).unwrap();
    let before = h.sm.tree().clone();
    let ops = vec![
        Op::Create { path: "/m/seq-".into(), data: vec![], mode: CreateMode::EphemeralSequential },
        Op::Delete { path: "/m/old".into(), version: None },
        Op::SetData { path: "/m".into(), data: b"x".to_vec(), version: None },
        Op::Check { path: "/m".into(), version: Some(0) },
    ];
    let (outcome, changes) = h.run(s, CommandOp::Multi(ops));
    let expected = vec![
        OpResult::Error(ErrorCode::RolledBack),
        OpResult::Error(ErrorCode::RolledBack),
        OpResult::Error(ErrorCode::RolledBack),
        OpResult::Error(ErrorCode::BadVersion),
    ];
    assert_eq!(outcome, Outcome::Reply(Ok(Response::Multi(expected))));
    assert!(changes.is_empty(), "a failed multi fires no watch");
    for path in ["/", "/m", "/m/old"] {
        assert_eq!(h.sm.tree().get(path), before.get(path), "{path}");
    }
    assert_eq!(h.sm.tree().len(), before.len());
    assert_eq!(h.sm.tree().ephemerals(s).count(), 0);
}

#[test]
fn successful_multi_applies_under_one_zxid() {
    let mut h = Harness::new();
    let s = h.session();
    let ops = vec![
        Op::Create { path: "/x".into(), data: vec![], mode: CreateMode::Persistent },
        Op::Create { path: "/x/y".into(), data: vec![], mode: CreateMode::Persistent },
        Op::Check { path: "/x".into(), version: Some(0) },
    ];
    let (outcome, _) = h.run(s, CommandOp::Multi(ops));
    assert!(matches!(outcome, Outcome::Reply(Ok(Response::Multi(ref r))) if r.len() == 3));
    let zxid = h.sm.last_zxid();
    assert_eq!(h.sm.tree().get("/x").unwrap().czxid, zxid);
    assert_eq!(h.sm.tree().get("/x/y").unwrap().czxid, zxid);
}

#[test]
fn ending_a_session_deletes_its_ephemerals_and_only_those() {
    let mut h = Harness::new();
    let (a, b) = (h.session(), h.session());
    h.create(a, "/a1", CreateMode::Ephemeral).unwrap();
    h.create(a, "/a2", CreateMode::EphemeralSequential).unwrap();
    h.create(b, "/b1", CreateMode::Ephemeral).unwrap();
    h.create(a, "/keep", CreateMode::Persistent).unwrap();
    let (outcome, changes) = h.run(a, CommandOp::ExpireSession);
    assert_eq!(outcome, Outcome::Reply(Ok(Response::Closed)));
    assert!(changes.contains(&Change::Deleted("/a1".into())));
    assert!(changes.contains(&Change::SessionEnded(a)));
    let left: Vec<&str> = h.sm.tree().get("/").unwrap().children.iter().collect();
    assert_eq!(left, ["b1", "keep"]);
    // The session is gone: its writes and a second close are refused.
    assert_eq!(h.create(a, "/late", CreateMode::Ephemeral), Err(ErrorCode::SessionExpired));
    assert_eq!(h.run(a, CommandOp::CloseSession).0, Outcome::Reply(Err(ErrorCode::SessionExpired)));
}

/// Exactly once (G14): the state machine keeps each session's last client write, so the same
/// write sent again (`Resent`, same xid) gets its first reply and changes nothing; an older
/// one is known applied but its reply is gone; a newer one was never applied and applies now.
#[test]
fn a_resent_write_is_applied_once_and_answered_with_its_first_reply() {
    let mut h = Harness::new();
    let s = h.session();
    let write = |xid: u64, op: CommandOp| Command { time_ms: 5, session: s, xid, op };
    let create = |path: &str| {
        CommandOp::Op(Op::Create { path: path.into(), data: b"x".to_vec(), mode: CreateMode::PersistentSequential })
    };
    let (first, _) = h.sm.apply_command(&write(4, create("/n-")));
    let zxid_after_first = h.sm.last_zxid();
    // The reply was lost; the client sends it again under the same xid.
    let (again, changes) = h.sm.apply_command(&write(4, CommandOp::Resent(Box::new(create("/n-")))));
    assert_eq!(again, first, "the original reply, zxid included");
    assert!(changes.is_empty(), "nothing changed, so no watch fires");
    assert_eq!(h.sm.last_zxid(), zxid_after_first, "no zxid taken");
    assert_eq!(h.sm.tree().get("/").unwrap().children.iter().count(), 1, "one sequential node, not two");
    // A later write, then a resend of the first: applied once, its reply no longer kept.
    h.sm.apply_command(&write(
        6,
        CommandOp::Op(Op::SetData { path: "/n-0000000000".into(), data: vec![], version: None }),
    ));
    let (older, _) = h.sm.apply_command(&write(4, CommandOp::Resent(Box::new(create("/n-")))));
    assert_eq!(older.outcome, Outcome::Reply(Err(ErrorCode::OutcomeUnknown)));
    assert_eq!(h.sm.tree().get("/").unwrap().children.iter().count(), 1);
    // A resent write that never reached the log before is applied now, once.
    let (late, _) = h.sm.apply_command(&write(9, CommandOp::Resent(Box::new(create("/n-")))));
    assert!(matches!(late.outcome, Outcome::Reply(Ok(Response::Created { .. }))), "{late:?}");
    assert_eq!(h.sm.tree().get("/").unwrap().children.iter().count(), 2);
    let (late_again, _) = h.sm.apply_command(&write(9, CommandOp::Resent(Box::new(create("/n-")))));
    assert_eq!(late_again, late);
    // The original, still queued at the member the client left, reaches the log after its
    // resend: a duplicate all the same.
    let (original, _) = h.sm.apply_command(&write(9, create("/n-")));
    assert_eq!(original, late);
    assert_eq!(h.sm.tree().get("/").unwrap().children.iter().count(), 2);
}

/// Xid 0 (ZooKeeper clients, the server's own commands) is never a dedup key, and a session's
/// record goes with the session.
#[test]
fn writes_without_an_xid_and_ended_sessions_leave_no_dedup_record() {
    let mut h = Harness::new();
    let s = h.session();
    let create = CommandOp::Op(Op::Create { path: "/a".into(), data: vec![], mode: CreateMode::Persistent });
    h.sm.apply_command(&Command { time_ms: 5, session: s, xid: 0, op: create.clone() });
    let resent = CommandOp::Resent(Box::new(create));
    let (again, _) = h.sm.apply_command(&Command { time_ms: 6, session: s, xid: 0, op: resent.clone() });
    assert_eq!(again.outcome, Outcome::Reply(Err(ErrorCode::NodeExists)), "applied as a new write");
    h.sm.apply_command(&Command { time_ms: 7, session: s, xid: 3, op: resent.clone() });
    h.run(s, CommandOp::CloseSession);
    let back: StateMachine = postcard::from_bytes(&postcard::to_allocvec(&h.sm).expect("encode")).expect("decode");
    assert!(!format!("{back:?}").contains("LastWrite"), "the closed session's record is gone");
}

/// G19: a session's command sent through a connection it has since left never applies:
/// once a later attachment is logged, a command fenced by an earlier one is refused,
/// changes nothing and takes no zxid; one fenced by the latest attachment applies.
#[test]
fn a_command_from_a_connection_the_session_left_is_refused_after_a_later_attachment() {
    let mut h = Harness::new();
    let s = h.session();
    let fenced = |epoch, path: &str| CommandOp::Fenced {
        epoch,
        op: Box::new(CommandOp::Op(Op::Create { path: path.into(), data: vec![], mode: CreateMode::Persistent })),
    };
    let apply = |h: &mut Harness, op| h.sm.apply_command(&Command { time_ms: 1, session: s, xid: 0, op });
    assert_eq!(h.sm.attached_at(s), s.0, "the first attachment is the creation");
    let (applied, _) = apply(&mut h, fenced(s.0, "/first"));
    assert!(matches!(applied.outcome, Outcome::Reply(Ok(Response::Created { .. }))), "{applied:?}");

    let (attach, _) = apply(&mut h, CommandOp::AttachIf { expected: s.0 });
    assert_eq!(attach.outcome, Outcome::Attached);
    assert_eq!(h.sm.attached_at(s), attach.zxid);
    let before = h.sm.last_zxid();
    let (late, changes) = apply(&mut h, fenced(s.0, "/late"));
    assert_eq!(late.outcome, Outcome::Reply(Err(ErrorCode::SessionMoved)));
    assert!(changes.is_empty());
    assert_eq!(h.sm.last_zxid(), before, "a refused command takes no zxid");
    assert!(h.sm.tree().get("/late").is_none());
    let (current, _) = apply(&mut h, fenced(attach.zxid, "/current"));
    assert!(matches!(current.outcome, Outcome::Reply(Ok(Response::Created { .. }))), "{current:?}");

    // Lock attempts are fenced the same way: a late acquire must not bring back a contender.
    let acquire = CommandOp::LockAcquire {
        dirs: vec!["/current".into()],
        tag: 1,
        kind: ward_proto::LockKind::Exclusive,
        data: vec![],
    };
    let (late_lock, _) = apply(&mut h, CommandOp::Fenced { epoch: s.0, op: Box::new(acquire) });
    assert_eq!(late_lock.outcome, Outcome::Reply(Err(ErrorCode::SessionMoved)));
    assert_eq!(h.sm.tree().get("/current").map(|n| n.children.len()), Some(0));

    // An ended session forgets its attachments; its commands are refused as expired.
    h.run(s, CommandOp::CloseSession);
    let (ended, _) = apply(&mut h, fenced(attach.zxid, "/after"));
    assert_eq!(ended.outcome, Outcome::Reply(Err(ErrorCode::SessionExpired)));
    let (attach_ended, _) = apply(&mut h, CommandOp::AttachIf { expected: attach.zxid });
    assert_eq!(attach_ended.outcome, Outcome::Reply(Err(ErrorCode::SessionExpired)));
}

/// Null data (docs/zookeeper-compat.md): a create or set a ZooKeeper client sent with null
/// data stores null, an empty one stays empty, and a failed multi puts back what was there.
#[test]
fn null_data_is_kept_apart_from_empty_data_and_rolled_back_with_its_multi() {
    let mut h = Harness::new();
    let s = h.session();
    let create = |path: &str| Op::Create { path: path.into(), data: Vec::new(), mode: CreateMode::Persistent };
    let set = |path: &str| Op::SetData { path: path.into(), data: Vec::new(), version: None };
    let nulls = |nulls: Vec<u32>, op: CommandOp| CommandOp::NullData { nulls, op: Box::new(op) };
    let null = |h: &Harness, path: &str| h.sm.tree().get(path).map(|n| n.is_null());

    h.run(s, nulls(vec![0], CommandOp::Op(create("/n"))));
    h.run(s, CommandOp::Op(create("/e")));
    assert_eq!((null(&h, "/n"), null(&h, "/e")), (Some(true), Some(false)));
    assert_eq!(h.sm.tree().get("/n").map(|n| n.stat(0).data_length), Some(0));

    h.op(s, Op::SetData { path: "/n".into(), data: b"x".to_vec(), version: None }).unwrap();
    assert_eq!(null(&h, "/n"), Some(false));
    h.run(s, nulls(vec![0], CommandOp::Op(set("/n"))));
    assert_eq!(null(&h, "/n"), Some(true));

    // Ops 0 and 2 null; the multi applies.
    h.run(s, nulls(vec![0, 2], CommandOp::Multi(vec![create("/m"), create("/m2"), set("/e")])));
    assert_eq!((null(&h, "/m"), null(&h, "/m2"), null(&h, "/e")), (Some(true), Some(false), Some(true)));

    // A multi that fails after nulling /m2's data leaves it as it was.
    h.run(s, nulls(vec![0], CommandOp::Multi(vec![set("/m2"), create("/missing/x")])));
    assert_eq!(null(&h, "/m2"), Some(false));
}

/// G19: an attachment logged by a handshake the client gave up (it reached the log after the
/// client attached elsewhere) does not take the session from the connection in use: it names
/// the attachment it saw, and is refused once that is no longer the latest.
#[test]
fn a_late_attachment_from_an_abandoned_handshake_is_refused() {
    let mut h = Harness::new();
    let s = h.session();
    let apply = |h: &mut Harness, op| h.sm.apply_command(&Command { time_ms: 1, session: s, xid: 0, op });
    // Two members both saw the session's creation as its attachment; the one the client now
    // uses logs its attachment first.
    let (current, _) = apply(&mut h, CommandOp::AttachIf { expected: s.0 });
    assert_eq!(current.outcome, Outcome::Attached);
    let (late, _) = apply(&mut h, CommandOp::AttachIf { expected: s.0 });
    assert_eq!(late.outcome, Outcome::Reply(Err(ErrorCode::SessionMoved)));
    assert_eq!(h.sm.attached_at(s), current.zxid, "the connection in use keeps the session");
    let write = CommandOp::Fenced {
        epoch: current.zxid,
        op: Box::new(CommandOp::Op(Op::Create { path: "/w".into(), data: vec![], mode: CreateMode::Persistent })),
    };
    let (written, _) = apply(&mut h, write);
    assert!(matches!(written.outcome, Outcome::Reply(Ok(Response::Created { .. }))), "{written:?}");
}
