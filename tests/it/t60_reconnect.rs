//! Connection loss: a session outlives its TCP connection, up to its timeout.

use crate::harness::*;
use std::time::Duration;
use ward_client::{Client, CreateMode, Error, EventKind, Op, SessionState};

const SHORT_FLAGS: [&str; 4] = ["--min-session-timeout-ms", "500", "--max-session-timeout-ms", "40000"];

/// Waits until the client is Connected and a read gets through (ConnectionLoss meanwhile is expected).
async fn until_connected(c: &Client) {
    wait_until("the client is connected again", DEADLINE, || async {
        c.state() == SessionState::Connected && c.exists("/").await.is_ok()
    })
    .await;
}

// G7: a cut connection resumes the same session, keeping its ephemerals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_connection_resumes_the_same_session() {
    bounded(async {
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        let proxy = Proxy::start(server.addr()).await;
        let observer = connect(&server.addr_str()).await;
        let c = connect_with(&proxy.addr_str(), Duration::from_secs(10)).await;
        let session = c.session_id();
        c.create("/mine", b"", CreateMode::Ephemeral).await.expect("create /mine");
        for cut in 1..=3 {
            let before = proxy.accepted();
            proxy.cut();
            wait_until("the client reconnects through the proxy", DEADLINE, || async { proxy.accepted() > before })
                .await;
            until_connected(&c).await;
            assert_eq!(c.session_id(), session, "cut {cut}: a new session");
            let stat = observer.exists("/mine").await.expect("exists").expect("/mine kept");
            assert_eq!(stat.ephemeral_owner, Some(session));
            c.set_data("/mine", format!("{cut}").as_bytes(), None).await.expect("write after reconnect");
        }
        assert_eq!(observer.get_data("/mine").await.expect("get").0, b"3");
    })
    .await
}

// G7: requests while disconnected fail with ConnectionLoss; the session resumes once the path is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_while_disconnected_fail_with_connection_loss() {
    bounded(async {
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        let proxy = Proxy::start(server.addr()).await;
        let observer = connect(&server.addr_str()).await;
        // Far longer than the test needs to stay cut off, so the session must survive.
        let c = connect_with(&proxy.addr_str(), Duration::from_secs(30)).await;
        let session = c.session_id();
        c.create("/kept", b"", CreateMode::Ephemeral).await.expect("create /kept");
        proxy.isolate();
        wait_until("the client notices the lost connection", DEADLINE, || async {
            c.state() == SessionState::Disconnected
        })
        .await;
        let during = within("a request while disconnected", DEADLINE, c.get_data("/kept")).await;
        assert!(matches!(during, Err(Error::ConnectionLoss)), "{during:?}");
        assert!(observer.exists("/kept").await.expect("exists").is_some());
        proxy.unblock();
        until_connected(&c).await;
        assert_eq!(c.session_id(), session);
        assert_eq!(c.get_data("/kept").await.expect("get after resume").1.ephemeral_owner, Some(session));
    })
    .await
}

// G14: a write whose reply is lost is sent again on the next connection under its own xid
// and applied once: a sequential create makes one node, and the caller gets the reply of the
// one apply (the same path), not an error and not a second node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_reply_is_lost_is_resent_and_applied_once() {
    bounded(async {
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        let proxy = Proxy::start(server.addr()).await;
        let observer = connect(&server.addr_str()).await;
        let c = connect_with(&proxy.addr_str(), Duration::from_secs(30)).await;
        observer.create("/once", b"", CreateMode::Persistent).await.expect("create /once");
        for round in 0..3 {
            let before = observer.get_children("/once").await.expect("children").len();
            // The server gets the create and applies it; its reply is dropped on the way.
            proxy.mute_replies();
            let create = tokio::spawn({
                let c = c.clone();
                async move { c.create("/once/n-", format!("{round}").as_bytes(), CreateMode::PersistentSequential).await }
            });
            wait_until("the create is applied", DEADLINE, || async {
                observer.get_children("/once").await.expect("children").len() > before
            })
            .await;
            proxy.cut();
            let path = within("the resent create's reply", DEADLINE, create).await.expect("task").expect("create");
            let children = observer.get_children("/once").await.expect("children");
            assert_eq!(children.len(), before + 1, "round {round}: applied once: {children:?}");
            assert_eq!(observer.get_data(&path).await.expect("get").0, format!("{round}").as_bytes());
        }
    })
    .await
}

// G7 + G6: a watch set before a disconnect fires for a change made while disconnected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_survives_a_reconnect() {
    bounded(async {
        let server = ServerProcess::start();
        let proxy = Proxy::start(server.addr()).await;
        let writer = connect(&server.addr_str()).await;
        let c = connect_with(&proxy.addr_str(), Duration::from_secs(30)).await;
        writer.create("/wr", b"0", CreateMode::Persistent).await.expect("create /wr");
        let (_, _, watch) = c.get_data_watch("/wr").await.expect("watch /wr");
        let (_, exists_watch) = c.exists_watch("/later").await.expect("watch /later");
        proxy.isolate();
        wait_until("the client notices the lost connection", DEADLINE, || async {
            c.state() == SessionState::Disconnected
        })
        .await;
        let set = writer.set_data("/wr", b"1", None).await.expect("set while away");
        let made = writer.create_with_stat("/later", b"", CreateMode::Persistent).await.expect("create while away").1;
        proxy.unblock();
        let data_event = fired(watch).await;
        let created_event = fired(exists_watch).await;
        assert_eq!(data_event.kind, EventKind::NodeDataChanged);
        assert_eq!(created_event.kind, EventKind::NodeCreated);
        // The event names the change that fired it, not whatever zxid is latest.
        assert_eq!(data_event.zxid, set.mzxid, "zxid of the re-armed data watch's event");
        assert_eq!(created_event.zxid, made.czxid, "zxid of the re-armed exists watch's event");
    })
    .await
}

