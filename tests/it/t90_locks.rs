//! Locks (G12): mutual exclusion across processes, herd-free handoff, ZooKeeper-recipe
//! waiters in the same queue. The blocking client's guards are in `t112_blocking`.

use crate::harness::*;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use ward_client::{Client, CreateMode};

/// 20 contenders × 101 acquisitions = 2,020 holders, 2,019 handoffs.
const PROCESS_TASKS: [usize; 3] = [7, 7, 6];
const ITERS: usize = 101;

// G12: 20 contenders in 3 OS processes, over 2,000 handoffs, an outside record with
// no overlap and strictly increasing fencing tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_contenders_in_three_processes_never_overlap() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let record = RecordFile::new("mutex");
        let file = record.path_str();
        let mut processes: Vec<Contender> = PROCESS_TASKS
            .iter()
            .map(|tasks| {
                let (tasks, iters) = (tasks.to_string(), ITERS.to_string());
                let args = ["lock", "--server", &addr, "--dir", "/mutex", "--file", &file, "--tasks", &tasks];
                Contender::spawn(&[&args[..], &["--iters", &iters]].concat())
            })
            .collect();
        for process in &mut processes {
            assert_eq!(process.next_line().await.text, "ready");
        }
        let start = Instant::now();
        for process in &mut processes {
            process.go();
        }
        for process in &mut processes {
            let line = process.next_line_within(Duration::from_secs(120)).await;
            assert!(line.text.starts_with("done "), "{line:?}");
            assert!(process.wait_exit(DEADLINE).await.success());
        }
        let elapsed = start.elapsed();

        let sections = check_exclusive(&record.read());
        let total = PROCESS_TASKS.iter().sum::<usize>() * ITERS;
        assert_eq!(sections.count, total, "every acquisition recorded once");
        let contenders: HashSet<&String> = sections.who.iter().collect();
        assert_eq!(contenders.len(), 20, "all 20 contenders held the lock");
        let pid = |who: &String| who.split('/').next().map(str::to_owned);
        let switches = sections.who.windows(2).filter(|w| pid(&w[0]) != pid(&w[1])).count();
        println!(
            "mutual exclusion: {} handoffs in {elapsed:?} ({:.0}/s), {switches} between processes",
            total - 1,
            (total - 1) as f64 / elapsed.as_secs_f64()
        );
        let c = connect(&addr).await;
        assert_eq!(c.get_children("/mutex").await.expect("ls /mutex"), Vec::<String>::new());
    })
    .await
}

// G12: with 50 waiters, every release delivers exactly one lock notification
// (the server's lock_grants counter), to the next in line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_release_grants_exactly_one_of_fifty_waiters() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let observer = connect(&addr).await;
        let holder = connect(&addr).await;
        let mut current = holder.lock("/herd").await.expect("first lock");
        let (granted, mut grants) = mpsc::unbounded_channel();
        let mut waiters = Vec::new();
        for _ in 0..50 {
            let c = connect(&addr).await;
            let granted = granted.clone();
            waiters.push(c.clone());
            tokio::spawn(async move {
                let guard = c.lock("/herd").await.expect("waiter lock");
                let _ = granted.send(guard);
            });
        }
        wait_until("51 contenders are queued", DEADLINE, || async {
            observer.get_children("/herd").await.expect("ls /herd").len() == 51
        })
        .await;
        let queue: Vec<String> =
            observer.lock_holders("/herd").await.expect("holders").into_iter().map(|c| c.path).collect();
        assert_eq!(queue[0], current.path());

        for (n, next_in_line) in queue.iter().enumerate().skip(1) {
            let before = observer.server_stats().await.expect("stats").lock_grants;
            let previous = current.fencing_token();
            current.unlock().await.expect("unlock");
            current = within("the next waiter holds", DEADLINE, grants.recv()).await.expect("a grant");
            let after = observer.server_stats().await.expect("stats").lock_grants;
            assert_eq!(after - before, 1, "release {n}: lock notifications sent");
            assert_eq!(current.path(), next_in_line, "release {n}: granted out of queue order");
            assert!(current.fencing_token() > previous);
            assert!(grants.try_recv().is_err(), "release {n}: a second waiter was granted");
        }
        let before = observer.server_stats().await.expect("stats").lock_grants;
        current.unlock().await.expect("last unlock");
        assert_eq!(observer.server_stats().await.expect("stats").lock_grants, before, "nobody left to tell");
        assert_eq!(observer.get_children("/herd").await.expect("ls"), Vec::<String>::new());
    })
    .await
}

