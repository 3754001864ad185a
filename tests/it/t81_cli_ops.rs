//! The operator-facing `ward` CLI (docs/operations.md, "The ward CLI"): version, help and
//! completions, JSON output, watching, conditional writes, data from stdin, election
//! observers, lock queues, `rm -r /`, and closed output streams.

use crate::harness::*;
use serde_json::Value;
use ward_client::CreateMode;

/// A usage error is a short message with a hint, exit 2; `--version`, per-command `--help`
/// and completion scripts come from the same definition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_version_help_completions_and_short_usage_errors() {
    bounded(async {
        // None of these reach a server.
        let nowhere = "127.0.0.1:1";
        let version = run_cli(nowhere, &["--version"]).await.success();
        assert_eq!(version.stdout, format!("ward {}\n", env!("CARGO_PKG_VERSION")));
        let help = run_cli(nowhere, &["lock", "--help"]).await.success();
        assert!(help.stdout.contains("Usage: ward lock") && help.stdout.contains("WARD_FENCING_TOKEN"), "{help:?}");
        for shell in ["bash", "zsh", "fish"] {
            let script = run_cli(nowhere, &["completions", shell]).await.success();
            assert!(script.stdout.contains("ward") && script.stdout.contains("holders"), "{shell}: {script:?}");
        }
        let bad = run_cli(nowhere, &["badcmd"]).await;
        assert_eq!(bad.code(), Some(2), "{bad:?}");
        assert!(bad.stderr.lines().count() <= 6 && bad.stderr.contains("--help"), "{bad:?}");
        assert!(bad.stdout.is_empty(), "{bad:?}");
    })
    .await
}

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not one JSON document ({e}): {out:?}"))
}

/// `--output json` on the reading commands, with the documented field names; data that is
/// not UTF-8 comes as base64.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_json_output_of_the_reading_commands() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        c.create("/j", b"text", CreateMode::Persistent).await.expect("create /j");
        c.create("/j/bin", &[0xff, 0x00, 0x01], CreateMode::Persistent).await.expect("create /j/bin");

        let ls = json(&run_cli(&addr, &["ls", "/", "--output", "json"]).await.success().stdout);
        assert_eq!(ls, serde_json::json!({"path": "/", "children": ["j"]}));
        let tree = json(&run_cli(&addr, &["--output", "json", "tree", "/j"]).await.success().stdout);
        assert_eq!(tree["nodes"], serde_json::json!(["/j", "/j/bin"]));
        let get = json(&run_cli(&addr, &["get", "/j", "--output", "json"]).await.success().stdout);
        assert_eq!((&get["data"], &get["data_encoding"]), (&"text".into(), &"utf-8".into()));
        assert_eq!(get["stat"]["num_children"], 1);
        let bin = json(&run_cli(&addr, &["get", "/j/bin", "--output", "json"]).await.success().stdout);
        assert_eq!((&bin["data"], &bin["data_encoding"]), (&"/wAB".into(), &"base64".into()));
        let stat = json(&run_cli(&addr, &["stat", "/j", "--output", "json"]).await.success().stdout);
        assert_eq!(stat["stat"]["version"], 0);
        assert_eq!(stat["stat"]["ephemeral_owner"], Value::Null);

        let members = json(&run_cli(&addr, &["members", "--output", "json"]).await.success().stdout);
        assert_eq!(members["members"][0]["role"], "leader", "{members}");
        let stats = json(&run_cli(&addr, &["stats", "--output", "json"]).await.success().stdout);
        for field in ["last_zxid", "znodes", "sessions", "watches", "lock_grants", "log_fsyncs"] {
            assert!(stats[field].is_u64(), "{field} missing: {stats}");
        }
        // The root, /j and /j/bin.
        assert_eq!(stats["znodes"], 3, "{stats}");
        let text = run_cli(&addr, &["stats"]).await.success().stdout;
        assert!(text.lines().any(|l| l == "znodes 3"), "{text}");
    })
    .await
}

