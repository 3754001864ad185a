//! The admin HTTP listener of a real `ward-server` process (docs/operations.md "Metrics"):
//! per-lock figures, request, log and lock-handoff figures in `/metrics`, `/healthz` and
//! `/readyz`, backups for the admin token only, and bad requests that are refused without
//! harming the server.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use ward_client::CreateMode;
use ward_testkit::zk::raw::{create, four_letters, path_watch, Raw};
use ward_testkit::{
    bounded, connect, connect_with, wait_for, wait_until, within, Ensemble, Proxy, ServerProcess, DEADLINE,
};

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

/// The value of a counter or histogram count that only appears once it is not zero.
fn count(metrics: &str, series: &str) -> f64 {
    value(metrics, series).unwrap_or(0.0)
}

/// The sum of every series whose name and first labels start with `prefix`.
fn sum(metrics: &str, prefix: &str) -> f64 {
    let values = metrics.lines().filter(|line| line.starts_with(prefix));
    values.filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok()).sum()
}

async fn scrape(admin: SocketAddr) -> String {
    let (status, metrics) = get(admin, "/metrics").await;
    assert_eq!(status, 200, "{metrics}");
    metrics
}

/// How far `series` moved from `before` to `after`.
fn moved(before: &str, after: &str, series: &str) -> f64 {
    count(after, series) - count(before, series)
}

