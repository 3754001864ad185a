//! Containers and TTL nodes through Ward's own client (G20): lock, election and semaphore
//! directories go once their last contender has left, TTL nodes once unused for their TTL,
//! and each deletion is a logged command: it survives kill -9, replays at its own zxid, and
//! on an ensemble is the leader's and every member's alike.

use crate::harness::*;
use ward_client::{Client, CreateMode};
use ward_testkit::Ensemble;

/// A check interval short enough that a test sees several checks in a second.
const QUICK: [&str; 2] = ["--container-check-interval-ms", "100"];

async fn wait_gone(client: &Client, path: &str) {
    wait_until(&format!("{path} to be deleted"), DEADLINE, || async { matches!(client.exists(path).await, Ok(None)) })
        .await;
}

// G20, docs/recipes.md: the directories the recipes create (and the ancestors they create
// with them) are containers, deleted once the last contender has left; a directory a
// contender still waits in stays, and a lock taken again recreates its directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_election_and_semaphore_directories_go_after_their_last_contender() {
    bounded(async {
        let server = ServerProcess::start_with(&QUICK);
        let (a, b) = (connect(&server.addr_str()).await, connect(&server.addr_str()).await);
        let lock = a.lock("/app/locks/db").await.expect("lock");
        let leadership = a.election("/app/elect").campaign(b"me").await.expect("campaign");
        let permit = a.acquire_permit("/app/sem", 2).await.expect("permit");
        for dir in ["/app", "/app/locks", "/app/locks/db", "/app/elect", "/app/sem"] {
            let stat = a.exists(dir).await.expect("exists").unwrap_or_else(|| panic!("{dir} was created"));
            assert_eq!(stat.ephemeral_owner, None, "{dir} is no ephemeral");
        }
        // A waiter keeps the lock's directory after its holder leaves.
        let waiting = tokio::spawn(async move {
            let guard = b.lock("/app/locks/db").await.expect("second lock");
            guard.unlock().await.expect("unlock the second");
            b
        });
        wait_until("the second contender to queue", DEADLINE, || async {
            a.get_children("/app/locks/db").await.is_ok_and(|c| c.len() == 2)
        })
        .await;
        leadership.resign().await.expect("resign");
        permit.unlock().await.expect("release the permit");
        wait_gone(&a, "/app/elect").await;
        wait_gone(&a, "/app/sem").await;
        assert!(a.exists("/app/locks/db").await.expect("exists").is_some(), "a waiter keeps its directory");
        lock.unlock().await.expect("unlock");
        let b = within("the waiter to get and release the lock", DEADLINE, waiting).await.expect("waiter");
        // The directory, then its parents as each loses its last child.
        wait_gone(&a, "/app").await;
        let again = b.lock("/app/locks/db").await.expect("lock a deleted directory again");
        assert!(a.exists("/app/locks/db").await.expect("exists").is_some(), "recreated");
        again.unlock().await.expect("unlock");
        wait_gone(&a, "/app").await;
    })
    .await
}

// G20, docs/zookeeper-compat.md "TTL and container nodes": through the native API, a TTL
// node goes once childless and unchanged for its TTL; one with a child stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_nodes_and_containers_through_the_native_client() {
    bounded(async {
        let server = ServerProcess::start_with(&QUICK);
        let c = connect(&server.addr_str()).await;
        let ttl = CreateMode::PersistentWithTtl { ttl_ms: 200 };
        let bad = c.create("/bad", b"", CreateMode::PersistentWithTtl { ttl_ms: 0 }).await;
        assert!(is_bad_arguments(&bad), "a TTL of 0: {bad:?}");
        // Created first, with a child: due whenever the childless one is, but kept.
        c.create("/parent", b"", ttl).await.expect("create a TTL node");
        c.create("/parent/child", b"", CreateMode::Persistent).await.expect("create its child");
        c.create("/box", b"", CreateMode::Container).await.expect("create a container");
        c.create("/box/item", b"", CreateMode::Persistent).await.expect("create its child");
        let seq = c.create("/seq-", b"x", CreateMode::PersistentSequentialWithTtl { ttl_ms: 200 }).await;
        let seq = seq.expect("create a sequential TTL node");
        assert!(seq.starts_with("/seq-") && seq.len() == "/seq-".len() + 10, "{seq}");
        c.create("/plain", b"", ttl).await.expect("create a TTL node");
        wait_gone(&c, "/plain").await;
        wait_gone(&c, &seq).await;
        assert!(c.exists("/parent").await.expect("exists").is_some(), "a TTL node with a child stays");
        assert!(c.exists("/box").await.expect("exists").is_some(), "a container with a child stays");
        c.delete("/parent/child", None).await.expect("delete the child");
        c.delete("/box/item", None).await.expect("delete the item");
        wait_gone(&c, "/parent").await;
        wait_gone(&c, "/box").await;
    })
    .await
}

