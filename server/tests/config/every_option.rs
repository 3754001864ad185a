//! Every option, set from a config file and then from `WARD_*` variables, observed where a
//! client, the admin listener or the file system can see it (docs/operations.md
//! "Configuration").

use super::{write_config, Spawned};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;
use ward_testkit::server::STARTUP;
use ward_testkit::{bounded, connect, connect_with, wait_until, ServerProcess, TempDir, DEADLINE};

/// Every option but `dev-ensemble` and `join` (each needs a server of its own, below).
/// The ensemble of one member is given as a table here, as a string in [`ENV`].
const FILE: &str = r#"
listen = "localhost:0"
zk-listen = "127.0.0.1:0"
admin-listen = "127.0.0.1:0"
admin-token-file = "@TOKEN_FILE@"
data-dir = "data-from-config"
in-memory = false
segment-mb = 1
snapshot-every = 3
snapshot-log-percent = 1000000
accept-data-loss = true
lease-read = true
min-session-timeout-ms = 5000
max-session-timeout-ms = 7000
id = 1
peer-listen = "127.0.0.1:0"
ensemble-name = "configured"
peer-route = "1=127.0.0.1:7191"
heartbeat-ms = 40
election-timeout-ms = 120
log-format = "json"
metrics-max-locks = 1
max-outbound-bytes = 3000000
watch-history-bytes = 123456
max-connections = 500
max-connections-per-ip = 40
max-in-flight-per-connection = 7
worker-threads = 3
container-check-interval-ms = 100
container-max-never-used-ms = 1
super-digest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

[ensemble]
1 = "127.0.0.1:7191"
"#;

/// [`FILE`] as environment variables, with two `WARD_*` variables that are not the
/// server's (the `ward` CLI's `WARD_SERVER`, and a stranger): they are left alone.
const ENV: &[(&str, &str)] = &[
    ("WARD_LISTEN", "localhost:0"),
    ("WARD_ZK_LISTEN", "127.0.0.1:0"),
    ("WARD_ADMIN_LISTEN", "127.0.0.1:0"),
    ("WARD_ADMIN_TOKEN_FILE", "@TOKEN_FILE@"),
    ("WARD_DATA_DIR", "data-from-config"),
    ("WARD_IN_MEMORY", "false"),
    ("WARD_SEGMENT_MB", "1"),
    ("WARD_SNAPSHOT_EVERY", "3"),
    ("WARD_SNAPSHOT_LOG_PERCENT", "1000000"),
    ("WARD_ACCEPT_DATA_LOSS", "true"),
    ("WARD_LEASE_READ", "true"),
    ("WARD_MIN_SESSION_TIMEOUT_MS", "5000"),
    ("WARD_MAX_SESSION_TIMEOUT_MS", "7000"),
    ("WARD_ENSEMBLE", "1=127.0.0.1:7191"),
    ("WARD_ID", "1"),
    ("WARD_PEER_LISTEN", "127.0.0.1:0"),
    ("WARD_ENSEMBLE_NAME", "configured"),
    ("WARD_PEER_ROUTE", "1=127.0.0.1:7191"),
    ("WARD_HEARTBEAT_MS", "40"),
    ("WARD_ELECTION_TIMEOUT_MS", "120"),
    ("WARD_LOG_FORMAT", "json"),
    ("WARD_METRICS_MAX_LOCKS", "1"),
    ("WARD_MAX_OUTBOUND_BYTES", "3000000"),
    ("WARD_WATCH_HISTORY_BYTES", "123456"),
    ("WARD_MAX_CONNECTIONS", "500"),
    ("WARD_MAX_CONNECTIONS_PER_IP", "40"),
    ("WARD_MAX_IN_FLIGHT_PER_CONNECTION", "7"),
    ("WARD_WORKER_THREADS", "3"),
    ("WARD_CONTAINER_CHECK_INTERVAL_MS", "100"),
    ("WARD_CONTAINER_MAX_NEVER_USED_MS", "1"),
    ("WARD_SUPER_DIGEST", "super:D/InIHSb7yEEbrWz8b9l71RjZJU="),
    ("WARD_SERVER", "127.0.0.1:1"),
    ("WARD_NOT_AN_OPTION", "anything"),
];