// Request figures (docs/operations.md "Metrics"): every create and get through either
// listener counts once in its operation's counter and latency histogram, a failure also
// under its code, but not a first lock's NoNode (the client creates the directory); a durable server's writes show fsyncs and append batches; bytes move on
// both listeners; ZooKeeper's `mntr` reports the same request count as /metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_errors_bytes_and_fsyncs() {
    bounded(async {
        let server = ServerProcess::builder().admin().zookeeper().start();
        let admin = server.admin_addr();
        let client = connect(&server.addr_str()).await;
        let before = scrape(admin).await;
        for i in 0..5 {
            client.create(&format!("/r{i}"), b"x", CreateMode::Persistent).await.expect("create");
        }
        let again = client.create("/r0", b"", CreateMode::Persistent).await;
        assert!(matches!(again, Err(ward_client::Error::NodeExists)), "{again:?}");
        for _ in 0..3 {
            client.get_data("/r1").await.expect("get");
        }
        assert!(client.get_data("/missing").await.is_err(), "no such node");

        let zk = server.zk_addr_str();
        let (mut raw, _) = Raw::connect(&zk, 0, &[0; 16]).await;
        let created = raw.request(1, &create("/z")).await;
        assert_eq!(raw.header().await, (created, 0));
        for path in ["/z", "/z", "/nowhere"] {
            let xid = raw.request(4, &path_watch(path, false)).await;
            assert_eq!(raw.header().await.0, xid);
        }
        let after = scrape(admin).await;

        let ward = |name: &str, op: &str| format!(r#"{name}{{listener="ward",op="{op}"}}"#);
        let zookeeper = |name: &str, op: &str| format!(r#"{name}{{listener="zookeeper",op="{op}"}}"#);
        for (series, by) in [
            (ward("ward_requests_total", "create"), 6.0),
            (ward("ward_request_duration_seconds_count", "create"), 6.0),
            (ward("ward_requests_total", "get"), 4.0),
            (ward("ward_request_duration_seconds_count", "get"), 4.0),
            (zookeeper("ward_requests_total", "create"), 1.0),
            (zookeeper("ward_request_duration_seconds_count", "create"), 1.0),
            (zookeeper("ward_request_duration_seconds_count", "get"), 3.0),
            (r#"ward_request_errors_total{listener="ward",op="create",code="node_exists"}"#.into(), 1.0),
            (r#"ward_request_errors_total{listener="ward",op="get",code="no_node"}"#.into(), 1.0),
            (r#"ward_request_errors_total{listener="zookeeper",op="get",code="no_node"}"#.into(), 1.0),
        ] {
            assert_eq!(moved(&before, &after, &series), by, "{series}\n{after}");
        }
        let inf = r#"ward_request_duration_seconds_bucket{le="+Inf",listener="ward",op="create"}"#;
        assert_eq!(count(&after, inf), count(&after, &ward("ward_request_duration_seconds_count", "create")));
        for series in
            ["ward_log_fsync_duration_seconds_count", "ward_log_append_commands_count", "ward_log_fsyncs_total"]
        {
            assert!(moved(&before, &after, series) > 0.0, "a durable write is fsynced: {series}\n{after}");
        }
        assert_eq!(count(&after, "ward_log_fsync_duration_seconds_count"), count(&after, "ward_log_fsyncs_total"));
        for listener in ["ward", "zookeeper"] {
            for series in ["ward_received_bytes_total", "ward_sent_bytes_total"] {
                let series = format!(r#"{series}{{listener="{listener}"}}"#);
                assert!(moved(&before, &after, &series) > 0.0, "{series}\n{after}");
            }
        }

        // A first lock: its directory is missing, the server says so, the client creates it
        // and asks again. That NoNode is expected, not an error.
        client.lock("/first-lock").await.expect("lock").unlock().await.expect("unlock");
        let locked = scrape(admin).await;
        assert_eq!(moved(&after, &locked, &ward("ward_requests_total", "lock")), 2.0, "{locked}");
        let no_node = r#"ward_request_errors_total{listener="ward",op="lock",code="no_node"}"#;
        assert_eq!(count(&locked, no_node), 0.0, "{locked}");

        // The ZooKeeper session sends nothing more: mntr and /metrics see the same requests.
        let mntr = four_letters(&zk, b"mntr").await;
        let metrics = scrape(admin).await;
        let received = mntr.lines().find_map(|l| l.strip_prefix("zk_packets_received\t")?.parse::<f64>().ok());
        assert_eq!(received, Some(sum(&metrics, r#"ward_requests_total{listener="zookeeper""#)), "{mntr}\n{metrics}");
    })
    .await
}

// Lock handoffs (docs/operations.md "Metrics"): a waiter granted after a holder unlocks
// counts one wait and no involuntary release; a waiter granted because the holder's session
// expired (its connection went silent) counts one wait and one involuntary release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_lock_waits_and_involuntary_releases() {
    bounded(async {
        let server = ServerProcess::builder().admin().flags(&["--min-session-timeout-ms", "1000"]).start();
        let (addr, admin) = (server.addr_str(), server.admin_addr());
        let waits = "ward_lock_wait_seconds_count";
        let involuntary = "ward_lock_involuntary_releases_total";
        let waiting_on = |lock: &'static str| async move {
            wait_until("the waiter queues", DEADLINE, || async {
                value(&scrape(admin).await, &format!(r#"ward_lock_waiters{{lock="{lock}"}}"#)) == Some(1.0)
            })
            .await
        };

        let before = scrape(admin).await;
        let holder = connect(&addr).await;
        let held = holder.lock("/voluntary").await.expect("lock");
        let waiter = connect(&addr).await;
        let waiting = tokio::spawn(async move { waiter.lock("/voluntary").await.map(drop) });
        waiting_on("/voluntary").await;
        held.unlock().await.expect("unlock");
        within("the waiter's grant", DEADLINE, waiting).await.expect("waiter task").expect("granted");
        let after = scrape(admin).await;
        assert_eq!(moved(&before, &after, waits), 1.0, "{after}");
        assert_eq!(moved(&before, &after, "ward_lock_grants_total"), 1.0, "{after}");
        assert_eq!(moved(&before, &after, involuntary), 0.0, "an unlock is voluntary: {after}");

        let proxy = Proxy::start(server.addr()).await;
        let doomed = connect_with(&proxy.addr_str(), Duration::from_secs(1)).await;
        let _held = doomed.lock("/involuntary").await.expect("lock");
        let waiter = connect(&addr).await;
        let waiting = tokio::spawn(async move { waiter.lock("/involuntary").await.map(drop) });
        waiting_on("/involuntary").await;
        // The holder's connection goes silent: no heartbeat reaches the server, which expires
        // the session and hands the lock on.
        proxy.partition();
        within("the grant after the expiry", DEADLINE, waiting).await.expect("waiter task").expect("granted");
        let last = scrape(admin).await;
        assert_eq!(moved(&after, &last, involuntary), 1.0, "{last}");
        assert_eq!(moved(&after, &last, waits), 1.0, "{last}");
    })
    .await
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

// /healthz answers while the process serves, /readyz while it can serve clients, /digest
// with the state's zxid and digest (docs/operations.md "Checking an ensemble"); other
// paths get 404, other methods 405, malformed requests 400, and the server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_bad_requests() {
    bounded(async {
        let server = ServerProcess::builder().admin().start();
        let admin = server.admin_addr();
        assert_eq!(get(admin, "/healthz").await.0, 200);
        assert_eq!(get(admin, "/readyz").await.0, 200);
        let (status, digest) = get(admin, "/digest").await;
        assert_eq!(status, 200);
        assert!(digest.starts_with("zxid ") && digest.contains(" digest "), "{digest}");
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
        connect(&server.addr_str()).await.create("/after", b"", CreateMode::Persistent).await.expect("create");
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
        let lag = |id: u64| format!(r#"ward_raft_replication_lag_entries{{member="{id}"}}"#);
        // Whichever member leads when asked (a loaded machine may see an election meanwhile).
        let (leader, metrics) = wait_for("a leader reports both followers' lag", DEADLINE, || async {
            for id in ensemble.ids() {
                let (_, metrics) = get(ensemble.admin_addr(id), "/metrics").await;
                let others = ensemble.ids().into_iter().filter(|f| *f != id);
                if value(&metrics, "ward_raft_is_leader") == Some(1.0)
                    && others.into_iter().all(|f| value(&metrics, &lag(f)).is_some())
                {
                    return Some((id, metrics));
                }
            }
            None
        })
        .await;
        let followers: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
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

/// The admin token, in a file only its owner reads, as `--admin-token-file` wants it.
fn admin_token_file(dir: &ward_testkit::TempDir, token: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.path().join("admin-token");
    std::fs::write(&path, format!("{token}\n")).expect("write the token file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
    path.display().to_string()
}

/// `GET /api/backup` with `token` (or none): the status, the `x-ward-backup-zxid` header
/// and the body's bytes.
async fn backup(admin: SocketAddr, token: Option<&str>) -> (u16, Option<u64>, Vec<u8>) {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let request = format!("GET /api/backup HTTP/1.1\r\nHost: ward\r\n{auth}Connection: close\r\n\r\n");
    within("a backup answer", DEADLINE, async {
        let mut stream = TcpStream::connect(admin).await.expect("connect to the admin listener");
        stream.write_all(request.as_bytes()).await.expect("send the request");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read the answer");
        let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP head");
        let head = String::from_utf8_lossy(&answer[..split]).into_owned();
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let zxid =
            head.lines().find_map(|l| l.strip_prefix("x-ward-backup-zxid: ")).and_then(|z| z.trim().parse().ok());
        (status, zxid, answer[split + 4..].to_vec())
    })
    .await
}

// G29: a backup is for the admin token only (401 without it, 403 with another), an in-memory
// server has none to give (409), and a durable server's is a whole backup file (both
// checksums and every length check out) whose zxid covers every write made before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_needs_the_admin_token_and_covers_the_writes_before_it() {
    bounded(async {
        let secrets = ward_testkit::TempDir::new("backup-token");
        let token = "a-token-long-enough-for-the-server";
        let token_file = admin_token_file(&secrets, token);
        let server = ServerProcess::builder().admin().flags(&["--admin-token-file", &token_file]).start();
        let client = connect(&server.addr_str()).await;
        let (_, stat) = client.create_with_stat("/before", b"x", CreateMode::Persistent).await.expect("create");
        let admin = server.admin_addr();
        assert_eq!(backup(admin, None).await.0, 401, "no token");
        assert_eq!(backup(admin, Some("another-token-of-some-length")).await.0, 403, "a wrong token");
        let (status, zxid, body) = backup(admin, Some(token)).await;
        assert_eq!(status, 200);
        let header = ward_proto::backup::verify(&mut &body[..]).expect("a whole backup");
        assert_eq!(zxid, Some(header.zxid), "the header line and the file say the same zxid");
        assert!(header.zxid >= stat.czxid, "the backup ({}) covers the write before it ({})", header.zxid, stat.czxid);
        assert_eq!(header.ensemble, "ward");

        let memory = ServerProcess::builder().in_memory().admin().flags(&["--admin-token-file", &token_file]).start();
        assert_eq!(backup(memory.admin_addr(), Some(token)).await.0, 409, "an in-memory server keeps no snapshot");
    })
    .await
}
