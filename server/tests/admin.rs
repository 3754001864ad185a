//! The admin HTTP listener of a real `ward-server` process (docs/operations.md "Metrics"):
//! per-lock figures in `/metrics`, `/healthz` and `/readyz`, and bad requests that are
//! refused without harming the server.

use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use ward_testkit::{bounded, connect, wait_for, wait_until, within, Ensemble, ServerProcess, DEADLINE};

/// Sends `request` as it is and returns the status code and the body of the answer (the
/// server closes after `Connection: close`).
async fn exchange(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    within("an admin answer", DEADLINE, async {
        let mut stream = TcpStream::connect(addr).await.expect("connect to the admin listener");
        stream.write_all(request).await.expect("send the request");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read the answer");
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_string();
        (status, body)
    })
    .await
}

async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    exchange(addr, format!("GET {path} HTTP/1.1\r\nHost: ward\r\nConnection: close\r\n\r\n").as_bytes()).await
}

/// The value of the series `series` (name and labels exactly as printed), if present.
fn value(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

// Per-lock figures (docs/operations.md "Metrics"): a lock held by one client with five
// others queued shows 5 waiters, the holder's session, and a hold time that grows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_a_lock_queue_its_holder_and_a_growing_hold_time() {
    bounded(async {
        let server = ServerProcess::builder().admin().start();
        let (addr, admin) = (server.addr_str(), server.admin_addr());
        let holder = connect(&addr).await;
        let _held = holder.lock("/queue").await.expect("the first lock");
        let mut waiters = Vec::new();
        for _ in 0..5 {
            let c = connect(&addr).await;
            waiters.push(tokio::spawn(async move { c.lock("/queue").await.map(drop) }));
        }
        let metrics = wait_for("/metrics shows 5 waiters on /queue", DEADLINE, || async {
            let (status, metrics) = get(admin, "/metrics").await;
            assert_eq!(status, 200, "{metrics}");
            (value(&metrics, r#"ward_lock_waiters{lock="/queue"}"#) == Some(5.0)).then_some(metrics)
        })
        .await;
        assert_eq!(value(&metrics, r#"ward_lock_holders{lock="/queue"}"#), Some(1.0), "{metrics}");
        assert_eq!(value(&metrics, "ward_lock_directories"), Some(1.0), "{metrics}");
        assert!(value(&metrics, "ward_sessions").is_some_and(|n| n >= 6.0), "{metrics}");
        assert!(value(&metrics, r#"ward_connections{listener="ward"}"#).is_some_and(|n| n >= 6.0), "{metrics}");
        assert_eq!(value(&metrics, "ward_raft_is_leader"), Some(1.0), "a lone durable server leads: {metrics}");
        let holder_series =
            format!(r#"ward_lock_holder_age_seconds{{lock="/queue",session="{:#x}"}}"#, holder.session_id().0);
        let first = value(&metrics, &holder_series).unwrap_or_else(|| panic!("no {holder_series} in\n{metrics}"));
        assert!(value(&metrics, r#"ward_lock_oldest_waiter_age_seconds{lock="/queue"}"#).is_some(), "{metrics}");
        wait_until("the hold time grows", DEADLINE, || async {
            let (_, metrics) = get(admin, "/metrics").await;
            value(&metrics, &holder_series).is_some_and(|later| later > first)
        })
        .await;
        for waiter in waiters {
            waiter.abort();
        }
    })
    .await
}

// /healthz answers while the process serves, /readyz while it can serve clients; other
// paths get 404, other methods 405, malformed requests 400, and the server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_bad_requests() {
    bounded(async {
        let server = ServerProcess::builder().admin().start();
        let admin = server.admin_addr();
        assert_eq!(get(admin, "/healthz").await.0, 200);
        assert_eq!(get(admin, "/readyz").await.0, 200);
        assert_eq!(get(admin, "/nowhere").await.0, 404);
        let post = b"POST /metrics HTTP/1.1\r\nHost: ward\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(exchange(admin, post).await.0, 405);
        let garbage = exchange(admin, b"\x00\x01 not http at all\r\n\r\n").await.0;
        assert!((400..500).contains(&garbage), "garbage got {garbage}");
        let huge = format!("GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(64 * 1024));
        let huge = exchange(admin, huge.as_bytes()).await.0;
        assert!(huge == 0 || (400..500).contains(&huge), "a 64 KiB header got {huge}");
        let (status, metrics) = get(admin, "/metrics").await;
        assert_eq!(status, 200);
        assert!(metrics.contains("ward_znodes"), "{metrics}");
        assert_eq!(get(admin, "/healthz").await.0, 200, "still serving");
        // A client is served as before.
        connect(&server.addr_str())
            .await
            .create("/after", b"", ward_client::CreateMode::Persistent)
            .await
            .expect("create");
    })
    .await
}

// An explicitly requested admin address must bind: a taken one stops the server.
#[test]
fn a_taken_explicit_admin_address_is_an_error() {
    let first = ServerProcess::builder().admin().in_memory().start();
    let taken = first.admin_addr().to_string();
    let second = ServerProcess::builder().in_memory().flags(&["--admin-listen", &taken]).try_start();
    let why = second.err().expect("a second server on a taken admin address must not start");
    assert!(why.contains("--admin-listen"), "{why}");
}

// An ensemble (G14): the leader reports itself as leader and each follower's replication
// lag, a follower its role; an isolated follower's /readyz turns 503 while it is out of
// contact with a leader, and 200 again once healed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_reports_roles_lag_and_readiness() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&ensemble.ids()).await;
        let followers: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
        let lag = |id: u64| format!(r#"ward_raft_replication_lag_entries{{member="{id}"}}"#);
        let metrics = wait_for("the leader reports both followers' lag", DEADLINE, || async {
            let (_, metrics) = get(ensemble.admin_addr(leader), "/metrics").await;
            followers.iter().all(|f| value(&metrics, &lag(*f)).is_some()).then_some(metrics)
        })
        .await;
        assert_eq!(value(&metrics, "ward_raft_is_leader"), Some(1.0), "{metrics}");
        assert_eq!(value(&metrics, r#"ward_raft_role{role="leader"}"#), Some(1.0), "{metrics}");
        let follower = followers[0];
        let (_, metrics) = get(ensemble.admin_addr(follower), "/metrics").await;
        assert_eq!(value(&metrics, "ward_raft_is_leader"), Some(0.0), "{metrics}");
        assert!(value(&metrics, &lag(leader)).is_none(), "only the leader reports lag: {metrics}");

        ensemble.isolate(follower);
        wait_until("the isolated follower is not ready", DEADLINE, || async {
            get(ensemble.admin_addr(follower), "/readyz").await.0 == 503
        })
        .await;
        assert_eq!(get(ensemble.admin_addr(follower), "/healthz").await.0, 200, "alive though not ready");
        ensemble.heal();
        wait_until("the healed follower is ready again", DEADLINE, || async {
            get(ensemble.admin_addr(follower), "/readyz").await.0 == 200
        })
        .await;
    })
    .await
}