/// ZooKeeper's lock recipe with the plain client API: lowest sequence holds; otherwise
/// exists-watch the next lower contender and look again when it fires.
async fn zk_recipe_lock(client: &Client, dir: &str, mine: &str) {
    let name = mine.rsplit('/').next().expect("a name");
    loop {
        let children = client.get_children(dir).await.expect("ls");
        let queue = ward_proto::lock::queue(children.iter().map(String::as_str));
        let position = queue.iter().position(|n| *n == name).expect("my node is queued");
        if position == 0 {
            return;
        }
        let predecessor = format!("{dir}/{}", queue[position - 1]);
        if let (Some(_), watch) = client.exists_watch(&predecessor).await.expect("exists") {
            watch.await.expect("predecessor watch");
        }
    }
}

// G12 (plain ZooKeeper-style waiters keep working): recipe waiters and `lock()`
// exclude each other and queue in one order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_recipe_waiters_and_ward_locks_share_one_queue() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let (w1, w2, z1, z2) = (connect(&addr).await, connect(&addr).await, connect(&addr).await, connect(&addr).await);
        let events = Arc::new(Mutex::new(Vec::<&str>::new()));
        let log = |e: &'static str| events.lock().expect("events").push(e);

        let g1 = w1.lock("/mix").await.expect("w1 lock");
        log("w1 enter");
        let z1_node = z1.create("/mix/zk-__lock__", b"z1", CreateMode::EphemeralSequential).await.expect("z1 node");
        let z1_task = {
            let (z1, node) = (z1.clone(), z1_node.clone());
            tokio::spawn(async move { zk_recipe_lock(&z1, "/mix", &node).await })
        };
        let w2_task = {
            let (w2, events) = (w2.clone(), Arc::clone(&events));
            tokio::spawn(async move {
                let guard = w2.lock("/mix").await.expect("w2 lock");
                events.lock().expect("events").push("w2 enter");
                guard
            })
        };
        wait_until("three contenders are queued", DEADLINE, || async {
            w1.get_children("/mix").await.expect("ls").len() == 3
        })
        .await;
        let queue: Vec<String> = w1.lock_holders("/mix").await.expect("holders").into_iter().map(|c| c.path).collect();
        assert_eq!(queue[..2], [g1.path().to_string(), z1_node.clone()], "queue: {queue:?}");

        log("w1 exit");
        g1.unlock().await.expect("w1 unlock");
        within("the recipe waiter holds", DEADLINE, z1_task).await.expect("z1 task");
        log("z1 enter");
        // A grant the server wrongly pushed to w2 would reach w2's client before this reply.
        w2.exists("/").await.expect("round trip on w2's session");
        assert!(!w2_task.is_finished(), "w2 granted while the recipe waiter holds");
        let z1_token = z1.exists(&z1_node).await.expect("stat").expect("z1 node").czxid;
        w1.check_fence(&z1_node, z1_token).await.expect("the recipe holder holds, by Ward's own check");
        log("z1 exit");
        z1.delete(&z1_node, None).await.expect("z1 release");

        let g2 = within("w2 holds", DEADLINE, w2_task).await.expect("w2 task");
        assert!(g2.fencing_token() > z1_token);
        let z2_node = z2.create("/mix/zk-__lock__", b"z2", CreateMode::EphemeralSequential).await.expect("z2 node");
        let z2_task = {
            let (z2, node) = (z2.clone(), z2_node.clone());
            tokio::spawn(async move { zk_recipe_lock(&z2, "/mix", &node).await })
        };
        // The recipe waiter behind a Ward holder waits for it.
        z2.exists("/").await.expect("round trip");
        assert!(!z2_task.is_finished(), "z2 holds while w2 does");
        log("w2 exit");
        g2.unlock().await.expect("w2 unlock");
        within("the second recipe waiter holds", DEADLINE, z2_task).await.expect("z2 task");
        log("z2 enter");
        log("z2 exit");
        z2.delete(&z2_node, None).await.expect("z2 release");

        let expected = ["w1 enter", "w1 exit", "z1 enter", "z1 exit", "w2 enter", "w2 exit", "z2 enter", "z2 exit"];
        assert_eq!(*events.lock().expect("events"), expected);
        assert_eq!(w1.get_children("/mix").await.expect("ls"), Vec::<String>::new());
    })
    .await
}
