//! ACLs in apply, without I/O (G24): the identities a command carries decide, against the
//! tree it changes, in ZooKeeper's order of checks; the ACL table keeps one slot per list in
//! use, through rollbacks.

use crate::acl::AuthId;
use crate::command::{Command, CommandOp, Outcome};
use crate::state::StateMachine;
use ward_proto::digest::digest_id;
use ward_proto::perms::{ADMIN, ALL, CREATE, DELETE, READ};
use ward_proto::{Acl, CreateMode, ErrorCode, LockKind, Op, OpResult, Response, SessionId, SessionSecret};

struct Harness {
    sm: StateMachine,
    session: SessionId,
}

fn alice() -> Vec<AuthId> {
    vec![AuthId::Ip("127.0.0.1".parse().expect("ip")), AuthId::Digest(digest_id("alice:secret"))]
}

fn eve() -> Vec<AuthId> {
    vec![AuthId::Ip("127.0.0.1".parse().expect("ip")), AuthId::Digest(digest_id("alice:guess"))]
}

fn alice_only(perms: i32) -> Vec<Acl> {
    vec![Acl::new(perms, "digest", &digest_id("alice:secret"))]
}

impl Harness {
    fn new() -> Harness {
        let mut sm = StateMachine::default();
        let open = CommandOp::CreateSession { timeout_ms: 5000, secret: SessionSecret([7; 16]), owner: None };
        let session = match sm.apply_command(&Command { time_ms: 1, session: SessionId(0), xid: 0, op: open }).0.outcome
        {
            Outcome::SessionCreated(id) => id,
            other => panic!("{other:?}"),
        };
        Harness { sm, session }
    }

    fn run(&mut self, ids: &[AuthId], op: CommandOp) -> Result<Response, ErrorCode> {
        let op = CommandOp::As { ids: ids.to_vec(), op: Box::new(op) };
        match self.sm.apply_command(&Command { time_ms: 2, session: self.session, xid: 0, op }).0.outcome {
            Outcome::Reply(reply) => reply,
            other => panic!("{other:?}"),
        }
    }

    fn op(&mut self, ids: &[AuthId], op: Op) -> Result<Response, ErrorCode> {
        self.run(ids, CommandOp::Op(op))
    }

    fn create(&mut self, ids: &[AuthId], path: &str, acl: Vec<Acl>) -> Result<Response, ErrorCode> {
        self.op(ids, Op::CreateWithAcl { path: path.into(), data: Vec::new(), mode: CreateMode::Persistent, acl })
    }

    fn set(&mut self, ids: &[AuthId], path: &str) -> Result<Response, ErrorCode> {
        self.op(ids, Op::SetData { path: path.into(), data: b"x".to_vec(), version: None })
    }

    fn acl(&self, path: &str) -> (Vec<Acl>, i32) {
        let node = self.sm.tree().get(path).expect("node");
        (self.sm.tree().acl(node).to_vec(), self.sm.tree().stat(node).aversion)
    }
}

#[test]
fn a_digest_protected_node_refuses_other_identities() {
    let mut h = Harness::new();
    h.create(&alice(), "/p", alice_only(ALL)).expect("create");
    assert_eq!(h.set(&eve(), "/p"), Err(ErrorCode::NoAuth));
    assert_eq!(h.set(&[], "/p"), Err(ErrorCode::NoAuth), "no identity at all");
    assert_eq!(h.create(&eve(), "/p/c", Acl::open()), Err(ErrorCode::NoAuth));
    h.create(&alice(), "/p/c", Acl::open()).expect("alice creates below");
    assert_eq!(h.op(&eve(), Op::Delete { path: "/p/c".into(), version: None }), Err(ErrorCode::NoAuth));
    assert!(matches!(h.set(&alice(), "/p"), Ok(Response::DataSet(_))));
    assert!(matches!(h.set(&[AuthId::Super], "/p"), Ok(Response::DataSet(_))), "the super user passes");
    h.op(&alice(), Op::Delete { path: "/p/c".into(), version: None }).expect("alice deletes");
}

