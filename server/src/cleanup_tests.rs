//! Containers and TTL nodes in the state machine alone: when `DeleteIfUnused` deletes and
//! when it keeps, by ZooKeeper's rules (docs/zookeeper-compat.md, "TTL and container
//! nodes"), judged at apply by the command's own time.

use crate::command::{Change, Command, CommandOp, Outcome};
use crate::prep::prep;
use crate::state::StateMachine;
use crate::tree::NodeKind;
use ward_proto::{CreateMode, ErrorCode, Op, Request, Response, SessionId, SessionSecret, MAX_TTL_MS};

/// Creation time of every node below: commands carry their own clock, so time is whatever
/// a test says.
const T: i64 = 1_000_000;

struct World {
    sm: StateMachine,
    session: SessionId,
}

impl World {
    fn new() -> World {
        let mut sm = StateMachine::default();
        let open = CommandOp::CreateSession { timeout_ms: 5000, secret: SessionSecret([3; 16]), owner: None };
        let session = match sm.apply(&Command { time_ms: T, session: SessionId(0), xid: 0, op: open }).0 {
            Outcome::SessionCreated(id) => id,
            other => panic!("{other:?}"),
        };
        World { sm, session }
    }

    fn at(&mut self, time_ms: i64, op: Op) -> Result<Response, ErrorCode> {
        let cmd = Command { time_ms, session: self.session, xid: 0, op: CommandOp::Op(op) };
        match self.sm.apply(&cmd).0 {
            Outcome::Reply(reply) => reply,
            other => panic!("{other:?}"),
        }
    }

    fn create(&mut self, path: &str, mode: CreateMode) -> String {
        match self.at(T, Op::Create { path: path.into(), data: Vec::new(), mode }) {
            Ok(Response::Created { path, .. }) => path,
            other => panic!("create {path}: {other:?}"),
        }
    }

    /// A multi that fails at its last op, so rolls back.
    fn multi(&mut self, ops: Vec<Op>) {
        let cmd = Command { time_ms: T, session: self.session, xid: 0, op: CommandOp::Multi(ops) };
        match self.sm.apply(&cmd).0 {
            Outcome::Reply(Ok(Response::Multi(results))) => {
                assert!(results.iter().all(|r| matches!(r, ward_proto::OpResult::Error(_))), "{results:?}")
            }
            other => panic!("{other:?}"),
        }
    }

    fn delete(&mut self, path: &str) {
        self.at(T, Op::Delete { path: path.into(), version: None }).expect("delete");
    }

    /// The leader's cleanup command for `path`, applied at `time_ms`.
    fn cleanup(&mut self, time_ms: i64, path: &str, never_used_ms: u64) -> (Result<Response, ErrorCode>, Vec<Change>) {
        let op = CommandOp::DeleteIfUnused { path: path.into(), never_used_ms };
        let (applied, changes) = self.sm.apply_command(&Command { time_ms, session: SessionId(0), xid: 0, op });
        match applied.outcome {
            Outcome::Reply(reply) => (reply, changes),
            other => panic!("{other:?}"),
        }
    }

    fn exists(&self, path: &str) -> bool {
        self.sm.tree().get(path).is_some()
    }
}

#[test]
fn a_container_goes_once_its_last_child_has_gone_and_not_before() {
    let mut w = World::new();
    w.create("/c", CreateMode::Container);
    w.create("/c/a", CreateMode::Persistent);
    w.create("/c/b", CreateMode::Ephemeral);
    assert_eq!(w.sm.tree().unused_nodes(T + 1, 0, 10), Vec::<String>::new(), "not a candidate with children");
    assert_eq!(w.cleanup(T + 1, "/c", 0).0, Err(ErrorCode::NotEmpty));
    w.delete("/c/a");
    assert_eq!(w.cleanup(T + 1, "/c", 0).0, Err(ErrorCode::NotEmpty), "one child left");
    w.delete("/c/b");
    assert_eq!(w.sm.tree().unused_nodes(T + 1, 0, 10), ["/c"]);
    let zxid = w.sm.last_zxid();
    let (reply, changes) = w.cleanup(T + 1, "/c", 0);
    assert_eq!(reply, Ok(Response::Deleted));
    assert_eq!(w.sm.last_zxid(), zxid + 1, "the cleanup is a command of its own, with its own zxid");
    assert!(!w.exists("/c"));
    assert_eq!(changes, [Change::Deleted("/c".into()), Change::ChildrenChanged("/".into())], "watches fire");
    assert_eq!(w.cleanup(T + 2, "/c", 0).0, Err(ErrorCode::NoNode), "a second proposal finds nothing");
}

/// ZooKeeper keeps a container that never had a child, so that one created just before a
/// check survives until its first child arrives; past the never-used grace it goes too.
#[test]
fn a_container_that_never_had_a_child_stays_until_its_grace_is_over() {
    let mut w = World::new();
    w.create("/fresh", CreateMode::Container);
    assert_eq!(w.sm.tree().unused_nodes(T + 10_000_000, 0, 10), Vec::<String>::new(), "grace 0: kept for good");
    assert_eq!(w.cleanup(T + 10_000_000, "/fresh", 0).0, Err(ErrorCode::BadVersion));
    assert_eq!(w.cleanup(T + 500, "/fresh", 1000).0, Err(ErrorCode::BadVersion), "within its grace");
    assert_eq!(w.cleanup(T + 1000, "/fresh", 1000).0, Err(ErrorCode::BadVersion), "at the limit still");
    assert!(w.exists("/fresh"));
    assert_eq!(w.sm.tree().unused_nodes(T + 1001, 1000, 10), ["/fresh"]);
    assert_eq!(w.cleanup(T + 1001, "/fresh", 1000).0, Ok(Response::Deleted));
    assert!(!w.exists("/fresh"));
}