// G20, G11: the cleanup is a logged command. Once a deletion is seen, a kill -9 and a
// restart whose cleanup cannot run yet (its first check is an interval after the start)
// still show the node gone, and the root's counters as the deletion left them: the log
// replayed the same command at the same zxid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanup_survives_kill_9_and_replays_at_its_zxid() {
    bounded(async {
        let mut server = ServerProcess::start_with(&QUICK);
        let c = connect(&server.addr_str()).await;
        let guard = c.lock("/held").await.expect("lock");
        guard.unlock().await.expect("unlock");
        c.create("/ttl", b"", CreateMode::PersistentWithTtl { ttl_ms: 1 }).await.expect("create a TTL node");
        wait_gone(&c, "/held").await;
        wait_gone(&c, "/ttl").await;
        let root = c.exists("/").await.expect("stat /").expect("the root");
        drop(c);
        server.kill9_now();
        assert!(!server.data_dir().join("snapshot").exists(), "no snapshot: the restart replays the log");
        server.restart_with(&["--container-check-interval-ms", "3600000"]);
        let c = connect(&server.addr_str()).await;
        assert_eq!(c.exists("/held").await.expect("exists"), None, "the lock directory is still gone");
        assert_eq!(c.exists("/ttl").await.expect("exists"), None, "the TTL node is still gone");
        let after = c.exists("/").await.expect("stat /").expect("the root");
        assert_eq!((after.pzxid, after.cversion), (root.pzxid, root.cversion), "the same deletions, same zxids");
    })
    .await
}

// G20, G13: on an ensemble the leader's task deletes, and every member applies the same
// deletion at the same zxid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_an_ensemble_the_leader_cleans_up_and_every_member_agrees() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &QUICK).await;
        let leader = ensemble.leader(&[]).await;
        let follower = ensemble.ids().into_iter().find(|id| *id != leader).expect("a follower");
        // Through a follower: its lock directory is the leader's to delete all the same.
        let c = connect(&ensemble.addr(follower)).await;
        let guard = c.lock("/ens/lock").await.expect("lock");
        guard.unlock().await.expect("unlock");
        wait_gone(&c, "/ens").await;
        let mut roots = Vec::new();
        for id in ensemble.ids() {
            let member = connect(&ensemble.addr(id)).await;
            member.sync("/").await.expect("sync");
            assert_eq!(member.exists("/ens").await.expect("exists"), None, "member {id}");
            let root = member.exists("/").await.expect("stat /").expect("the root");
            roots.push((root.pzxid, root.cversion));
        }
        assert!(roots.windows(2).all(|w| w[0] == w[1]), "every member has the same root: {roots:?}");
        // Only a leader proposes (a rare election meanwhile makes two leaders).
        let leaders = [leader, ensemble.leader(&[]).await];
        let cleaned: Vec<u64> = ensemble
            .ids()
            .into_iter()
            .filter(|id| ensemble.member(*id).log_tail().contains("deleted unused containers and TTL nodes"))
            .collect();
        assert!(!cleaned.is_empty(), "some member's task deleted them");
        assert!(cleaned.iter().all(|id| leaders.contains(id)), "members {cleaned:?} deleted; leaders {leaders:?}");
    })
    .await
}
