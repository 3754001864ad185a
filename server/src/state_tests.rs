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
    let q = h.sm.tree().get("/q").unwrap().stat();
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
    let created = h.sm.tree().get("/n").unwrap().stat();
    assert_eq!((created.czxid, created.mzxid, created.pzxid, created.version), (2, 2, 2, 0));
    assert_eq!(created.ctime, created.mtime);
    h.op(s, Op::SetData { path: "/n".into(), data: b"four".to_vec(), version: Some(0) }).unwrap();
    h.create(s, "/n/c", CreateMode::Persistent).unwrap();
    let n = h.sm.tree().get("/n").unwrap().stat();
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