/// The admin token [`check_every_option`] presents.
const TOKEN: &str = "every-option-admin-token";

/// Writes the admin token to a file only its owner may read, and returns its path: what
/// `@TOKEN_FILE@` stands for in [`FILE`] and [`ENV`].
fn token_file(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("admin-token");
    std::fs::write(&path, TOKEN).expect("write the token file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_sets_every_option() {
    let dir = TempDir::new("config-file");
    let path = write_config(dir.path(), &FILE.replace("@TOKEN_FILE@", &token_file(dir.path())));
    let server = ServerProcess::builder().bare().zookeeper().admin().flags(&["--config", &path]).start();
    bounded(check_every_option(&server)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_variables_set_every_option() {
    let dir = TempDir::new("config-env");
    let token = token_file(dir.path());
    let env: Vec<(&str, &str)> =
        ENV.iter().map(|(k, v)| (*k, if *v == "@TOKEN_FILE@" { token.as_str() } else { *v })).collect();
    let server = ServerProcess::builder().bare().zookeeper().admin().envs(&env).start();
    bounded(check_every_option(&server)).await;
}

/// [`FILE`] and [`ENV`] set every option `--help` lists, but those with tests of their own
/// (the TLS options need certificates: `server/tests/tls/startup.rs` sets them from a file
/// and from the environment; `--restore` needs a backup and `--force-new-ensemble` an
/// ensemble's directory: the integration suite's backup and recovery tests give them).
#[test]
fn the_tests_cover_every_option() {
    let out = super::run_to_exit(Path::new("."), &["--help"], &[]);
    let help = String::from_utf8_lossy(&out.stdout);
    let tls = ["tls-cert", "tls-key", "tls-client-ca", "tls-client-auth", "zk-tls-listen"];
    let peer_tls = ["peer-tls-cert", "peer-tls-key", "peer-tls-ca"];
    let own_tests =
        [&["config", "help", "version", "dev-ensemble", "join", "restore", "force-new-ensemble"][..], &tls, &peer_tls]
            .concat();
    // The lines that introduce an option: "      --zk-listen <ADDR|off>".
    let keys = help.lines().filter_map(|l| l.trim_start().strip_prefix("--"));
    let keys = keys.filter_map(|l| l.split(|c: char| !(c.is_ascii_lowercase() || c == '-')).next());
    let missing: Vec<&str> = keys
        .filter(|key| !own_tests.contains(key))
        .filter(|key| {
            let in_file = FILE.lines().any(|l| l.starts_with(&format!("{key} ")) || l == format!("[{key}]"));
            let var = format!("WARD_{}", key.to_uppercase().replace('-', "_"));
            !in_file || !ENV.iter().any(|(v, _)| *v == var)
        })
        .collect();
    assert!(missing.is_empty(), "options the config tests do not set: {missing:?}");
}

async fn check_every_option(server: &ServerProcess) {
    // listen: a host name, resolved to a loopback address.
    assert!(server.addr().ip().is_loopback(), "localhost:0 gave {}", server.addr());
    let addr = server.addr_str();
    // Session timeouts are clamped into [min, max].
    let short = connect_with(&addr, Duration::from_millis(1000)).await;
    assert_eq!(short.session_timeout(), Duration::from_millis(5000), "min-session-timeout-ms");
    let long = connect_with(&addr, Duration::from_secs(60)).await;
    assert_eq!(long.session_timeout(), Duration::from_millis(7000), "max-session-timeout-ms");
    // data-dir (relative to the working directory), segment-mb, snapshot-every.
    let data = server.dir().join("data-from-config");
    assert!(data.join("LOCK").exists(), "data-dir: no LOCK in {}", data.display());
    for i in 0..10 {
        short.create(&format!("/n{i}"), b"x", ward_client::CreateMode::Persistent).await.expect("create");
    }
    let snapshot = data.join("snapshot");
    wait_until("snapshot-every 3: a snapshot after ten writes", DEADLINE, || async { snapshot.exists() }).await;
    assert_eq!(segment_sizes(&data.join("log")), vec![1 << 20], "segment-mb 1");
    // snapshot-log-percent 1000000: the next snapshot is due after 10,000 times the last
    // one's size in log (past the segment's 1 MiB, the least).
    // One scrape for both figures: another snapshot may come at any time.
    let sizes = || {
        let (_, metrics) = ward_testkit::http::get(server.admin_addr(), "/metrics");
        let figure = |name: &str| {
            let line = metrics.lines().find(|l| l.starts_with(&format!("{name} ")))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        };
        (figure("ward_snapshot_bytes").unwrap_or(0), figure("ward_snapshot_threshold_bytes").unwrap_or(0))
    };
    wait_until("the snapshot's size is reported", DEADLINE, || async { sizes().0 > 0 }).await;
    let (size, threshold) = sizes();
    assert_eq!(threshold, (size * 10_000).max(1 << 20), "snapshot-log-percent 1000000 of {size} bytes");
    // accept-data-loss: said at start (what it does to a log with lost files: upgrade.rs).
    let warned = || async { server.log_tail().contains("accept-data-loss is set") };
    wait_until("accept-data-loss: said in the log at start", DEADLINE, warned).await;
    // ensemble, id, ensemble-name: the data directory belongs to member 1 of "configured".
    let member = std::fs::read(data.join("member")).expect("read the member file");
    let member = String::from_utf8_lossy(&member);
    assert!(member.contains("id=1\nensemble=configured"), "member file: {member:?}");
    // zk-listen and admin-listen answer.
    TcpStream::connect(server.zk_addr()).expect("zk-listen answers");
    assert_eq!(ward_testkit::http::get(server.admin_addr(), "/healthz").0, 200, "admin-listen answers");
    // admin-token-file: an action with the token is let through (404: there is no such
    // session), where without it it is refused (docs/console.md "Actions").
    let expire = "/api/sessions/expire?id=0x7fffffffffffffff";
    let bearer = format!("Bearer {TOKEN}");
    let with = ward_testkit::http::request(server.admin_addr(), "POST", expire, &[("Authorization", &bearer)]);
    assert_eq!(with.0, 404, "admin-token-file: {}", with.1);
    assert_eq!(ward_testkit::http::request(server.admin_addr(), "POST", expire, &[]).0, 401);
    // metrics-max-locks 1: two held locks, one reported.
    let holder = connect(&addr).await;
    let _a = holder.lock("/locks/a").await.expect("lock a");
    let _b = holder.lock("/locks/b").await.expect("lock b");
    let (_, metrics) = ward_testkit::http::get(server.admin_addr(), "/metrics");
    let reported = metrics.lines().filter(|l| l.starts_with("ward_lock_holders{")).count();
    assert_eq!(reported, 1, "metrics-max-locks 1:\n{metrics}");
    // container-check-interval-ms and container-max-never-used-ms: a container that never
    // had a child goes within the deadline (at the defaults, 60 s and 5 min, it would not).
    short.create("/never-used", b"", ward_client::CreateMode::Container).await.expect("create a container");
    wait_until("the unused container is deleted", DEADLINE, || async {
        matches!(short.exists("/never-used").await, Ok(None))
    })
    .await;
    // super-digest: `super` with password `test` reads a node that grants nobody anything.
    let sealed = [ward_client::Acl::new(0, "world", "anyone")];
    short.create_with_acl("/sealed", b"s", ward_client::CreateMode::Persistent, &sealed).await.expect("create");
    assert_eq!(short.get_data("/sealed").await.err(), Some(ward_client::Error::NoAuth));
    let admin = ward_testkit::connect_as(&addr, &[("digest", "super:test")]).await;
    assert_eq!(admin.get_data("/sealed").await.map(|(data, _)| data), Ok(b"s".to_vec()), "super-digest");
    // log-format json: every line on stderr is a JSON object.
    let log = server.log_tail();
    assert!(!log.is_empty(), "no log lines");
    for line in log.lines() {
        let line = line.split_once("] ").map_or(line, |(_, l)| l);
        assert!(line.starts_with("{\"timestamp\":") && line.ends_with('}'), "not a JSON line: {line}");
    }
    // The limits: the per-address one as ZooKeeper's `conf` shows it, all of them (and the
    // runtime's worker threads) as the server says it serves with them.
    let conf = zk_conf(server.zk_addr());
    assert!(conf.contains("maxClientCnxns=40\n"), "max-connections-per-ip: {conf}");
    let fields = [
        "\"max_outbound_bytes\":3000000",
        "\"watch_history_bytes\":123456",
        "\"max_connections\":500",
        "\"max_connections_per_ip\":40",
        "\"max_in_flight_per_connection\":7",
        "\"worker_threads\":3",
    ];
    for field in fields {
        assert!(log.lines().any(|l| l.contains("\"serving\"") && l.contains(field)), "no {field} in:\n{log}");
    }
    // heartbeat-ms and election-timeout-ms: the member says it runs with them.
    for field in ["\"heartbeat_ms\":40", "\"election_timeout_ms\":120"] {
        let open = |l: &&str| l.contains("ensemble member open") && l.contains(field);
        assert!(log.lines().any(|l| open(&l)), "no {field} in:\n{log}");
    }
}

/// ZooKeeper's `conf` four-letter word.
fn zk_conf(addr: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(addr).expect("connect to zk-listen");
    stream.set_read_timeout(Some(DEADLINE)).expect("read timeout");
    stream.write_all(b"conf").expect("send conf");
    let mut conf = String::new();
    stream.read_to_string(&mut conf).expect("read conf");
    conf
}

/// The sizes of the segment files (`*.wal`) in `log_dir`.
fn segment_sizes(log_dir: &Path) -> Vec<u64> {
    let entries = std::fs::read_dir(log_dir).unwrap_or_else(|e| panic!("read {}: {e}", log_dir.display()));
    let segments = entries.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "wal"));
    segments.filter_map(|e| e.metadata().ok()).map(|m| m.len()).collect()
}

/// `join` (from the file) with `id` and `peer-listen`: a member waiting to be added starts,
/// and its data directory is member 4's.
#[test]
fn a_config_file_makes_a_joining_member() {
    let dir = TempDir::new("config-join");
    let text = "join = true\nid = 4\npeer-listen = \"127.0.0.1:0\"\nlisten = \"127.0.0.1:0\"\n\
                zk-listen = \"off\"\nadmin-listen = \"off\"\ndata-dir = \"joining\"\nsegment-mb = 1\n";
    let path = write_config(dir.path(), text);
    let server = ServerProcess::builder().bare().flags(&["--config", &path]).start();
    let member = std::fs::read(server.dir().join("joining/member")).expect("read the member file");
    assert!(String::from_utf8_lossy(&member).contains("id=4\n"), "{:?}", String::from_utf8_lossy(&member));
}

/// `dev-ensemble` from the environment: the members are started with the other options
/// (here the session timeouts), and without the variables that would make each of them
/// start an ensemble again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_starts_a_dev_ensemble_that_passes_options_on() {
    let port = free_port_and_port_plus_10();
    let listen = format!("127.0.0.1:{port}");
    let envs = [
        ("WARD_DEV_ENSEMBLE", "1"),
        ("WARD_LISTEN", listen.as_str()),
        ("WARD_ZK_LISTEN", "off"),
        ("WARD_DATA_DIR", "dev"),
        ("WARD_SEGMENT_MB", "1"),
        ("WARD_MIN_SESSION_TIMEOUT_MS", "5000"),
    ];
    let mut dev = Spawned::start(&[], &envs);
    let line = dev.line_starting("ward-server ensemble of 1 listening on ", STARTUP);
    assert!(line.ends_with(&listen), "{line}");
    bounded(async {
        let client = connect_with(&listen, Duration::from_millis(1000)).await;
        assert_eq!(client.session_timeout(), Duration::from_millis(5000), "the member got min-session-timeout-ms");
    })
    .await;
    dev.terminate();
}

/// A free port P whose P + 10 and P + 20 (the dev ensemble's first peer and admin ports) are
/// free too, at the time.
fn free_port_and_port_plus_10() -> u16 {
    for _ in 0..50 {
        let Ok(first) = std::net::TcpListener::bind("127.0.0.1:0") else { continue };
        let Ok(port) = first.local_addr().map(|a| a.port()) else { continue };
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if port < 65000 && free(port + 10) && free(port + 20) {
            return port;
        }
    }
    panic!("no free port P with P + 10 and P + 20 free");
}
