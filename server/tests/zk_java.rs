//! ZooKeeper 3.8's own Java client and zkCli (Debian's `zookeeper` package) against Ward.

mod zk_support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;
use zk_support::*;

#[test]
fn java_client_ops_watches_reconnect_reattach_and_expiry() {
    let Some(classpath) = zookeeper_classpath() else { return };
    // A short minimum timeout lets the expiry case finish in about a second.
    let ward = Ward::start_with(&["--min-session-timeout-ms", "1000"]);
    let got = java(&classpath, "JavaOps.java", &[&ward.zk_addr]);
    assert_eq!(got, expected("java_ops.expected"), "JavaOps.java output differs from java_ops.expected");
}

#[test]
fn zkcli_creates_gets_sets_lists_stats_and_deletes() {
    let Some(classpath) = zookeeper_classpath() else { return };
    let ward = Ward::start();
    let script = "create /cli hello\nget /cli\nset /cli world\nget /cli\nls /\nstat /cli\n\
                  create /cli/a\ncreate /cli/a/b\ndelete /cli/a/b\nls /cli/a\ndeleteall /cli\nls /\nstat /cli\nquit\n";
    // zkCli prints some answers on stderr and some on stdout: one stream keeps their order.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "exec java -cp \"$0\" org.apache.zookeeper.ZooKeeperMain -server \"$1\" 2>&1",
            &classpath,
            &ward.zk_addr,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zkCli");
    child.stdin.take().expect("stdin").write_all(script.as_bytes()).expect("write commands");
    let pid = child.id();
    // Bounded: kill zkCli if it hangs.
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(90));
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    });
    let out = child.wait_with_output().expect("zkCli output");
    drop(watchdog);
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
