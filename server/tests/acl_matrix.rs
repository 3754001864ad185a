//! G24, the ACL matrix: every operation on a node whose ACL grants one permission set (none,
//! each single bit, all) to one identity (`world:anyone`; alice's digest, as alice and as
//! alice with the wrong password; this client's address, and another network), through
//! Ward's own protocol and through the ZooKeeper port (kazoo), each outcome checked
//! against a small model of ZooKeeper 3.8's rules (docs/security.md, "Permissions"). Run
//! through kazoo against Apache ZooKeeper 3.8.0 the same script disagrees with the model on
//! one operation only: `exists` on a node the client may not read, which 3.8.0 answered and
//! 3.8.4 on refuses (Ward does as 3.8.4: docs/zookeeper-compat.md).

use std::fmt;
use ward_client::{digest_id, perms, Acl, Client, CreateMode, Error, Op};
use ward_testkit::zk::Kazoo;
use ward_testkit::{bounded, connect, connect_as, ServerProcess};

const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zk");
/// The super user of these servers: `super` with password `test` (kazoo's harness's).
const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";
const SUPER: &str = "super:test";

/// Grants: none, each permission alone, all of them.
const GRANTS: [i32; 7] = [0, perms::READ, perms::WRITE, perms::CREATE, perms::DELETE, perms::ADMIN, perms::ALL];
const OPS: [&str; 10] = ["get", "exists", "children", "set", "create", "delete", "get_acl", "set_acl", "check", "sync"];

/// One cell of the matrix: a node's ACL entry (`scheme`, `grant`) and whether the client
/// is the identity it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    scheme: &'static str,
    grant: i32,
    matches: bool,
}

impl Cell {
    fn all() -> Vec<Cell> {
        let mut cells = Vec::new();
        for scheme in ["world", "digest", "ip"] {
            for grant in GRANTS {
                let matches: &[bool] = if scheme == "world" { &[true] } else { &[true, false] };
                cells.extend(matches.iter().map(|&matches| Cell { scheme, grant, matches }));
            }
        }
        cells
    }

    fn acl(self) -> Vec<Acl> {
        let id = match (self.scheme, self.matches) {
            ("world", _) => "anyone".to_string(),
            ("digest", _) => digest_id("alice:secret"),
            (_, true) => "127.0.0.1".to_string(),
            (_, false) => "10.0.0.0/8".to_string(),
        };
        vec![Acl::new(self.grant, self.scheme, &id)]
    }

    fn node(self, root: &str) -> String {
        format!("{root}/{}-{}-{}", self.scheme, self.grant, if self.matches { "yes" } else { "no" })
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.scheme, self.grant, if self.matches { "yes" } else { "no" })
    }
}

/// The model: the permission each operation needs on the node (docs/security.md), granted
/// when the entry has one of its bits and names the client.
fn expected(op: &str, cell: Cell) -> &'static str {
    let needs = match op {
        "get" | "exists" | "children" | "check" => perms::READ,
        "set" => perms::WRITE,
        "create" => perms::CREATE,
        "delete" => perms::DELETE,
        "get_acl" => perms::READ | perms::ADMIN,
        "set_acl" => perms::ADMIN,
        _ => 0,
    };
    if needs == 0 || (cell.grant & needs != 0 && cell.matches) {
        "ok"
    } else {
        "NoAuth"
    }
}

/// Each observed line (`scheme grant matches op outcome`) against the model; every cell
/// and operation must be observed once. Returns the disagreements.
fn disagreements(observed: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut seen = 0;
    for cell in Cell::all() {
        for op in OPS {
            let prefix = format!("{cell} {op} ");
            let got = observed.lines().filter_map(|l| l.strip_prefix(&prefix)).collect::<Vec<_>>();
            seen += got.len();
            match got[..] {
                [got] if got == expected(op, cell) => {}
                _ => wrong.push(format!("{prefix}: got {got:?}, the model says {}", expected(op, cell))),
            }
        }
    }
    assert_eq!(seen, Cell::all().len() * OPS.len(), "one line per cell and operation:\n{observed}");
    wrong
}