#[test]
fn a_ttl_node_goes_once_childless_and_unchanged_for_its_ttl_by_the_commands_clock() {
    let mut w = World::new();
    w.create("/t", CreateMode::PersistentWithTtl { ttl_ms: 100 });
    assert_eq!(w.sm.tree().get("/t").map(|n| n.kind()), Some(NodeKind::Ttl(100)));
    assert_eq!(w.cleanup(T + 50, "/t", 0).0, Err(ErrorCode::BadVersion), "not expired");
    assert_eq!(w.cleanup(T + 100, "/t", 0).0, Err(ErrorCode::BadVersion), "expires after, not at, its TTL");
    // A child keeps it, however old.
    w.create("/t/child", CreateMode::Persistent);
    assert_eq!(w.cleanup(T + 5_000, "/t", 0).0, Err(ErrorCode::NotEmpty));
    w.delete("/t/child");
    assert_eq!(w.sm.tree().unused_nodes(T + 5_000, 0, 10), ["/t"], "a child does not refresh its TTL");
    assert_eq!(w.cleanup(T + 5_000, "/t", 0).0, Ok(Response::Deleted));

    let name = w.create("/seq-", CreateMode::PersistentSequentialWithTtl { ttl_ms: 100 });
    assert_eq!(name, "/seq-0000000001", "named like any sequential node");
    assert_eq!(w.cleanup(T + 101, &name, 0).0, Ok(Response::Deleted));
}

/// The leader found the node unused, but a write ordered before its cleanup command
/// used it again: apply judges the node as the log left it.
#[test]
fn a_node_used_after_the_proposal_is_kept() {
    let mut w = World::new();
    w.create("/t", CreateMode::PersistentWithTtl { ttl_ms: 100 });
    let scan = T + 200;
    assert_eq!(w.sm.tree().unused_nodes(scan, 0, 10), ["/t"]);
    w.at(scan + 1, Op::SetData { path: "/t".into(), data: b"again".to_vec(), version: None }).expect("set");
    assert_eq!(w.cleanup(scan, "/t", 0).0, Err(ErrorCode::BadVersion), "a set renews a TTL");
    assert!(w.exists("/t"));

    w.create("/c", CreateMode::Container);
    w.create("/c/x", CreateMode::Persistent);
    w.delete("/c/x");
    assert_eq!(w.sm.tree().unused_nodes(scan, 0, 10), ["/c"]);
    w.create("/c/y", CreateMode::Persistent);
    assert_eq!(w.cleanup(scan, "/c", 0).0, Err(ErrorCode::NotEmpty), "a new child keeps it");
    assert!(w.exists("/c/y"));
}

#[test]
fn only_containers_and_ttl_nodes_are_ever_cleaned_up() {
    let mut w = World::new();
    w.create("/p", CreateMode::Persistent);
    w.create("/p/x", CreateMode::Persistent);
    w.delete("/p/x");
    w.create("/e", CreateMode::Ephemeral);
    assert_eq!(w.sm.tree().unused_nodes(i64::MAX, 1, 10), Vec::<String>::new());
    assert_eq!(w.cleanup(i64::MAX, "/p", 1).0, Err(ErrorCode::BadVersion));
    assert_eq!(w.cleanup(i64::MAX, "/e", 1).0, Err(ErrorCode::BadVersion));
    assert!(w.exists("/p") && w.exists("/e"));
    assert_eq!(w.sm.tree().get("/e").and_then(|n| n.ephemeral_owner()), Some(w.session));
    assert_eq!(w.sm.tree().get("/p").map(|n| n.stat(0).ephemeral_owner), Some(None));
}

/// The index the cleanup reads follows every create and delete, a rolled-back multi
/// included.
#[test]
fn the_index_of_containers_and_ttl_nodes_follows_creates_deletes_and_rollbacks() {
    let mut w = World::new();
    let ttl = CreateMode::PersistentWithTtl { ttl_ms: 1 };
    let create = |path: &str, mode| Op::Create { path: path.into(), data: Vec::new(), mode };
    let delete = |path: &str| Op::Delete { path: path.into(), version: None };
    w.multi(vec![create("/c", CreateMode::Container), create("/missing/x", ttl)]);
    assert_eq!(w.sm.tree().swept_len(), 0, "the rolled-back create left no trace");
    w.create("/c", CreateMode::Container);
    w.create("/t", ttl);
    assert_eq!(w.sm.tree().swept_len(), 2);
    w.multi(vec![delete("/t"), delete("/nope")]);
    assert_eq!(w.sm.tree().unused_nodes(T + 2, 0, 10), ["/t"], "a rolled-back delete puts the node back");
    w.delete("/t");
    w.delete("/c");
    assert_eq!(w.sm.tree().swept_len(), 0);
}

#[test]
fn a_ttl_must_be_positive_and_fit_in_40_bits() {
    let create = |ttl_ms| Request::Create {
        path: "/t".into(),
        data: Vec::new(),
        mode: CreateMode::PersistentWithTtl { ttl_ms },
    };
    assert_eq!(prep(create(0), 1024), Err(ErrorCode::BadArguments));
    assert_eq!(prep(create(MAX_TTL_MS + 1), 1024), Err(ErrorCode::BadArguments));
    assert!(prep(create(1), 1024).is_ok());
    assert!(prep(create(MAX_TTL_MS), 1024).is_ok());
    let seq = CreateMode::PersistentSequentialWithTtl { ttl_ms: 0 };
    let in_multi = Request::Multi(vec![Op::Create { path: "/s-".into(), data: Vec::new(), mode: seq }]);
    assert_eq!(prep(in_multi, 1024), Err(ErrorCode::BadArguments));
}