/// `set -v` and `rm -v` are conditional on the node's version (G10): a wrong one fails with
/// "bad version" (exit 1) and changes nothing. `-` as DATA reads stdin to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_versioned_writes_and_data_from_stdin() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        c.create("/v", b"a", CreateMode::Persistent).await.expect("create /v");

        let wrong = run_cli(&addr, &["set", "-v", "5", "/v", "b"]).await;
        assert_eq!(wrong.code(), Some(1), "{wrong:?}");
        assert!(wrong.stderr.contains("bad version") && wrong.stderr.contains("at version 0"), "{wrong:?}");
        assert_eq!(c.get_data("/v").await.expect("get").0, b"a");
        run_cli(&addr, &["set", "-v", "0", "/v", "b"]).await.success();
        let wrong = run_cli(&addr, &["rm", "-v", "0", "/v"]).await;
        assert_eq!(wrong.code(), Some(1), "{wrong:?}");
        assert!(c.exists("/v").await.expect("exists").is_some());
        run_cli(&addr, &["rm", "--expected-version", "1", "/v"]).await.success();
        assert_eq!(c.exists("/v").await.expect("exists"), None);

        let text = b"line one\nline two\n";
        run_cli_stdin(&addr, &["create", "/in", "-"], text).await.success();
        assert_eq!(c.get_data("/in").await.expect("get").0, text);
        let binary = [0u8, 0xff, b'-', b'\n'];
        run_cli_stdin(&addr, &["set", "/in", "-"], &binary).await.success();
        assert_eq!(c.get_data("/in").await.expect("get").0, binary);
        let held = run_cli_stdin(&addr, &["create", "--hold", "/held", "-"], b"x").await;
        assert_eq!(held.code(), Some(2), "{held:?}");
    })
    .await
}

/// The next JSON event line of a `ward watch --output json`: "TYPE PATH" and its zxid.
async fn event(watch: &mut ClientProcess) -> (String, Option<u64>) {
    let line = json(&watch.next_line().await);
    let (kind, path) = (line["type"].as_str().unwrap_or("?"), line["path"].as_str().unwrap_or("?"));
    (format!("{kind} {path}"), line["zxid"].as_u64())
}

/// `ward watch /x` prints a set on /x, the creation and deletion of a child and the delete
/// of /x, one line each, with their zxids (G6: each re-armed watch misses nothing); with
/// `--recursive --output json` a grandchild's changes too, as JSON lines. SIGTERM ends it
/// with status 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_watch_streams_set_child_create_and_delete() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        c.create("/x", b"", CreateMode::Persistent).await.expect("create /x");
        let record = RecordFile::new("cli-watch");
        let stderr = record.path().with_file_name("watch-stderr.txt");
        let mut watch = ClientProcess::spawn_logged(&addr, &["watch", "/x"], &stderr);
        let stderr_json = record.path().with_file_name("watch-json-stderr.txt");
        let args = ["watch", "/x", "--recursive", "--output", "json"];
        let mut recursive = ClientProcess::spawn_logged(&addr, &args, &stderr_json);
        // ward watch says so once the watch is armed.
        stderr_says(&stderr, "watching").await;
        stderr_says(&stderr_json, "watching").await;

        // One change at a time, each seen by both watchers before the next: quick changes
        // of one node may be reported as one event.
        let set = c.set_data("/x", b"1", None).await.expect("set /x");
        assert_eq!(watch.next_line().await, format!("changed /x zxid={} version=1", set.mzxid));
        assert_eq!(event(&mut recursive).await, ("changed /x".into(), Some(set.mzxid)));
        let (_, child) = c.create_with_stat("/x/child", b"", CreateMode::Persistent).await.expect("create child");
        assert_eq!(watch.next_line().await, format!("created /x/child zxid={} version=0", child.czxid));
        assert_eq!(event(&mut recursive).await, ("created /x/child".into(), Some(child.czxid)));
        let (_, g) = c.create_with_stat("/x/child/g", b"", CreateMode::Persistent).await.expect("create grandchild");
        assert_eq!(event(&mut recursive).await, ("created /x/child/g".into(), Some(g.czxid)));
        let set = c.set_data("/x/child/g", b"2", None).await.expect("set grandchild");
        assert_eq!(event(&mut recursive).await, ("changed /x/child/g".into(), Some(set.mzxid)));
        c.delete("/x/child/g", None).await.expect("delete grandchild");
        assert_eq!(event(&mut recursive).await.0, "deleted /x/child/g");
        c.delete("/x/child", None).await.expect("delete child");
        assert_eq!(watch.next_line().await, "deleted /x/child");
        assert_eq!(event(&mut recursive).await.0, "deleted /x/child");
        c.delete("/x", None).await.expect("delete /x");
        let deleted = watch.next_line().await;
        assert!(deleted.starts_with("deleted /x zxid="), "{deleted}");
        let (what, zxid) = event(&mut recursive).await;
        assert_eq!(what, "deleted /x");
        assert_eq!(Some(format!("deleted /x zxid={}", zxid.expect("the delete's zxid"))), Some(deleted));

        watch.terminate();
        assert_eq!(watch.wait_exit().await.code(), Some(0));
    })
    .await
}

