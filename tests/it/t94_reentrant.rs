//! Reentrant handles with a local queue (G12; docs/recipes.md): a handle that holds
//! re-enters with the same node and token; other handles of the same client queue locally,
//! so the client keeps at most one contender in the server's queue and a local handoff
//! changes the token without leaving it.

use crate::harness::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use ward_client::{Client, CreateMode, Error};

const TASKS: usize = 8;
const HANDOFFS: usize = 200;

/// The contender nodes in `dir` (none if it does not exist yet).
async fn nodes(observer: &Client, dir: &str) -> Vec<String> {
    match observer.get_children(dir).await {
        Ok(children) => children,
        Err(Error::NoNode) => Vec::new(),
        Err(e) => panic!("ls {dir}: {e:?}"),
    }
}

/// True if `fut` is still pending after one more poll (a waiter that has not been granted).
async fn still_pending<F: std::future::Future + Unpin>(fut: &mut F) -> bool {
    tokio::select! {
        biased;
        _ = fut => false,
        () = std::future::ready(()) => true,
    }
}

// G12: nested lock/unlock on one handle keeps one node and one token; a second handle
// of the same client waits (locally: still one node) and gets the lock by a local handoff,
// with a new token that fences the old one out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_locks_keep_one_node_and_token_and_a_second_handle_waits() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let (c, observer) = (connect(&addr).await, connect(&addr).await);
        let first = c.mutex("/re");
        let outer = within("the first lock", DEADLINE, first.lock()).await.expect("lock");
        let token = outer.fencing_token();
        let node = outer.fence().expect("held remotely").path;
        let inner = within("the nested lock", DEADLINE, first.lock()).await.expect("nested lock");
        let innermost = within("the doubly nested lock", DEADLINE, first.lock()).await.expect("nested lock");
        assert_eq!((inner.fencing_token(), innermost.fencing_token()), (token, token), "re-entered: same token");
        assert_eq!(innermost.fence().map(|f| f.path), Some(node.clone()), "re-entered: same node");
        let queue = observer.lock_holders("/re").await.expect("holders");
        assert_eq!(queue.len(), 1, "one node for three nested locks: {queue:?}");
        assert_eq!((queue[0].path.as_str(), queue[0].token), (node.as_str(), token));
        assert_eq!(queue[0].session, Some(c.session_id()));

        let second = c.mutex("/re");
        let mut waiting = Box::pin(second.lock());
        assert!(still_pending(&mut waiting).await, "a second handle got the lock while the first holds it");
        innermost.unlock().await.expect("nested unlock");
        inner.unlock().await.expect("nested unlock");
        // Still held: the node, its token, and the second handle still waiting.
        observer.check_fence(&node, token).await.expect("the nested unlocks did not release");
        assert_eq!(nodes(&observer, "/re").await, [node.rsplit('/').next().expect("name")], "one node");
        assert!(still_pending(&mut waiting).await, "the second handle was granted before the last unlock");

        outer.unlock().await.expect("last unlock");
        let next = within("the second handle holds", DEADLINE, &mut waiting).await.expect("second lock");
        assert!(next.fencing_token() > token, "a local handoff changes the token");
        assert_eq!(next.fence().map(|f| f.path), Some(node.clone()), "handed off without leaving the queue");
        assert_eq!(observer.check_fence(&node, token).await, Err(Error::StaleFence), "the old token is fenced out");
        observer.check_fence(&node, next.fencing_token()).await.expect("the new holder's token");
        assert_eq!(nodes(&observer, "/re").await.len(), 1);
        next.unlock().await.expect("unlock");
        assert_eq!(nodes(&observer, "/re").await, Vec::<String>::new(), "released on the server");
    })
    .await
}

/// What the eight tasks saw, in the order they held the lock.
#[derive(Default)]
struct Holds {
    inside: bool,
    tokens: Vec<u64>,
    /// The server-side contender node of each hold.
    nodes: Vec<String>,
}