/// ZooKeeper's order: the ACL given (InvalidAcl), the parent (NoNode), the parent's
/// permission (NoAuth), then the tree's own checks (NodeExists, versions, NotEmpty).
#[test]
fn checks_come_in_zookeepers_order() {
    let mut h = Harness::new();
    assert_eq!(h.create(&alice(), "/missing/x", vec![]), Err(ErrorCode::InvalidAcl), "before NoNode");
    assert_eq!(h.create(&alice(), "/missing/x", Acl::open()), Err(ErrorCode::NoNode));
    h.create(&alice(), "/ro", vec![Acl::new(READ, "world", "anyone")]).expect("create");
    h.create(&[AuthId::Super], "/ro/x", Acl::open()).expect("super creates");
    assert_eq!(h.create(&eve(), "/ro/x", Acl::open()), Err(ErrorCode::NoAuth), "before NodeExists");
    assert_eq!(h.create(&eve(), "/ro/y", vec![Acl::new(ALL, "auth", "")]), Err(ErrorCode::NoAuth));
    assert_eq!(
        h.op(&eve(), Op::Delete { path: "/ro/none".into(), version: None }),
        Err(ErrorCode::NoAuth),
        "a delete checks the parent before the node"
    );
    assert_eq!(h.op(&eve(), Op::SetData { path: "/none".into(), data: vec![], version: None }), Err(ErrorCode::NoNode));
    assert_eq!(
        h.op(&eve(), Op::SetData { path: "/ro".into(), data: vec![], version: Some(9) }),
        Err(ErrorCode::NoAuth)
    );
    assert_eq!(h.op(&eve(), Op::Delete { path: "/".into(), version: None }), Err(ErrorCode::BadArguments));
    assert_eq!(
        h.create(&[AuthId::Ip("10.0.0.1".parse().expect("ip"))], "/a", vec![Acl::new(ALL, "auth", "")]),
        Err(ErrorCode::InvalidAcl)
    );
}

