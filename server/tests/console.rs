//! The web console in a real browser (docs/console.md): Debian's headless Chromium, driven
//! by Playwright from server/tests/console/browser.mjs, against a real `ward-server` whose
//! state these tests make through the client API and check again through it after the
//! console's actions. Skipped loudly where Chromium or Node is missing (failed instead
//! under `WARD_REQUIRE_ALL_SUITES=1`, as .ci/run sets).
//!
//! `WARD_CONSOLE_SCREENSHOTS=docs/console` saves the tour's screenshots there (relative to
//! the workspace), for docs/console.md.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use ward_client::{Client, CreateMode, LockGuard, Op, SessionState};
use ward_testkit::browser::Browser;
use ward_testkit::{connect, wait_for, wait_state, wait_until, within, ServerProcess, TempDir, DEADLINE};

const TOKEN: &str = "console-test-admin-token-0123456789";

fn package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("console")
}

/// Where screenshots go, if asked for: relative to the workspace, like the docs.
fn screenshots() -> Option<String> {
    let dir = std::env::var("WARD_CONSOLE_SCREENSHOTS").ok().filter(|d| !d.is_empty())?;
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    Some(workspace.join(dir).display().to_string())
}

/// Straight to fd 2, past the test harness's capture: the figures are the point.
fn report(line: &str) {
    let _ = std::io::stderr().write_all(format!("console: {line}\n").as_bytes());
}

