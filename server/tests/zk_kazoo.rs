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
