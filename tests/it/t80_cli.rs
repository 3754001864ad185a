//! The `ward` CLI against a real server, cross-checked through the client API.

use crate::harness::*;
use ward_client::CreateMode;

// G2: each CLI command is one session whose writes the next command (and any client) reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_create_get_set_ls_tree_stat_rm() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let c = connect(&addr).await;

        let out = run_cli(&addr, &["create", "/cli", "hello"]).await.success();
        assert_eq!(out.stdout, "/cli\n");
        assert_eq!(c.get_data("/cli").await.expect("get /cli").0, b"hello");
        assert_eq!(run_cli(&addr, &["get", "/cli"]).await.success().stdout, "hello\n");
        run_cli(&addr, &["set", "/cli", "world"]).await.success();
        assert_eq!(run_cli(&addr, &["get", "/cli"]).await.success().stdout, "world\n");

        run_cli(&addr, &["create", "/cli/b"]).await.success();
        c.create("/cli/a", b"", CreateMode::Persistent).await.expect("create /cli/a");
        run_cli(&addr, &["create", "/cli/a/deep", "x"]).await.success();
        let seq = run_cli(&addr, &["create", "-s", "/cli/n-"]).await.success().stdout;
        assert_eq!(seq, "/cli/n-0000000002\n");
        assert_eq!(run_cli(&addr, &["ls", "/cli"]).await.success().stdout, "a\nb\nn-0000000002\n");
        assert_eq!(
            run_cli(&addr, &["tree", "/cli"]).await.success().stdout,
            "/cli\n/cli/a\n/cli/a/deep\n/cli/b\n/cli/n-0000000002\n"
        );
        let stat = run_cli(&addr, &["stat", "/cli"]).await.success().stdout;
        for line in ["version = 1", "num_children = 3", "data_length = 5", "ephemeral_owner = none"] {
            assert!(stat.lines().any(|l| l == line), "{line:?} missing from:\n{stat}");
        }

        let refused = run_cli(&addr, &["rm", "/cli"]).await;
        assert_eq!(refused.code(), Some(1), "{refused:?}");
        assert!(!refused.stderr.is_empty());
        assert!(c.exists("/cli").await.expect("exists").is_some());
        run_cli(&addr, &["rm", "-r", "/cli"]).await.success();
        assert_eq!(c.exists("/cli").await.expect("exists"), None);

        let missing = run_cli(&addr, &["get", "/cli"]).await;
        assert_eq!(missing.code(), Some(1), "{missing:?}");
        assert!(missing.stdout.is_empty());
        let bad_path = run_cli(&addr, &["ls", "no-slash"]).await;
        assert_eq!(bad_path.code(), Some(1), "{bad_path:?}");
    })
    .await
}

// G5: an ephemeral created by a non-holding CLI dies with its one-command session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_ephemeral_without_hold_is_gone_when_it_exits() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let out = run_cli(&addr, &["create", "-e", "/brief"]).await.success();
        assert_eq!(out.stdout, "/brief\n");
        let c = connect(&addr).await;
        assert_eq!(c.exists("/brief").await.expect("exists"), None);
    })
    .await
}

// G8: usage errors exit 2 without touching the server, with a short message and a hint
// (docs/operations.md, "The ward CLI"); server comes from WARD_SERVER too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_usage_errors_and_server_from_env() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        for args in [
            &[][..],
            &["frobnicate", "/"],
            &["ls"],
            &["get", "/a", "/b"],
            &["ls", "-e", "/"],
            &["--session-timeout-ms", "soon", "ls", "/"],
        ] {
            let out = run_cli(&addr, args).await;
            assert_eq!(out.code(), Some(2), "{args:?}: {out:?}");
            assert!(out.stderr.starts_with("error: "), "{args:?}: {out:?}");
            assert!(out.stderr.contains("try '--help'"), "{args:?}: {out:?}");
            assert!(out.stderr.lines().count() <= 8, "{args:?}: not short: {out:?}");
        }
        let help = run_cli(&addr, &["--help"]).await.success();
        assert!(help.stdout.contains("Usage: ward"), "{help:?}");

        let out = run_cli_env(&addr, &["create", "/from-env", "e"]).await.success();
        assert_eq!(out.stdout, "/from-env\n");
        let c = connect(&addr).await;
        assert_eq!(c.get_data("/from-env").await.expect("get").0, b"e");
    })
    .await
}

// G1: a create under a missing parent is `no node` and creates nothing; the CLI names the
// missing parent, and any missing ancestor above it, and how to make them
// (docs/operations.md, "The ward CLI").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_create_under_a_missing_parent_names_it() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let deep = run_cli(&addr, &["create", "/a/b/c"]).await;
        assert_eq!(deep.code(), Some(1), "{deep:?}");
        assert_eq!(
            deep.stderr.trim_end(),
            "ward: create /a/b/c: no node: the parent /a/b does not exist, nor does /a; create them first: \
             `ward create /a`, then `ward create /a/b`",
        );
        run_cli(&addr, &["create", "/a"]).await.success();
        let under_a = run_cli(&addr, &["create", "-s", "/a/b/n-"]).await;
        assert_eq!(
            under_a.stderr.trim_end(),
            "ward: create /a/b/n-: no node: the parent /a/b does not exist; create it first: `ward create /a/b`",
        );
        let c = connect(&addr).await;
        assert_eq!(c.get_children("/a").await.expect("ls /a"), Vec::<String>::new());
    })
    .await
}

// G8: `ward check` with neither target is a usage error (exit 2) whose usage shows both
// forms, the local ensemble and the running servers (docs/operations.md, "Checking an
// ensemble with `ward check`").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_check_without_a_target_shows_both_forms() {
    bounded(async {
        let out = run_cli("127.0.0.1:1", &["check"]).await;
        assert_eq!(out.code(), Some(2), "{out:?}");
        for form in ["ward check --ensemble N", "ward check --servers ADDR", "--admin ADDR"] {
            assert!(out.stderr.contains(form), "{form:?} missing: {out:?}");
        }
        let help = run_cli("127.0.0.1:1", &["check", "--help"]).await.success();
        assert!(help.stdout.contains("ward check --servers ADDR --admin ADDR"), "{help:?}");
    })
    .await
}

// G7: a server that is not there is an error (exit 1), not a hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_unreachable_server_fails() {
    bounded(async {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        let out = run_cli(&format!("127.0.0.1:{port}"), &["ls", "/"]).await;
        assert_eq!(out.code(), Some(1), "{out:?}");
        assert!(!out.stderr.is_empty());
    })
    .await
}
