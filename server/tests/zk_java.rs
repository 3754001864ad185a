//! ZooKeeper 3.8's own Java client and zkCli (Debian's `zookeeper` package) against Ward.

use std::process::Command;
use ward_testkit::run::try_run;
use ward_testkit::zk::{expected, ZkJava, SCRIPT_LIMIT};
use ward_testkit::ServerProcess;

/// The Java programs and their expected outputs.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zk");

#[test]
fn java_client_ops_watches_reconnect_reattach_and_expiry() {
    let Some(java) = ZkJava::find() else { return };
    // A short minimum timeout lets the expiry case finish in about a second.
    let ward = ServerProcess::builder().zookeeper().in_memory().flags(&["--min-session-timeout-ms", "1000"]).start();
    let got = java.run(SCRIPTS, "JavaOps.java", &[&ward.zk_addr_str()]);
    assert_eq!(got, expected(SCRIPTS, "java_ops.expected"), "JavaOps.java output differs from java_ops.expected");
}

#[test]
fn zkcli_creates_gets_sets_lists_stats_and_deletes() {
    let Some(java) = ZkJava::find() else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let script = "create /cli hello\nget /cli\nset /cli world\nget /cli\nls /\nstat /cli\n\
                  create /cli/a\ncreate /cli/a/b\ndelete /cli/a/b\nls /cli/a\ndeleteall /cli\nls /\nstat /cli\nquit\n";
    // zkCli prints some answers on stderr and some on stdout: one stream keeps their order.
    let mut zkcli = Command::new("sh");
    zkcli.args([
        "-c",
        "exec java -cp \"$0\" org.apache.zookeeper.ZooKeeperMain -server \"$1\" 2>&1",
        java.classpath(),
        &ward.zk_addr_str(),
    ]);
    let out = try_run(&mut zkcli, script.as_bytes(), SCRIPT_LIMIT).unwrap_or_else(|why| panic!("zkCli: {why}"));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let expect_in_order = [
        "Created /cli\n",
        "hello\n",
        "world\n",
        "[cli]\n",
        "dataVersion = 1\n",
        "ephemeralOwner = 0x0\n",
        "dataLength = 5\n",
        "Created /cli/a\n",
        "Created /cli/a/b\n",
        "[]\n",
        "[]\n",
        "Node does not exist: /cli\n",
    ];
    let mut at = 0;
    for want in expect_in_order {
        match text[at..].find(want) {
            Some(i) => at += i + want.len(),
            None => panic!("zkCli output lacks {want:?} after byte {at}:\n{text}"),
        }
    }
}

/// A check interval short enough that a test sees several checks in a second.
const QUICK_CLEANUP: [&str; 2] = ["--container-check-interval-ms", "100"];

// docs/zookeeper-compat.md "TTL and container nodes", G20: the Java client's
// PERSISTENT_WITH_TTL, PERSISTENT_SEQUENTIAL_WITH_TTL and CONTAINER, and Curator-style
// container lock parents, deleted by the cleanup once unused.
#[test]
fn java_client_ttl_and_container_nodes_are_deleted_once_unused() {
    let Some(java) = ZkJava::find() else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().flags(&QUICK_CLEANUP).start();
    let got = java.run(SCRIPTS, "ContainersAndTtl.java", &[&ward.zk_addr_str()]);
    assert_eq!(got, expected(SCRIPTS, "containers_and_ttl.expected"), "ContainersAndTtl.java output differs");
}

// docs/zookeeper-compat.md "TTL and container nodes", G20: zkCli's `create -c` and
// `create -t`, with no server flag (ZooKeeper's needs zookeeper.extendedTypesEnabled), and
// a container that never had a child, deleted after its grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkcli_creates_containers_and_ttl_nodes_that_the_cleanup_deletes() {
    let Some(java) = ZkJava::find() else { return };
    let flags = [&QUICK_CLEANUP[..], &["--container-max-never-used-ms", "300"]].concat();
    let ward = ServerProcess::builder().zookeeper().flags(&flags).start();
    let script = "create -c /zc c\ncreate /zc/kid k\ndelete /zc/kid\ncreate -t 300 /zt t\n\
                  create -s -t 300 /zs- s\ncreate -c /never n\nquit\n";
    let mut zkcli = Command::new("sh");
    zkcli.args([
        "-c",
        "exec java -cp \"$0\" org.apache.zookeeper.ZooKeeperMain -server \"$1\" 2>&1",
        java.classpath(),
        &ward.zk_addr_str(),
    ]);
    let out = tokio::task::block_in_place(|| try_run(&mut zkcli, script.as_bytes(), SCRIPT_LIMIT));
    let text = String::from_utf8_lossy(&out.unwrap_or_else(|why| panic!("zkCli: {why}")).stdout).to_string();
    for want in ["Created /zc\n", "Created /zc/kid\n", "Created /zt\n", "Created /zs-0000000002\n", "Created /never\n"]
    {
        assert!(text.contains(want), "zkCli output lacks {want:?}:\n{text}");
    }
    ward_testkit::bounded(async {
        let client = ward_testkit::connect(&ward.addr_str()).await;
        for path in ["/zc", "/zt", "/zs-0000000002", "/never"] {
            let gone = || async { matches!(client.exists(path).await, Ok(None)) };
            ward_testkit::wait_until(&format!("{path} to be deleted"), ward_testkit::DEADLINE, gone).await;
        }
    })
    .await;
}