// G12: 8 tasks × 200 local handoffs through 8 handles of one client put at most one
// node at a time in the server's queue and need no grant notification at all; every
// handoff gives a larger token. "At most one node" is checked twice: an observer lists the
// queue all along, and afterwards the directory's child changes prove it (sequence numbers
// are the directory's cversion, which every create and delete bumps: with one node at a
// time, node k+1 is numbered 2 above node k and the changes add up to 2 per node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_handles_hand_off_locally_with_one_node_on_the_server() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let (c, observer) = (connect(&addr).await, connect(&addr).await);
        observer.create("/re8", b"", CreateMode::Persistent).await.expect("create /re8");
        let grants_before = observer.server_stats().await.expect("stats").lock_grants;
        let done = Arc::new(AtomicBool::new(false));
        let lister = {
            let (observer, done) = (observer.clone(), Arc::clone(&done));
            tokio::spawn(async move {
                let (mut most, mut looks) = (0, 0usize);
                while !done.load(Ordering::SeqCst) {
                    most = most.max(nodes(&observer, "/re8").await.len());
                    looks += 1;
                    // A sampling interval, so the observer does not starve the tasks.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                (most, looks)
            })
        };

        let holds = Arc::new(Mutex::new(Holds::default()));
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let (handle, holds) = (c.mutex("/re8"), Arc::clone(&holds));
                tokio::spawn(async move {
                    for _ in 0..HANDOFFS {
                        let guard = handle.lock().await.expect("lock");
                        let node = guard.fence().expect("held remotely").path;
                        {
                            let mut holds = holds.lock().expect("holds");
                            assert!(!holds.inside, "two handles hold at once");
                            holds.inside = true;
                            holds.tokens.push(guard.fencing_token());
                            holds.nodes.push(node);
                        }
                        tokio::task::yield_now().await;
                        holds.lock().expect("holds").inside = false;
                        guard.unlock().await.expect("unlock");
                    }
                })
            })
            .collect();
        for task in tasks {
            within("the tasks", DEADLINE * 3, task).await.expect("task");
        }
        let elapsed = start.elapsed();
        done.store(true, Ordering::SeqCst);
        let (most_listed, looks) = within("the lister", DEADLINE, lister).await.expect("lister");
        let grants = observer.server_stats().await.expect("stats").lock_grants - grants_before;
        let child_changes = observer.exists("/re8").await.expect("stat").expect("/re8").cversion;

        let holds = std::mem::take(&mut *holds.lock().expect("holds"));
        assert_eq!(holds.tokens.len(), TASKS * HANDOFFS);
        for (n, pair) in holds.tokens.windows(2).enumerate() {
            assert!(pair[1] > pair[0], "hold {}: token {} not above {}", n + 1, pair[1], pair[0]);
        }
        let mut remote: Vec<&String> = holds.nodes.iter().collect();
        remote.dedup();
        let local = TASKS * HANDOFFS - remote.len();
        println!(
            "reentrant handles: {} holds in {elapsed:?}, {local} local handoffs, {} server contenders, \
             {child_changes} child changes; queue listed {looks} times (most {most_listed}); {grants} grant notifications",
            holds.tokens.len(),
            remote.len()
        );
        assert!(looks > 0);
        assert!(most_listed <= 1, "the observer saw {most_listed} nodes of one client in the server's queue");
        let sequences: Vec<i64> =
            remote.iter().map(|p| ward_proto::lock::sequence(p).expect("a sequence suffix") as i64).collect();
        assert_eq!(sequences[0], 0, "the first contender is the directory's first child");
        for pair in sequences.windows(2) {
            assert_eq!(pair[1] - pair[0], 2, "a change between contenders {pair:?} other than the first's delete");
        }
        assert_eq!(i64::from(child_changes), 2 * remote.len() as i64, "child changes other than these contenders");
        assert_eq!(grants, 0, "nobody queued behind another: no grant needed to be sent");
        assert!(local >= TASKS * HANDOFFS * 3 / 4, "mostly local handoffs: {local} of {}", TASKS * HANDOFFS);
        assert_eq!(nodes(&observer, "/re8").await, Vec::<String>::new());
    })
    .await
}