/// `ward get -w PATH` prints the data, then the next change (once it prints the data, its
/// watch is armed), and exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_get_w_prints_the_data_then_the_change() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        c.create("/g", b"before", CreateMode::Persistent).await.expect("create /g");
        let mut get = ClientProcess::spawn(&addr, &["get", "-w", "/g"]);
        assert_eq!(get.next_line().await, "before");
        let stat = c.set_data("/g", b"after", None).await.expect("set /g");
        assert_eq!(get.next_line().await, format!("changed /g zxid={}", stat.mzxid));
        assert_eq!(get.wait_exit().await.code(), Some(0));
    })
    .await
}

/// `ward elect --observe` prints the leader, then its successor when it resigns (G12).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_elect_observe_follows_the_leader() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let first = connect(&addr).await;
        let second = connect(&addr).await;
        let leading = first.election("/vote").campaign(b"first").await.expect("campaign");
        let next = {
            let second = second.clone();
            tokio::spawn(async move { second.election("/vote").campaign(b"second").await.expect("campaign") })
        };
        wait_until("both candidates queue", DEADLINE, || async {
            first.get_children("/vote").await.map_or(0, |c| c.len()) == 2
        })
        .await;
        let mut observe = ClientProcess::spawn(&addr, &["elect", "--observe", "/vote"]);
        let line = observe.next_line().await;
        let token = leading.fencing_token();
        assert_eq!(line, format!("leader=first node={} token={token}", leading.path()));
        leading.resign().await.expect("resign");
        let successor = within("the second candidate leads", DEADLINE, next).await.expect("task");
        let line = observe.next_line().await;
        assert_eq!(line, format!("leader=second node={} token={}", successor.path(), successor.fencing_token()));
    })
    .await
}

/// An ISO 8601 UTC time with milliseconds: `2026-11-24T07:10:00.123Z`.
fn is_utc_time(text: &str) -> bool {
    let shape = "dddd-dd-ddTdd:dd:dd.dddZ";
    text.len() == shape.len()
        && text.chars().zip(shape.chars()).all(|(c, s)| if s == 'd' { c.is_ascii_digit() } else { c == s })
}

/// G1: `ward stat` prints ctime and mtime as UTC dates, as zkCli prints dates
/// (docs/operations.md, "The ward CLI"); `--output json` keeps them in milliseconds since
/// the epoch, the same instants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_stat_prints_times_as_utc_dates() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        run_cli(&addr, &["create", "/dated", "v1"]).await.success();
        run_cli(&addr, &["set", "/dated", "v2"]).await.success();
        let text = run_cli(&addr, &["stat", "/dated"]).await.success().stdout;
        let stat = json(&run_cli(&addr, &["stat", "/dated", "--output", "json"]).await.success().stdout);
        for field in ["ctime", "mtime"] {
            let date = text.lines().find_map(|l| l.strip_prefix(&format!("{field} = "))).unwrap_or("");
            assert!(is_utc_time(date), "{field}: {text}");
            let ms = stat["stat"][field].as_i64().unwrap_or_else(|| panic!("{field} in ms: {stat}"));
            // The seconds and milliseconds of the date are those of the number.
            assert_eq!(date[17..23], format!("{:02}.{:03}", ms / 1000 % 60, ms % 1000), "{field}: {text} {stat}");
        }
    })
    .await
}

