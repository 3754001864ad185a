//! kazoo against Ward's ZooKeeper port: every op, with ZooKeeper's error codes, stats and
//! multi results (the expected output was recorded against Apache ZooKeeper 3.8.0).

use ward_testkit::zk::{expected, Kazoo};
use ward_testkit::ServerProcess;

/// The kazoo scripts and their expected outputs.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zk");

#[test]
fn every_kazoo_op_answers_as_zookeeper_does() {
    let Some(kazoo) = Kazoo::find() else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let got = kazoo.run(SCRIPTS, "ops.py", &[&ward.zk_addr_str()]);
    assert_eq!(got, expected(SCRIPTS, "ops.expected"), "ops.py output differs from ops.expected");
}

/// Null data (docs/zookeeper-compat.md, "Null and empty data"): kazoo's own
/// test_create_null_data and test_set_null_data, and their empty-string twins, pass; a node
/// created or set with null data reads back as null, one with empty data as empty.
#[test]
fn kazoo_null_data_tests_pass_and_empty_data_stays_empty() {
    let Some(kazoo) = Kazoo::find() else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let got = kazoo.run(SCRIPTS, "null_data.py", &[&ward.zk_addr_str()]);
    assert_eq!(got, expected(SCRIPTS, "null_data.expected"), "null_data.py output differs from null_data.expected");
}

/// Null data is durable (docs/zookeeper-compat.md, "Null and empty data"): after a restart,
/// which replays the log, a null node still reads null and an empty one empty.
#[test]
fn null_data_stays_null_across_a_restart() {
    let Some(kazoo) = Kazoo::find() else { return };
    let mut ward = ServerProcess::builder().zookeeper().start();
    kazoo.run(SCRIPTS, "null_restart.py", &[&ward.zk_addr_str(), "write"]);
    ward.restart();
    let got = kazoo.run(SCRIPTS, "null_restart.py", &[&ward.zk_addr_str(), "read"]);
    assert_eq!(got, "/r-null None\n/r-empty b''\n/r-set None\n");
}

/// G24 through the ZooKeeper port: kazoo's own authentication and ACL tests pass (a
/// digest-protected node refuses reads and writes without the right `add_auth`, an unknown
/// scheme fails with AuthFailed and closes the connection, `get_acls`/`set_acls` round-trip
/// with versions, `makepath` through incompatible ACLs gives NoAuth, auth is shown again on
/// reconnect), and every operation on a protected node answers as ZooKeeper 3.8.0 does for
/// the owner, a wrong password and no credentials, with the super user passing every check.
#[test]
fn kazoo_auth_and_acl_tests_pass_as_on_zookeeper() {
    let Some(kazoo) = Kazoo::find() else { return };
    let super_digest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";
    let ward = ServerProcess::builder().zookeeper().in_memory().flags(&["--super-digest", super_digest]).start();
    let got = kazoo.run(SCRIPTS, "auth_acl.py", &[&ward.zk_addr_str()]);
    assert_eq!(got, expected(SCRIPTS, "auth_acl.expected"), "auth_acl.py output differs from auth_acl.expected");
    let log = ward.log_tail();
    assert!(!log.contains("D/InIHSb7yEEbrWz8b9l71RjZJU") && !log.contains("secret"), "a secret in the log:\n{log}");
}