/// The browser script, running; its `@step` requests come out of [`Driver::next`].
struct Driver {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Driver {
    fn start(browser: &Browser, plan: &serde_json::Value) -> Driver {
        let script = package_dir().join("browser.mjs");
        let mut child = browser
            .node(&script, &[&plan.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run node {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Driver { child, stdin, lines }
    }

    /// The next step the script asks for; `None` once it is done (and exited 0).
    async fn next(&mut self) -> Option<String> {
        loop {
            let line = within("the browser script's next line", Duration::from_secs(120), self.lines.next_line())
                .await
                .expect("read the browser script's output");
            match line {
                Some(line) if line.starts_with("@step ") => return Some(line["@step ".len()..].to_string()),
                Some(line) if line == "@done" => {
                    let status = within("the browser script's exit", DEADLINE, self.child.wait()).await;
                    assert!(status.is_ok_and(|s| s.success()), "the browser script failed after @done");
                    return None;
                }
                Some(line) => report(&line),
                None => {
                    let status = within("the browser script's exit", DEADLINE, self.child.wait()).await;
                    panic!("the browser script ended without @done ({status:?}); its stderr is above");
                }
            }
        }
    }

    async fn ok(&mut self) {
        self.stdin.write_all(b"ok\n").await.expect("answer the browser script");
        self.stdin.flush().await.expect("flush");
    }
}

/// A client whose session is owned by `owner`.
async fn client_of(addr: &str, owner: &str) -> Client {
    within("connect", DEADLINE, Client::builder(addr).owner(owner).connect_timeout(Duration::from_secs(20)).connect())
        .await
        .unwrap_or_else(|e| panic!("connect as {owner}: {e:?}"))
}

/// Queues `client` for the lock on `dir` after the `ahead` contenders already there, and
/// returns the task that holds the guard once granted.
async fn queue_for(
    observer: &Client,
    client: Client,
    dir: &str,
    ahead: usize,
    data: &[u8],
) -> tokio::task::JoinHandle<(Client, LockGuard)> {
    let (d, data) = (dir.to_string(), data.to_vec());
    let task = tokio::spawn(async move {
        let guard = client.lock_with_data(&d, &data).await.expect("lock");
        (client, guard)
    });
    wait_until(&format!("{} contenders in {dir}", ahead + 1), DEADLINE, || async {
        observer.get_children(dir).await.is_ok_and(|c| c.len() == ahead + 1)
    })
    .await;
    task
}

/// The admin token in a file only its owner may read (the server refuses any other).
fn token_file(dir: &TempDir) -> String {
    let path = dir.path().join("admin-token");
    std::fs::write(&path, format!("{TOKEN}\n")).expect("write the token file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 600");
    path.display().to_string()
}

// docs/console.md, "Views" and "Actions": the locks view shows a holder and three waiters in
// queue order and then the handoff; the tree view reaches a node four levels down and
// shows its data and stat; the sessions view lists a session with its ephemerals; the charts
// are drawn with data; actions are refused without the admin token (401) and with a wrong one
// (403), and with it a stuck holder's session expires and its lock passes to the next waiter
// (checked through the client API), and a node is deleted; nothing errs in the browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_locks_tree_sessions_and_charts_and_acts_only_for_the_admin() {
    let Some(browser) = Browser::find(&package_dir()) else { return };
    let _one_browser = ward_testkit::serial().await;
    within("the console tour", Duration::from_secs(300), async {
        let secrets = TempDir::new("console-token");
        let server = ServerProcess::builder().admin().flags(&["--admin-token-file", &token_file(&secrets)]).start();
        let addr = server.addr_str();
        let observer = connect(&addr).await;

        // A lock with a holder (with context data) and three waiters, queued in that order.
        let dir = "/console/locks/orders";
        let owners = ["billing-7f2c", "billing-91d0", "billing-a4e3", "billing-c55b"];
        let holder = client_of(&addr, owners[0]).await;
        observer.create("/console", b"", CreateMode::Persistent).await.expect("create /console");
        let held = holder.lock_with_data(dir, b"invoice run 2026-11").await.expect("holder locks");
        let mut waiters = Vec::new();
        for (i, owner) in owners.iter().enumerate().skip(1) {
            waiters.push(queue_for(&observer, client_of(&addr, owner).await, dir, i, b"").await);
        }

        // A node four levels down, with data and a second version.
        let deep = "/console/tree/region-eu/shard-3/config";
        for p in ["/console/tree", "/console/tree/region-eu", "/console/tree/region-eu/shard-3"] {
            observer.create(p, b"", CreateMode::Persistent).await.expect("create");
        }
        observer.create(deep, b"draft", CreateMode::Persistent).await.expect("create the deep node");
        let data = "replicas=3\nleader-lease-ms=4000";
        observer.set_data(deep, data.as_bytes(), None).await.expect("set its data");
        let (_, stat) = observer.get_data(deep).await.expect("its stat");

        // A session with ephemerals.
        let worker = client_of(&addr, "ingest-worker-12").await;
        observer.create("/console/workers", b"", CreateMode::Persistent).await.expect("create");
        let ephemerals = ["/console/workers/ingest-12", "/console/workers/ingest-12-heartbeat"];
        for p in ephemerals {
            worker.create(p, b"up", CreateMode::Ephemeral).await.expect("ephemeral");
        }

        // A holder that is stuck (its client lives on, so its session never expires by
        // itself) and the waiter it keeps waiting.
        let stuck_dir = "/console/locks/nightly-report";
        let stuck = client_of(&addr, "report-runner-3").await;
        let _stuck_guard = stuck.lock(stuck_dir).await.expect("the stuck holder locks");
        let next = queue_for(&observer, client_of(&addr, "report-runner-4").await, stuck_dir, 1, b"").await;
        let doomed = "/console/tree/region-eu/obsolete";
        observer.create(doomed, b"", CreateMode::Persistent).await.expect("create the node to delete");
        for _ in 0..50 {
            observer.get_data(deep).await.expect("a read for the charts");
        }

        let plan = serde_json::json!({
            "mode": "tour",
            "base": format!("http://{}", server.admin_addr()),
            "token": TOKEN,
            "screenshots": screenshots(),
            "lock": { "dir": dir, "owners": owners, "context": "invoice run 2026-11" },
            "deep": {
                "path": deep,
                "data": data,
                "stat": { "czxid": stat.czxid, "mzxid": stat.mzxid, "version": stat.version,
                          "dataLength": stat.data_length, "numChildren": stat.num_children },
            },
            "ephemerals": { "session": worker.session_id().to_string(), "owner": "ingest-worker-12", "paths": ephemerals },
            "stuck": { "session": stuck.session_id().to_string() },
            "doomed": doomed,
        });
        let mut driver = Driver::start(&browser, &plan);
        let (mut held, mut next, mut granted) = (Some(held), next, None);
        let mut steps = Vec::new();
        while let Some(step) = driver.next().await {
            match step.as_str() {
                "unlock-holder" => held.take().expect("held once").unlock().await.expect("the holder unlocks"),
                "still-held" => {
                    // The refused actions changed nothing.
                    assert_eq!(stuck.state(), SessionState::Connected, "a refused expiry expired the session");
                    assert!(observer.exists(doomed).await.expect("exists").is_some(), "a refused delete deleted");
                    assert!(!next.is_finished(), "the waiter got the lock though the holder is alive");
                }
                "expired" => {
                    wait_state(&stuck, SessionState::Expired, DEADLINE).await;
                    let (client, guard) = within("the next waiter's grant", DEADLINE, &mut next).await.expect("task");
                    let children = observer.get_children(stuck_dir).await.expect("children");
                    assert_eq!(children.len(), 1, "only the new holder is left: {children:?}");
                    assert!(guard.path().ends_with(&children[0]), "{} holds, not {children:?}", guard.path());
                    granted = Some((client, guard));
                }
                "deleted" => {
                    wait_for("the node deleted", DEADLINE, || async {
                        observer.exists(doomed).await.ok()?.is_none().then_some(())
                    })
                    .await;
                }
                other => panic!("the browser script asked for an unknown step {other}"),
            }
            steps.push(step);
            driver.ok().await;
        }
        assert!(granted.is_some(), "the script never asked to check the expiry");
        report(&format!("steps done: {steps:?}"));
        // The first waiter got the lock in the handoff the page showed.
        let (_, first) = within("the first waiter's grant", DEADLINE, waiters.remove(0)).await.expect("task");
        first.unlock().await.expect("unlock");
    })
    .await;
}

// docs/console.md, "Responsiveness": with 100,000 znodes and 1,000 lock directories the
// page's first renders, a filter, paging and a deep node are timed in the browser; the
// figures are printed, not judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_stays_responsive_with_100k_znodes_and_1000_locks() {
    let Some(browser) = Browser::find(&package_dir()) else { return };
    let _one_browser = ward_testkit::serial().await;
    within("the scale run", Duration::from_secs(600), async {
        let server = ServerProcess::builder().admin().in_memory().start();
        let addr = server.addr_str();
        let client = connect(&addr).await;
        let started = Instant::now();
        // 100 directories of 1,000 nodes, a multi of 1,000 creates each.
        client.create("/scale", b"", CreateMode::Persistent).await.expect("create /scale");
        let mut created = 1;
        for d in 0..100 {
            let dir = format!("/scale/d{d:03}");
            client.create(&dir, b"", CreateMode::Persistent).await.expect("create dir");
            let ops = (0..1000)
                .map(|n| Op::Create {
                    path: format!("{dir}/n{n:04}"),
                    data: b"x".to_vec(),
                    mode: CreateMode::Persistent,
                })
                .collect();
            client.multi(ops).await.expect("a multi of 1000 creates");
            created += 1001;
        }
        let deep = "/scale/d042/n0042";
        report(&format!("created {created} znodes in {:.1} s", started.elapsed().as_secs_f64()));
        // 1,000 lock directories: 1,000 holders in 10 sessions, and a waiter in every tenth.
        let started = Instant::now();
        let mut holders = Vec::new();
        let mut guards = Vec::new();
        for s in 0..10 {
            holders.push(client_of(&addr, &format!("scale-holder-{s}")).await);
        }
        for l in 0..1000 {
            let dir = format!("/locks/l{:02}/lock-{l:04}", l % 50);
            guards.push(holders[l % 10].lock(&dir).await.expect("lock"));
        }
        let waiter = client_of(&addr, "scale-waiter").await;
        let mut waiting = Vec::new();
        for l in (0..1000).step_by(10) {
            let dir = format!("/locks/l{:02}/lock-{l:04}", l % 50);
            let w = waiter.clone();
            waiting.push(tokio::spawn(async move { w.lock(&dir).await }));
        }
        wait_until("100 waiters queued", DEADLINE, || async {
            let figures = ward_testkit::http::get(server.admin_addr(), "/api/sessions");
            figures.1.contains("\"locks_waiting\":100")
        })
        .await;
        report(&format!("took 1000 locks and queued 100 waiters in {:.1} s", started.elapsed().as_secs_f64()));
        let plan = serde_json::json!({
            "mode": "scale",
            "base": format!("http://{}", server.admin_addr()),
            "filter": "/locks/l07/",
            "big": "/scale/d007",
            "deep": deep,
        });
        let mut driver = Driver::start(&browser, &plan);
        if let Some(step) = driver.next().await {
            panic!("the scale script asked for a step ({step})");
        }
        for w in waiting {
            w.abort();
        }
        drop(guards);
    })
    .await;
}

/// `GET path` on the admin listener, as JSON (blocking: off the runtime's threads).
async fn api(admin: std::net::SocketAddr, path: &str) -> serde_json::Value {
    let path = path.to_string();
    let (status, body) =
        tokio::task::spawn_blocking(move || ward_testkit::http::get(admin, &path)).await.expect("the request");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// `POST path` with `headers`: the status and the body.
async fn post(admin: std::net::SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let path = path.to_string();
    let headers: Vec<(String, String)> = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    tokio::task::spawn_blocking(move || {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        ward_testkit::http::request(admin, "POST", &path, &headers)
    })
    .await
    .expect("the request")
}

// docs/console.md, "The API" and "Actions", without a browser: a lock's queue, a node, the
// sessions as JSON for scripts; an action without the token is refused with 401, with a
// wrong one with 403, and with it the session expires; a server without a token file
// refuses every action, and one whose token file others may read does not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_scripts_and_refuses_actions_without_the_token() {
    ward_testkit::bounded(async {
        let secrets = TempDir::new("console-token");
        let server = ServerProcess::builder().admin().flags(&["--admin-token-file", &token_file(&secrets)]).start();
        let (addr, admin) = (server.addr_str(), server.admin_addr());
        let observer = connect(&addr).await;
        let holder = client_of(&addr, "api-holder").await;
        let held = holder.lock_with_data("/api-test/lock", b"why: nightly").await.expect("lock");
        let waiter = queue_for(&observer, client_of(&addr, "api-waiter").await, "/api-test/lock", 1, b"").await;

        let locks = api(admin, "/api/locks?prefix=%2Fapi-test%2F").await;
        assert_eq!(locks["total"], 1, "{locks}");
        let queue = &locks["directories"][0]["queue"];
        assert_eq!((queue[0]["owner"].as_str(), queue[0]["holds"].as_bool()), (Some("api-holder"), Some(true)));
        assert_eq!(queue[0]["data"]["text"], "why: nightly");
        assert_eq!(queue[0]["token"], held.fencing_token());
        assert_eq!((queue[1]["owner"].as_str(), queue[1]["holds"].as_bool()), (Some("api-waiter"), Some(false)));
        let node = api(admin, "/api/tree?path=%2Fapi-test").await;
        assert_eq!((node["children"]["total"].as_u64(), node["kind"].as_str()), (Some(1), Some("container")));
        let sessions = api(admin, &format!("/api/sessions?detail={}", holder.session_id())).await;
        assert_eq!(sessions["detail"]["locks_held"], 1, "{sessions}");
        assert_eq!(sessions["detail"]["protocol"], "ward");

        let expire = format!("/api/sessions/expire?id={}", holder.session_id());
        assert_eq!(post(admin, &expire, &[]).await.0, 401);
        assert_eq!(post(admin, &expire, &[("Authorization", "Bearer not-the-token-at-all")]).await.0, 403);
        let (status, _) = ward_testkit::http::get(admin, &expire);
        assert_eq!(status, 405, "an action is a POST");
        assert_eq!(holder.state(), SessionState::Connected, "a refused expiry expired the session");
        let bearer = format!("Bearer {TOKEN}");
        let (status, body) = post(admin, &expire, &[("Authorization", &bearer)]).await;
        assert_eq!(status, 200, "{body}");
        wait_state(&holder, SessionState::Expired, DEADLINE).await;
        let (_, _guard) = within("the waiter's grant", DEADLINE, waiter).await.expect("task");
        assert_eq!(post(admin, &expire, &[("Authorization", &bearer)]).await.0, 404, "it has ended already");

        // Off by default: every action is refused.
        let plain = ServerProcess::builder().admin().in_memory().start();
        assert_eq!(post(plain.admin_addr(), "/api/tree/delete?path=%2Fx", &[("Authorization", &bearer)]).await.0, 401);

        // A token file others may read stops the server at startup.
        let open = secrets.path().join("open-token");
        std::fs::write(&open, format!("{TOKEN}\n")).expect("write");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let refused = ServerProcess::builder()
            .in_memory()
            .flags(&["--admin-token-file", &open.display().to_string()])
            .try_start();
        let why = refused.err().expect("a world-readable token file is refused");
        assert!(why.contains("chmod 600"), "{why}");
    })
    .await;
}