/// `ward holders` marks every holder of a shared lock and the writer waiting behind them,
/// with the time each joined the queue (`queued=`) in UTC (docs/recipes.md, "Lock context").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_holders_marks_holders_and_waiters_with_utc_times() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        let other = connect(&addr).await;
        let reader_one = c.read_lock("/rw").await.expect("read lock");
        let reader_two = other.read_lock("/rw").await.expect("read lock");
        let writer = connect(&addr).await;
        let waiting = tokio::spawn(async move { writer.lock("/rw").await.map(drop) });
        wait_until("the writer queues", DEADLINE, || async { c.get_children("/rw").await.expect("ls").len() == 3 })
            .await;

        let out = run_cli(&addr, &["holders", "/rw"]).await.success().stdout;
        let roles: Vec<&str> = out.lines().map(|l| l.split(' ').next().unwrap_or("")).collect();
        assert_eq!(roles, ["holder", "holder", "waiter"], "{out}");
        for line in out.lines() {
            let queued = line.split(' ').find_map(|w| w.strip_prefix("queued=")).unwrap_or("");
            assert!(is_utc_time(queued), "{line}");
        }
        let listed = json(&run_cli(&addr, &["holders", "/rw", "--output", "json"]).await.success().stdout);
        let contenders = listed["contenders"].as_array().expect("contenders");
        assert_eq!(contenders.len(), 3, "{listed}");
        assert_eq!(contenders[2]["role"], "waiter");
        assert!(is_utc_time(contenders[0]["queued"].as_str().expect("queued")), "{listed}");
        // `since`, its name before, is kept for scripts: the same instant.
        assert_eq!(contenders[0]["since_ms"], contenders[0]["queued_ms"], "{listed}");
        // The help says what the time is: when the contender queued, not when it was granted.
        let help = run_cli(&addr, &["holders", "--help"]).await.success().stdout;
        assert!(help.contains("queued=TIME") && help.contains("not when it began to hold"), "{help}");
        reader_one.unlock().await.expect("unlock");
        reader_two.unlock().await.expect("unlock");
        within("the writer holds", DEADLINE, waiting).await.expect("task").expect("lock");
    })
    .await
}

/// `rm -r /` is refused (exit 2) unless `--force-root`; with it, every node below the root
/// goes, the root stays, and nothing is reported as failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_rm_root_needs_force_root_and_keeps_the_root() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        for node in ["/a", "/a/b", "/a/b/c", "/d"] {
            c.create(node, b"", CreateMode::Persistent).await.expect("create");
        }
        for args in [&["rm", "-r", "/"][..], &["rm", "/"]] {
            let refused = run_cli(&addr, args).await;
            assert_eq!(refused.code(), Some(2), "{args:?}: {refused:?}");
            assert!(refused.stderr.contains("--force-root"), "{refused:?}");
        }
        assert_eq!(c.get_children("/").await.expect("ls"), ["a", "d"]);
        let out = run_cli(&addr, &["rm", "-r", "--force-root", "/"]).await.success();
        assert_eq!(out.stderr, "", "{out:?}");
        assert_eq!(c.get_children("/").await.expect("ls"), Vec::<String>::new());
        assert!(c.exists("/").await.expect("exists").is_some());
    })
    .await
}

/// A closed stdout or stderr, or a reader that goes away, never makes ward panic (exit
/// 101): output to a closed stdout ends the command quietly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_closed_output_streams_do_not_panic() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;
        for i in 0..50 {
            c.create(&format!("/n{i:03}"), b"", CreateMode::Persistent).await.expect("create");
        }
        for (script, status) in [
            ("\"$WARD\" ls / >&-", 0),
            ("\"$WARD\" ls / 2>&-", 0),
            ("\"$WARD\" ls / >&- 2>&-", 0),
            ("\"$WARD\" badcmd 2>&-", 2),
            ("\"$WARD\" --help >&-", 0),
            ("\"$WARD\" get /missing 2>&-", 1),
            ("\"$WARD\" completions bash >&-", 0),
        ] {
            let out = run_sh(&addr, &format!("{script}; echo \"status=$?\"")).await.success();
            let said = format!("status={status}");
            assert_eq!(out.stdout.lines().last(), Some(said.as_str()), "{script}: {out:?}");
        }
        // `head -0` exits at once: ward's writes meet a closed pipe.
        for command in ["ls /", "tree /", "--output json ls /"] {
            let script = format!("{{ \"$WARD\" {command}; echo \"status=$?\" >&2; }} | head -0");
            let out = run_sh(&addr, &script).await.success();
            assert_eq!(out.stderr, "status=0\n", "{command}: {out:?}");
        }
    })
    .await
}
