//! The client's examples (`client/examples`), built and run against a real server as their
//! docs tell a reader to run them (G12, G7): what the README and the crate docs point to
//! keeps working, and says plainly when no server answers.

use crate::harness::*;
use ward_client::Client;

/// The token at the end of `line`, which must start with `prefix`.
fn token_after(line: &str, prefix: &str) -> u64 {
    let token = line.strip_prefix(prefix).unwrap_or_else(|| panic!("{line:?} does not start with {prefix:?}"));
    token.parse().unwrap_or_else(|e| panic!("{line:?}: no token after {prefix:?}: {e}"))
}

// G12: `lock` takes the lock, writes under its fence and releases it; the next holder's
// token is larger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_example_writes_under_its_fence_and_releases() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let mut cmd = example("lock", &addr);
        cmd.arg("/locks/example");
        let out = run_command(cmd, None).await;
        assert!(out.status.success(), "{out:?}");
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{out:?}");
        let token = token_after(lines[0], "holding /locks/example with fencing token ");
        assert_eq!(lines[1], "released");
        let client = connect(&addr).await;
        assert_eq!(client.get_data("/demo-data").await.expect("get").0, b"written under the lock");
        let next = client.try_lock("/locks/example", DEADLINE).await.expect("lock").expect("released");
        assert!(next.fencing_token() > token);
    })
    .await
}

/// Waits until process `pid` has a handler for SIGINT (`SigCgt` in /proc), so that a
/// SIGINT sent now is handled rather than fatal.
async fn wait_for_sigint_handler(pid: u32) {
    const SIGINT_BIT: u64 = 1 << (2 - 1);
    wait_until("the example handles SIGINT", DEADLINE, || async move {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim);
        caught.and_then(|hex| u64::from_str_radix(hex, 16).ok()).is_some_and(|mask| mask & SIGINT_BIT != 0)
    })
    .await
}

// G12: `election` leads, resigns on Ctrl-C and exits 0, leaving nobody leading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn election_example_leads_and_resigns_on_ctrl_c() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let mut cmd = example("election", &addr);
        cmd.arg("node-1");
        let mut process = ClientProcess::spawn_command(cmd);
        let leads = process.next_line().await;
        let token = token_after(leads.strip_suffix(')').unwrap_or(&leads), "node-1 leads (token ");
        let client = connect(&addr).await;
        let leader = client.election("/election/demo").leader().await.expect("leader").expect("a leader");
        assert_eq!((leader.data.as_slice(), leader.token), (&b"node-1"[..], token));
        wait_for_sigint_handler(process.pid()).await;
        process.interrupt();
        assert_eq!(process.next_line().await, "node-1 resigned");
        assert!(process.wait_exit().await.success());
        assert_eq!(client.election("/election/demo").leader().await.expect("leader"), None);
    })
    .await
}

// G7, G12: `recover` survives the end of its session. It appends a line under the lock;
// the server ends its session (a new session of its owner name); the next line is
// appended under the lock taken again by a new client, with a larger token, and the
// journal has each line once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_example_takes_its_lock_again_after_its_session_ends() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let mut cmd = example("recover", &addr);
        cmd.env("WARD_OWNER", "journal-test");
        let mut process = ClientProcess::spawn_command(cmd);
        let holding = "holding /locks/journal with fencing token ";
        let first = token_after(&process.next_line().await, holding);
        process.write_line("one");
        assert_eq!(process.next_line().await, format!("appended \"one\" under fencing token {first}"));

        // The example's owner name again: the server ends the example's session at once.
        let successor = Client::builder(&addr).owner("journal-test").connect().await.expect("connect");
        process.write_line("two");
        let second = token_after(&process.next_line().await, holding);
        assert!(second > first, "a later holder's token: {second} > {first}");
        assert_eq!(process.next_line().await, format!("appended \"two\" under fencing token {second}"));
        process.close_stdin();
        assert!(process.wait_exit().await.success());
        drop(successor);
        let client = connect(&addr).await;
        assert_eq!(client.get_data("/demo/journal").await.expect("get").0, b"one\ntwo\n");
    })
    .await
}

// G7: connecting where no server listens fails with `Connect`; each example then exits
// unsuccessfully, saying so and what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn examples_say_so_when_no_server_answers() {
    bounded(async {
        let addr = ward_testkit::port::stable().expect("a free port").to_string();
        for name in ["lock", "election", "recover"] {
            let out = run_command(example(name, &addr), None).await;
            assert!(!out.status.success(), "{name}: {out:?}");
            assert!(out.stderr.contains(&format!("no Ward server answers at {addr}")), "{name}: {out:?}");
            assert!(out.stderr.contains("cargo run --release --bin ward-server"), "{name}: {out:?}");
        }
    })
    .await
}
