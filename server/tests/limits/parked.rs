//! Idle connections park (docs/architecture.md "Idle connections park"): a connection with
//! nothing in flight gives up its reader's and writer's state and keeps only its socket and
//! its order. What it was promised still reaches it: its watch events (G6), its lock grant
//! (G12), the replies to its next requests (G2), the close when its session moves to another
//! connection (G19), on both listeners, and the server's shutdown.

use super::metric;
use tokio::net::TcpStream;
use ward_client::CreateMode;
use ward_testkit::zk::raw::{op, path_watch, set_data, string, Raw};
use ward_testkit::{connect, wait_until, within, ServerProcess, DEADLINE};

/// A ZooKeeper notification's xid.
const NOTIFICATION: i32 = -1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_connection_wakes_for_its_events_its_grant_its_requests_and_its_close() {
    // The raw ZooKeeper client sends no pings: its session must outlive the test.
    let flags = ["--max-session-timeout-ms", "600000"];
    let server = ServerProcess::builder().zookeeper().admin().in_memory().flags(&flags).start();
    let admin = server.admin_addr();
    let parked = || async move { metric(admin, "ward_connections_parked") };
    let holder = connect(&server.addr_str()).await;
    holder.create("/x", b"0", CreateMode::Persistent).await.expect("create /x");
    let guard = holder.lock("/lock").await.expect("the lock, uncontended");
    let waiter = connect(&server.addr_str()).await;
    let (_, _, watch) = waiter.get_data_watch("/x").await.expect("watch /x");
    let waiter = std::sync::Arc::new(waiter);
    let waiting = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.lock("/lock").await.map(|guard| guard.fencing_token()) }
    });
    let stream = TcpStream::connect(server.zk_addr()).await.expect("connect");
    let (mut zk, timeout) = Raw::handshake(stream, 0, &[], 600_000).await;
    assert!(timeout > 0, "a ZooKeeper session");
    zk.request(op::EXISTS, &path_watch("/x", true)).await;
    assert_eq!(zk.header().await.1, 0, "exists /x with a watch");

    // The holder, the waiter (its lock request answered, its grant not yet due) and the
    // ZooKeeper client have nothing in flight.
    wait_until("the three idle connections park", DEADLINE, || async move { parked().await >= 3 }).await;

    // G6: the change wakes both watchers' parked connections.
    holder.set_data("/x", b"1", None).await.expect("set /x");
    within("the native watch event", DEADLINE, watch).await.expect("the event");
    let (xid, _) = zk.header().await;
    assert_eq!(xid, NOTIFICATION, "the ZooKeeper client's notification");

    // G12: the release wakes the waiter's parked connection with its grant.
    wait_until("the connections park again", DEADLINE, || async move { parked().await >= 3 }).await;
    let held = guard.fencing_token();
    guard.unlock().await.expect("unlock");
    let granted = within("the grant", DEADLINE, waiting).await.expect("waiter task").expect("granted");
    assert!(granted > held, "the grant carries a newer fencing token");

    // G2: requests on a parked connection are read and answered.
    wait_until("the connections park again", DEADLINE, || async move { parked().await >= 3 }).await;
    let (data, _) = waiter.get_data("/x").await.expect("get /x");
    assert_eq!(data, b"1");
    zk.request(op::SET_DATA, &set_data("/x")).await;
    assert_eq!(zk.header().await.1, 0, "setData on the ZooKeeper connection");
    // Larger requests too: a read that fills the read buffer exactly leaves the socket's
    // readiness set, and the reader must still count as idle when the next read finds nothing.
    for len in [300, 1000, 3000, 10_000, 100_000] {
        let mut payload = Vec::new();
        string(&mut payload, b"/x");
        string(&mut payload, &vec![b'z'; len]);
        payload.extend_from_slice(&(-1i32).to_be_bytes());
        zk.request(op::SET_DATA, &payload).await;
        assert_eq!(zk.header().await.1, 0, "setData of {len} bytes on the ZooKeeper connection");
        waiter.set_data("/x", &vec![b'w'; len], None).await.expect("a native set_data");
        wait_until("the connections park after a large request", DEADLINE, || async move { parked().await >= 3 }).await;
    }

    // G19: the session moving to a new connection closes its parked old one.
    wait_until("the connections park again", DEADLINE, || async move { parked().await >= 3 }).await;
    let (session, passwd) = (zk.session, zk.passwd.clone());
    let (_moved, timeout) = Raw::connect(&server.zk_addr_str(), session, &passwd).await;
    assert!(timeout > 0, "the session resumed on a new connection");
    assert_eq!(within("the old connection's end", DEADLINE, zk.frame()).await, None, "the old connection is closed");

    // Shutdown wakes parked connections too: the server exits on SIGTERM with idle clients.
    wait_until("the connections park again", DEADLINE, || async move { parked().await >= 3 }).await;
    let mut server = server;
    let status = tokio::task::spawn_blocking(move || server.terminate()).await.expect("terminate");
    assert!(status.success(), "ward-server exits cleanly on SIGTERM: {status}");
    drop((holder, waiter));
}