#[test]
fn set_acl_needs_admin_and_checks_the_aversion() {
    let mut h = Harness::new();
    h.create(&alice(), "/n", alice_only(READ | ADMIN)).expect("create");
    let set = |acl: Vec<Acl>, version| Op::SetAcl { path: "/n".into(), acl, version };
    assert_eq!(h.op(&eve(), set(Acl::open(), None)), Err(ErrorCode::NoAuth));
    assert_eq!(h.op(&alice(), set(vec![], None)), Err(ErrorCode::InvalidAcl));
    assert_eq!(h.op(&alice(), set(Acl::open(), Some(3))), Err(ErrorCode::BadVersion));
    assert_eq!(
        h.op(&alice(), Op::SetAcl { path: "/none".into(), acl: Acl::open(), version: None }),
        Err(ErrorCode::NoNode)
    );
    match h.op(&alice(), set(vec![Acl::new(ALL, "auth", "x")], Some(0))) {
        Ok(Response::AclSet(stat)) => assert_eq!(stat.aversion, 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.acl("/n"), (alice_only(ALL), 1), "auth expands to alice's digest, not her address");
    assert_eq!(h.sm.tree().get("/n").expect("node").version, 0, "data version untouched");
}

#[test]
fn a_failed_multi_puts_acls_back_and_frees_what_it_made() {
    let mut h = Harness::new();
    h.create(&alice(), "/n", alice_only(ALL)).expect("create");
    let ops = vec![
        Op::SetAcl { path: "/n".into(), acl: Acl::read_only(), version: None },
        Op::CreateWithAcl { path: "/m".into(), data: vec![], mode: CreateMode::Persistent, acl: alice_only(READ) },
        Op::Check { path: "/none".into(), version: None },
    ];
    match h.run(&alice(), CommandOp::Multi(ops)) {
        Ok(Response::Multi(results)) => assert_eq!(results[2], OpResult::Error(ErrorCode::NoNode)),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.acl("/n"), (alice_only(ALL), 0));
    assert!(h.sm.tree().get("/m").is_none());
    assert_eq!(h.sm.tree().acl_table().len(), 2, "open and /n's: the lists the multi made are freed");
    h.op(&alice(), Op::Delete { path: "/n".into(), version: None }).expect("delete");
    assert_eq!(h.sm.tree().acl_table().len(), 1, "only the open slot once no node uses a list");
}

#[test]
fn many_nodes_share_one_slot() {
    let mut h = Harness::new();
    for i in 0..100 {
        h.create(&alice(), &format!("/n{i}"), alice_only(ALL)).expect("create");
    }
    assert_eq!(h.sm.tree().acl_table().len(), 2);
}

/// Lock commands check the directory: joining needs CREATE on it, leaving DELETE.
#[test]
fn lock_commands_check_the_directory() {
    let mut h = Harness::new();
    h.create(&alice(), "/lock", alice_only(CREATE | DELETE | READ)).expect("create");
    let acquire =
        |tag| CommandOp::LockAcquire { dirs: vec!["/lock".into()], tag, kind: LockKind::Exclusive, data: vec![] };
    assert_eq!(h.run(&eve(), acquire(1)), Err(ErrorCode::NoAuth));
    assert!(matches!(h.run(&alice(), acquire(2)), Ok(Response::Lock(state)) if state.held));
    let release = |tag| CommandOp::LockRelease { dirs: vec!["/lock".into()], tag };
    assert_eq!(h.run(&eve(), release(2)), Err(ErrorCode::NoAuth));
    assert_eq!(h.sm.tree().get("/lock").map(|n| n.children.len()), Some(1));
    h.run(&alice(), release(2)).expect("release");
    assert_eq!(h.sm.tree().get("/lock").map(|n| n.children.len()), Some(0));
    let semaphore = CommandOp::LockAcquire {
        dirs: vec!["/lock".into()],
        tag: 3,
        kind: LockKind::Semaphore { permits: 2 },
        data: vec![],
    };
    assert_eq!(h.run(&alice(), semaphore), Err(ErrorCode::NoAuth), "a semaphore's permits are written: WRITE");
    assert_eq!(h.sm.tree().get("/lock").map(|n| n.data().len()), Some(0), "and not written");
}

/// A command without identities (the server's own, or one logged before ACLs) counts as
/// nobody: only `world:anyone` grants it anything.
#[test]
fn a_command_without_identities_is_nobody() {
    let mut h = Harness::new();
    h.create(&alice(), "/p", alice_only(ALL)).expect("create");
    let set = Op::SetData { path: "/p".into(), data: vec![], version: None };
    let plain = Command { time_ms: 3, session: h.session, xid: 0, op: CommandOp::Op(set) };
    assert_eq!(h.sm.apply_command(&plain).0.outcome, Outcome::Reply(Err(ErrorCode::NoAuth)));
}

/// The `x509` scheme: a connection whose TLS handshake showed a client certificate has its
/// subject among its identities, and ACLs naming that subject (or `auth`) grant to it.
#[test]
fn a_certificate_subject_is_an_identity() {
    let mut h = Harness::new();
    let subject = "CN=carol,O=Example".to_string();
    let carol = crate::acl::Identity::for_connection("127.0.0.1".parse().expect("ip"), Some(subject.clone()));
    h.create(carol.ids(), "/c", vec![Acl::new(ALL, "auth", "")]).expect("create");
    assert_eq!(h.acl("/c"), (vec![Acl::new(ALL, "x509", &subject)], 0), "auth names the certificate's subject");
    assert!(matches!(h.set(carol.ids(), "/c"), Ok(Response::DataSet(_))));
    let other = crate::acl::Identity::for_connection("127.0.0.1".parse().expect("ip"), Some("CN=mallory".into()));
    assert_eq!(h.set(other.ids(), "/c"), Err(ErrorCode::NoAuth));
}