/// What one operation of the matrix gets through Ward's client.
async fn attempt(client: &Client, op: &str, node: &str, acl: &[Acl]) -> String {
    let result = match op {
        "get" => client.get_data(node).await.map(drop),
        "exists" => client.exists(node).await.map(drop),
        "children" => client.get_children(node).await.map(drop),
        "set" => client.set_data(node, b"x", None).await.map(drop),
        "create" => client.create(&format!("{node}/n"), b"", CreateMode::Persistent).await.map(drop),
        "delete" => client.delete(&format!("{node}/c"), None).await,
        "get_acl" => client.get_acl(node).await.map(drop),
        "set_acl" => client.set_acl(node, acl, None).await.map(drop),
        "check" => match client.multi(vec![Op::Check { path: node.into(), version: None }]).await {
            Err(Error::MultiFailed { source, .. }) => Err(*source),
            other => other.map(drop),
        },
        _ => client.sync(node).await,
    };
    match result {
        Ok(()) => "ok".into(),
        Err(Error::NoAuth) => "NoAuth".into(),
        Err(other) => format!("{other:?}"),
    }
}

/// The matrix through Ward's own protocol, as lines like the kazoo script's.
async fn native_matrix(addr: &str) -> String {
    let root = "/matrix-ward";
    let admin = connect_as(addr, &[("digest", SUPER)]).await;
    let alice = connect_as(addr, &[("digest", "alice:secret")]).await;
    let eve = connect_as(addr, &[("digest", "alice:wrong")]).await;
    let plain = connect(addr).await;
    admin.create(root, b"", CreateMode::Persistent).await.expect("root");
    let mut lines = String::new();
    for cell in Cell::all() {
        let node = cell.node(root);
        admin.create_with_acl(&node, b"d", CreateMode::Persistent, &cell.acl()).await.expect("node");
        admin.create(&format!("{node}/c"), b"", CreateMode::Persistent).await.expect("child");
        let client = match (cell.scheme, cell.matches) {
            ("digest", true) => &alice,
            ("digest", false) => &eve,
            _ => &plain,
        };
        for op in OPS {
            let outcome = attempt(client, op, &node, &cell.acl()).await;
            lines.push_str(&format!("{cell} {op} {outcome}\n"));
            // Put back what a successful write changed, for the next operation.
            let _ = admin.delete(&format!("{node}/n"), None).await;
            let _ = admin.create(&format!("{node}/c"), b"", CreateMode::Persistent).await;
        }
    }
    lines
}

fn server() -> ServerProcess {
    ServerProcess::builder().zookeeper().in_memory().flags(&["--super-digest", SUPER_DIGEST]).start()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_and_permission_agrees_with_the_model_through_wards_protocol() {
    let ward = server();
    let observed = bounded(native_matrix(&ward.addr_str())).await;
    let wrong = disagreements(&observed);
    assert!(wrong.is_empty(), "{} disagreements with the model:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn every_operation_and_permission_agrees_with_the_model_through_the_zookeeper_port() {
    let Some(kazoo) = Kazoo::find() else { return };
    let ward = server();
    let observed = kazoo.run(SCRIPTS, "acl_matrix.py", &[&ward.zk_addr_str(), SUPER]);
    let wrong = disagreements(&observed);
    assert!(wrong.is_empty(), "{} disagreements with the model:\n{}", wrong.len(), wrong.join("\n"));
}

/// The model itself, on cells whose answer is plain: it must not agree by accident.
#[test]
fn the_model_follows_zookeepers_table() {
    let read_only = Cell { scheme: "world", grant: perms::READ, matches: true };
    assert_eq!(expected("get", read_only), "ok");
    assert_eq!(expected("set", read_only), "NoAuth");
    assert_eq!(expected("get_acl", read_only), "ok", "getACL needs READ or ADMIN");
    let admin_only = Cell { scheme: "digest", grant: perms::ADMIN, matches: true };
    assert_eq!(expected("get_acl", admin_only), "ok");
    assert_eq!(expected("exists", admin_only), "NoAuth");
    let stranger = Cell { scheme: "ip", grant: perms::ALL, matches: false };
    assert_eq!(expected("delete", stranger), "NoAuth");
    assert_eq!(expected("sync", stranger), "ok", "sync checks nothing");
    assert_eq!(Cell::all().len() * OPS.len(), 350);
}