// G7 + G6: 8,000 watches on 200-byte paths (1.6 MB of paths, more than one request may
// carry) are all re-armed after the server restarts: the client splits its SetWatches, and
// every watch fires for a change made after the reconnect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_long_watch_paths_are_rearmed_after_a_restart() {
    const WATCHES: usize = 8_000;
    bounded(async {
        let mut server = ServerProcess::start();
        let c = connect_with(&server.addr_str(), Duration::from_secs(30)).await;
        let dir = format!("/{}", "d".repeat(180));
        c.create(&dir, b"", CreateMode::Persistent).await.expect("create the directory");
        let paths: Vec<String> = (0..WATCHES).map(|i| format!("{dir}/{i:0>19}")).collect();
        assert_eq!(paths[0].len(), 201);
        let ops = |make: fn(&str) -> Op| move |chunk: &[String]| chunk.iter().map(|p| make(p)).collect::<Vec<_>>();
        let create = ops(|p| Op::Create { path: p.into(), data: b"0".to_vec(), mode: CreateMode::Persistent });
        let set = ops(|p| Op::SetData { path: p.into(), data: b"1".to_vec(), version: None });
        for chunk in paths.chunks(1_000) {
            c.multi(create(chunk)).await.expect("create the watched nodes");
        }
        let mut watches = Vec::with_capacity(WATCHES);
        for path in &paths {
            watches.push(c.get_data_watch(path).await.expect("arm a data watch").2);
        }
        server.restart_now();
        until_connected(&c).await;
        for chunk in paths.chunks(1_000) {
            c.multi(set(chunk)).await.expect("change the watched nodes");
        }
        for (path, watch) in paths.iter().zip(watches) {
            let event = fired(watch).await;
            assert_eq!((event.kind, &event.path), (EventKind::NodeDataChanged, path));
        }
    })
    .await
}

// G7: cut off longer than its timeout, the session expires: SessionExpired, state Expired, ephemerals gone (G5).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expires_when_cut_off_past_its_timeout() {
    bounded(async {
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        let proxy = Proxy::start(server.addr()).await;
        let observer = connect(&server.addr_str()).await;
        let c = connect_with(&proxy.addr_str(), Duration::from_millis(1000)).await;
        assert_eq!(c.session_timeout(), Duration::from_millis(1000));
        let mut states = c.state_changes();
        c.create("/doomed", b"", CreateMode::Ephemeral).await.expect("create /doomed");
        let (_, watch) = observer.exists_watch("/doomed").await.expect("watch /doomed");
        proxy.isolate();
        // The observer seeing the ephemeral go proves the server expired the session.
        let event = fired(watch).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeDeleted, "/doomed"));
        proxy.unblock();
        wait_for("the client learns its session expired", DEADLINE, || async {
            match c.exists("/").await {
                Err(Error::SessionExpired) => Some(()),
                // Still reconnecting, or not yet told: try again.
                Err(Error::ConnectionLoss) | Ok(_) => None,
                Err(other) => panic!("unexpected error while expiring: {other:?}"),
            }
        })
        .await;
        assert_eq!(c.state(), SessionState::Expired);
        wait_until("state_changes reports Expired", DEADLINE, || {
            let now = *states.borrow_and_update();
            async move { now == SessionState::Expired }
        })
        .await;
        // Expired is final: later calls fail the same way and do not hang.
        let again = c.create("/doomed", b"", CreateMode::Ephemeral).await;
        assert!(matches!(again, Err(Error::SessionExpired)), "{again:?}");
        assert_eq!(observer.exists("/doomed").await.expect("exists"), None);
    })
    .await
}

// G7: with two listed addresses, the client resumes its session through the other one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_through_another_listed_address() {
    bounded(async {
        let server = ServerProcess::start();
        let first = Proxy::start(server.addr()).await;
        let second = Proxy::start(server.addr()).await;
        let list = format!("{},{}", first.addr_str(), second.addr_str());
        let c = connect_with(&list, Duration::from_secs(30)).await;
        let session = c.session_id();
        c.create("/roam", b"", CreateMode::Ephemeral).await.expect("create /roam");
        // Whichever proxy carries the session now is isolated; the other must take over.
        let (gone, other) = if first.accepted() > 0 { (&first, &second) } else { (&second, &first) };
        gone.isolate();
        wait_until("the client reconnects through the other address", DEADLINE, || async { other.accepted() > 0 })
            .await;
        until_connected(&c).await;
        assert_eq!(c.session_id(), session);
        assert!(c.exists("/roam").await.expect("exists").is_some());
    })
    .await
}

// G7: with no server at the address, connect fails with Connect (bounded), while Client::connect to a live one works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_nothing_fails_with_connect() {
    bounded(async {
        let dead = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr")
        };
        let attempt = within(
            "a connect to a dead address",
            DEADLINE,
            Client::builder(&dead.to_string()).connect_timeout(Duration::from_secs(2)).connect(),
        )
        .await;
        assert!(matches!(attempt, Err(Error::Connect(_))), "{:?}", attempt.map(|c| c.session_id()));

        let server = ServerProcess::start();
        let c = within("Client::connect", DEADLINE, Client::connect(&server.addr_str()))
            .await
            .expect("Client::connect to a live server");
        assert_eq!(c.state(), SessionState::Connected);
        c.close().await.expect("close");
    })
    .await
}
