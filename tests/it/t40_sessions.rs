//! Sessions and ephemerals: a node lives exactly as long as its session.

use crate::harness::*;
use std::time::{Duration, Instant};
use ward_client::{CreateMode, Error, EventKind, SessionState};

/// Short timeouts so expiry happens within a test; the server floor must allow them.
const SHORT_FLAGS: [&str; 4] = ["--min-session-timeout-ms", "500", "--max-session-timeout-ms", "40000"];
const CLI_SESSION_MS: u64 = 2000;

// G5: a SIGKILLed client process's ephemerals go once its session expires, and watchers get NodeDeleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_client_process_ephemerals_expire() {
    bounded(async {
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        let observer = connect(&server.addr_str()).await;
        let timeout = CLI_SESSION_MS.to_string();
        let mut holder = ClientProcess::spawn(
            &server.addr_str(),
            &["--session-timeout-ms", &timeout, "create", "-e", "--hold", "/held", "mine"],
        );
        assert_eq!(holder.next_line().await, "/held");
        let mut seq_holder = ClientProcess::spawn(
            &server.addr_str(),
            &["--session-timeout-ms", &timeout, "create", "-e", "-s", "--hold", "/held-"],
        );
        let seq_path = seq_holder.next_line().await;
        assert_eq!(seq_path.len(), "/held-".len() + 10, "{seq_path}");

        let (data, stat, watch) = observer.get_data_watch("/held").await.expect("get /held");
        assert_eq!(data, b"mine");
        let owner = stat.ephemeral_owner.expect("an ephemeral has an owner");
        assert_ne!(owner, observer.session_id());
        let (seq_stat, seq_watch) = observer.exists_watch(&seq_path).await.expect("exists");
        assert!(seq_stat.expect("held sequential node").ephemeral_owner.is_some());

        holder.kill9();
        seq_holder.kill9();
        let killed = Instant::now();
        let bound = Duration::from_millis(CLI_SESSION_MS) + Duration::from_secs(10);
        wait_until("the killed holders' ephemerals are gone", bound, || async {
            observer.exists("/held").await.expect("exists").is_none()
                && observer.exists(&seq_path).await.expect("exists").is_none()
        })
        .await;
        // Reported, not asserted: timing belongs to benchmarks, not tests.
        eprintln!("ephemerals of a {CLI_SESSION_MS} ms session gone {:?} after SIGKILL", killed.elapsed());
        let event = fired(watch).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeDeleted, "/held"));
        let event = fired(seq_watch).await;
        assert_eq!((event.kind, event.path), (EventKind::NodeDeleted, seq_path));
    })
    .await
}

// G5: close() deletes the session's ephemerals at once, and watchers are told NodeDeleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_deletes_ephemerals_at_once() {
    bounded(async {
        let server = ServerProcess::start();
        let owner = connect(&server.addr_str()).await;
        let other = connect(&server.addr_str()).await;
        owner.create("/dir", b"", CreateMode::Persistent).await.expect("create /dir");
        owner.create("/dir/e1", b"1", CreateMode::Ephemeral).await.expect("create e1");
        let seq = owner.create("/dir/e-", b"", CreateMode::EphemeralSequential).await.expect("create e-");
        other.create("/dir/theirs", b"", CreateMode::Ephemeral).await.expect("create theirs");

        let (_, _, data_watch) = other.get_data_watch("/dir/e1").await.expect("watch e1");
        let (_, exists_watch) = other.exists_watch(&seq).await.expect("watch seq");
        let (children, child_watch) = other.get_children_watch("/dir").await.expect("watch /dir");
        assert_eq!(children.len(), 3);

        owner.close().await.expect("close");
        // Right after close() returns, another session no longer sees them.
        assert_eq!(other.exists("/dir/e1").await.expect("exists e1"), None);
        assert_eq!(other.exists(&seq).await.expect("exists seq"), None);
        assert_eq!(other.get_children("/dir").await.expect("ls /dir"), ["theirs"]);
        assert!(other.exists("/dir").await.expect("exists /dir").is_some(), "persistent stays");

        let event = fired(data_watch).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeDeleted, "/dir/e1"));
        let event = fired(exists_watch).await;
        assert_eq!((event.kind, event.path), (EventKind::NodeDeleted, seq));
        let event = fired(child_watch).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeChildrenChanged, "/dir"));

        assert_eq!(owner.state(), SessionState::Closed);
        let after = owner.get_data("/dir").await;
        assert!(matches!(after, Err(Error::Closed)), "{after:?}");
    })
    .await
}

// G5: a client that stays connected keeps its ephemerals past several session timeouts (heartbeats work).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_session_is_kept_alive_by_heartbeats() {
    bounded(async {
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        // Short enough that a missed heartbeat would show, long enough for a loaded machine.
        let timeout = Duration::from_millis(1500);
        let idle = connect_with(&server.addr_str(), timeout).await;
        assert_eq!(idle.session_timeout(), timeout);
        let watcher = connect(&server.addr_str()).await;
        idle.create("/alive", b"", CreateMode::Ephemeral).await.expect("create /alive");
        let (_, watch) = watcher.exists_watch("/alive").await.expect("watch /alive");
        // Several timeouts of idleness: only the client's automatic heartbeats keep it.
        tokio::time::sleep(timeout * 3).await;
        assert!(watcher.exists("/alive").await.expect("exists").is_some());
        assert_eq!(idle.state(), SessionState::Connected);
        idle.set_data("/alive", b"still", None).await.expect("idle session still works");
        let event = fired(watch).await;
        assert_eq!(event.kind, EventKind::NodeDataChanged, "not deleted: {event:?}");
    })
    .await
}

// G7: the requested session timeout is clamped into the server's [min, max].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_timeout_is_clamped() {
    bounded(async {
        let server =
            ServerProcess::start_with(&["--min-session-timeout-ms", "1000", "--max-session-timeout-ms", "3000"]);
        let cases = [(100, 1000), (2000, 2000), (60_000, 3000)];
        for (asked, negotiated) in cases {
            let c = connect_with(&server.addr_str(), Duration::from_millis(asked)).await;
            assert_eq!(c.session_timeout(), Duration::from_millis(negotiated), "asked {asked}");
        }
        let a = connect(&server.addr_str()).await;
        let b = connect(&server.addr_str()).await;
        assert_ne!(a.session_id(), b.session_id());
    })
    .await
}

// G5: a holding CLI whose stdin closes (or that gets SIGTERM) ends its session cleanly: its ephemeral is gone when it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_hold_releases_on_stdin_close_or_sigterm() {
    bounded(async {
        let server = ServerProcess::start();
        let observer = connect(&server.addr_str()).await;
        let mut holder = ClientProcess::spawn(&server.addr_str(), &["create", "-e", "--hold", "/lease"]);
        assert_eq!(holder.next_line().await, "/lease");
        assert!(observer.exists("/lease").await.expect("exists").is_some());
        holder.close_stdin();
        let status = holder.wait_exit().await;
        assert!(status.success(), "{status}");
        assert_eq!(observer.exists("/lease").await.expect("exists"), None);

        // SIGTERM is a request to let go too, not a crash.
        let mut holder = ClientProcess::spawn(&server.addr_str(), &["create", "-e", "-s", "--hold", "/lease-"]);
        let path = holder.next_line().await;
        assert!(observer.exists(&path).await.expect("exists").is_some());
        holder.terminate();
        let status = holder.wait_exit().await;
        assert!(status.success(), "{status}");
        assert_eq!(observer.exists(&path).await.expect("exists"), None);
    })
    .await
}
