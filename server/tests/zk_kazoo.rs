//! kazoo against Ward's ZooKeeper port: every op, with ZooKeeper's error codes, stats and
//! multi results (the expected output was recorded against Apache ZooKeeper 3.8.0).

mod zk_support;

use zk_support::*;

#[test]
fn every_kazoo_op_answers_as_zookeeper_does() {
    let Some(kazoo) = Kazoo::find() else { return };
    let ward = Ward::start();
    let got = python(&kazoo, "ops.py", &[&ward.zk_addr]);
    assert_eq!(got, expected("ops.expected"), "ops.py output differs from ops.expected");
}
