//! ZooKeeper 3.8's own Java client and zkCli (Debian's `zookeeper` package) against Ward.

use std::process::Command;
use std::time::Instant;
use ward_testkit::run::try_run;
use ward_testkit::zk::{expected, Kazoo, ZkJava, SCRIPT_LIMIT};
use ward_testkit::{ServerProcess, TempDir, DEADLINE};

/// The Java programs and their expected outputs.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zk");

/// Runs zkCli (`ZooKeeperMain`, with `jvm_args` before the class) on `script` against
/// `addr`; returns what it printed. zkCli prints some answers on stderr and some on stdout:
/// one stream keeps their order.
fn zkcli(java: &ZkJava, addr: &str, jvm_args: &[&str], script: &str) -> String {
    let mut zkcli = Command::new("sh");
    zkcli.args(["-c", "exec java \"$@\" org.apache.zookeeper.ZooKeeperMain -server \"$0\" 2>&1", addr]);
    zkcli.args(jvm_args).args(["-cp", java.classpath()]);
    let out = try_run(&mut zkcli, script.as_bytes(), SCRIPT_LIMIT).unwrap_or_else(|why| panic!("zkCli: {why}"));
    String::from_utf8_lossy(&out.stdout).to_string()
}

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
    let text = zkcli(&java, &ward.zk_addr_str(), &[], script);
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
// a container that never had a child, deleted after its grace; each deletion survives a
// kill -9 and a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkcli_creates_containers_and_ttl_nodes_that_the_cleanup_deletes() {
    let Some(java) = ZkJava::find() else { return };
    let flags = [&QUICK_CLEANUP[..], &["--container-max-never-used-ms", "300"]].concat();
    let mut ward = ServerProcess::builder().zookeeper().flags(&flags).start();
    let script = "create -c /zc c\ncreate /zc/kid k\ndelete /zc/kid\ncreate -t 300 /zt t\n\
                  create -s -t 300 /zs- s\ncreate -c /never n\nquit\n";
    let text = tokio::task::block_in_place(|| zkcli(&java, &ward.zk_addr_str(), &[], script));
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
        still_gone_after_kill_9(&mut ward, &["/zc", "/zt", "/zs-0000000002", "/never"]).await;
    })
    .await;
}

// docs/zookeeper-compat.md "TTL and container nodes", G20: Apache Curator's own recipes.
// An InterProcessMutex handed between two clients and a LeaderLatch create their parents
// as containers, which the cleanup deletes after use; a transaction with a container and a
// TTL create gets ZooKeeper 3.8's result types and keeps its connection (no SUSPENDED).
// The expected output is also what ZooKeeper 3.8.0 gives (run with
// -Dzookeeper.extendedTypesEnabled=true -Dznode.container.checkIntervalMs=100). Then a
// kill -9 and a restart whose cleanup cannot run yet: the deletions were logged commands,
// replayed at the same zxids (the root's counters are as they left them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_recipes_parents_are_containers_deleted_after_use_even_across_kill_9() {
    let Some(curator) = ZkJava::find().and_then(|java| java.with_curator()) else { return };
    let mut ward = ServerProcess::builder().zookeeper().flags(&QUICK_CLEANUP).start();
    let addr = ward.zk_addr_str();
    let got = tokio::task::block_in_place(|| curator.run(SCRIPTS, "CuratorRecipes.java", &[&addr]));
    assert_eq!(got, expected(SCRIPTS, "curator_recipes.expected"), "CuratorRecipes.java output differs");
    ward_testkit::bounded(still_gone_after_kill_9(&mut ward, &["/curator", "/tx-box", "/tx-ttl"])).await;
}

/// G20, G11: kills `ward` with kill -9 and restarts it with a cleanup that cannot run yet;
/// `paths`, deleted by the cleanup before, are still gone, and the root's counters are as
/// the deletions left them: they were logged commands, replayed at the same zxids.
async fn still_gone_after_kill_9(ward: &mut ServerProcess, paths: &[&str]) {
    let client = ward_testkit::connect(&ward.addr_str()).await;
    let root = client.exists("/").await.expect("stat /").expect("the root");
    drop(client);
    ward.kill9_now();
    tokio::task::block_in_place(|| ward.restart_with(&["--container-check-interval-ms", "3600000"]));
    let client = ward_testkit::connect(&ward.addr_str()).await;
    for path in paths {
        assert_eq!(client.exists(path).await.expect("exists"), None, "{path} is still gone");
    }
    let after = client.exists("/").await.expect("stat /").expect("the root");
    assert_eq!((after.pzxid, after.cversion), (root.pzxid, root.cversion), "the same deletions, same zxids");
}

/// Multi result types, null data and re-armed watches (docs/zookeeper-compat.md): in a multi
/// a plain create answers `create` and a container create `create2`, which the Java client's
/// MultiResponse reads; null data in a multi stays null; and 1,000 watches on 200-byte paths,
/// which the client re-sends in several SetWatches2 frames, all fire after the server
/// restarts. The expected output was recorded against Apache ZooKeeper 3.8.0.
#[test]
fn java_multi_result_types_null_data_and_watches_rearmed_in_frames_after_a_restart() {
    let Some(java) = ZkJava::find() else { return };
    // Durable, so that the session outlives the restart.
    let mut ward = ServerProcess::builder().zookeeper().start();
    let dir = TempDir::new("java-wire");
    let marker = dir.path().join("armed");
    let args = [ward.zk_addr_str(), marker.display().to_string()];
    let program = std::thread::spawn(move || java.run(SCRIPTS, "JavaWire.java", &[&args[0], &args[1]]));
    // The program creates the marker once its watches are armed, then waits for the restart.
    let start = Instant::now();
    while !marker.exists() {
        assert!(!program.is_finished(), "JavaWire.java ended before arming its watches");
        assert!(start.elapsed() < DEADLINE, "JavaWire.java did not arm its watches within {DEADLINE:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ward.restart();
    let got = program.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    assert_eq!(got, expected(SCRIPTS, "java_wire.expected"), "JavaWire.java output differs from java_wire.expected");
}

/// Replies over the request limit (docs/zookeeper-compat.md, "Reply limit"): a node of
/// 1,048,500 bytes and a listing of 80,000 children with 10-byte names, each reply over 1 MiB,
/// read back through kazoo and through zkCli (which, like any Java client, must be given a
/// jute.maxbuffer above the reply's size, as with ZooKeeper itself).
#[test]
fn a_node_near_1_mib_and_80000_children_read_back_through_kazoo_and_zkcli() {
    let (Some(kazoo), Some(java)) = (Kazoo::find(), ZkJava::find()) else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let got = kazoo.run(SCRIPTS, "large_replies.py", &[&ward.zk_addr_str()]);
    assert_eq!(got, expected(SCRIPTS, "large_replies.expected"), "large_replies.py output differs");

    let text = zkcli(&java, &ward.zk_addr_str(), &["-Djute.maxbuffer=4194304"], "get /big\nls /wide\nquit\n");
    let big = "x".repeat(1_048_500);
    assert!(text.lines().any(|line| line == big), "zkCli did not print /big's 1,048,500 bytes:\n{}", tail(&text));
    let names: Vec<String> = (0..80_000).map(|i| format!("{i:010}")).collect();
    let listing = format!("[{}]", names.join(", "));
    assert!(text.lines().any(|line| line == listing), "zkCli did not list /wide's 80,000 children:\n{}", tail(&text));
}

/// The end of a long output, for a failure message.
fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(2_000);
    text.get(start..).unwrap_or(text)
}
