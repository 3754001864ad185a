//! The harness's own promises about a `ward-server` process: restart keeps its addresses and
//! data, pause stalls it without closing anything, and drop leaves nothing behind.

use std::process::Command;
use std::time::Duration;
use ward_client::{Client, CreateMode};
use ward_procs::{within, ServerProcess, DEADLINE};

/// A client of `addr`, bounded (ward-testkit's `connect`, which depends on this crate).
async fn connect(addr: &str) -> Client {
    let connecting = Client::builder(addr).connect_timeout(Duration::from_secs(20)).connect();
    within("connect", DEADLINE, connecting).await.unwrap_or_else(|e| panic!("connect to {addr}: {e:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_keeps_both_addresses_and_the_data() {
    let mut server = ServerProcess::builder().zookeeper().start();
    let (addr, zk_addr) = (server.addr(), server.zk_addr());
    let client = connect(&server.addr_str()).await;
    client.create("/kept", b"1", CreateMode::Persistent).await.expect("create");
    let first = server.pid();
    server.restart_now();
    assert_ne!(server.pid(), first, "restart started a new process");
    assert_eq!((server.addr(), server.zk_addr()), (addr, zk_addr));
    let again = connect(&server.addr_str()).await;
    let (data, _) = within("get", DEADLINE, again.get_data("/kept")).await.expect("get after restart");
    assert_eq!(data, b"1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_server_answers_nothing_until_resumed() {
    let mut server = ServerProcess::builder().in_memory().start();
    let client = connect(&server.addr_str()).await;
    server.pause();
    let stalled = tokio::time::timeout(Duration::from_millis(500), client.exists("/")).await;
    assert!(stalled.is_err(), "a paused server answered: {stalled:?}");
    server.resume();
    within("exists after resume", DEADLINE, client.exists("/")).await.expect("exists");
    server.assert_running();
}

#[test]
fn drop_kills_the_process_and_removes_its_directory() {
    let server = ServerProcess::start_with(&["--snapshot-every", "8"]);
    let (pid, data_dir) = (server.pid().expect("running"), server.data_dir());
    assert!(data_dir.exists(), "the server made its data directory");
    drop(server);
    assert!(!data_dir.exists(), "{} is left behind", data_dir.display());
    let alive = Command::new("kill").args(["-0", &pid.to_string()]).output().expect("run kill -0");
    assert!(!alive.status.success(), "ward-server {pid} still runs");
}
