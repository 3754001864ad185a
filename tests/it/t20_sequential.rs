//! Sequential nodes: 10-digit suffixes from the parent's counter, in apply order.

use crate::harness::*;
use std::collections::HashSet;
use ward_client::{Client, CreateMode, Stat};

fn suffix(path: &str) -> u32 {
    let digits = &path[path.len() - 10..];
    assert!(digits.bytes().all(|b| b.is_ascii_digit()), "suffix of {path}");
    digits.parse().expect("10 digits")
}

// G4: the suffix is the parent's count of child creates (ZooKeeper's), zero-padded to 10 digits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suffix_counts_child_creates_ten_digits() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        c.create("/q", b"", CreateMode::Persistent).await.expect("create /q");
        let first = c.create("/q/n-", b"", CreateMode::PersistentSequential).await.expect("sequential create");
        assert_eq!(first, "/q/n-0000000000");
        // Every child create moves the counter, plain ones included; deletes do not (ZooKeeper).
        c.create("/q/plain", b"", CreateMode::Persistent).await.expect("plain child");
        let second = c.create("/q/n-", b"", CreateMode::PersistentSequential).await.expect("sequential create");
        assert_eq!(second, "/q/n-0000000002");
        c.delete("/q/plain", None).await.expect("delete plain child");
        let cversion = c.exists("/q").await.expect("exists").expect("/q").cversion;
        assert_eq!(cversion, 4);
        let (third, stat) = c
            .create_with_stat("/q/other-", b"d", CreateMode::EphemeralSequential)
            .await
            .expect("ephemeral sequential create");
        assert_eq!(third, "/q/other-0000000003");
        assert_eq!(stat.ephemeral_owner, Some(c.session_id()));
        assert_eq!(stat.data_length, 1);
        assert_eq!(c.get_children("/q").await.expect("ls /q"), ["n-0000000000", "n-0000000002", "other-0000000003"]);
    })
    .await
}

// G4: a sequential create may end in '/' (ZooKeeper validates path + "1"); the name is the suffix alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_prefix_may_end_in_slash() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        c.create("/r", b"", CreateMode::Persistent).await.expect("create /r");
        let path = c.create("/r/", b"", CreateMode::PersistentSequential).await.expect("sequential create under /r/");
        assert_eq!(path, "/r/0000000000");
        let plain = c.create("/r/", b"", CreateMode::Persistent).await;
        assert!(is_bad_arguments(&plain), "a plain create of /r/: {plain:?}");
    })
    .await
}

async fn create_many(c: Client, task: usize, n: usize) -> Vec<(String, Stat)> {
    let mut made = Vec::with_capacity(n);
    for i in 0..n {
        let data = format!("{task}:{i}");
        let created = c
            .create_with_stat("/seq/n-", data.as_bytes(), CreateMode::PersistentSequential)
            .await
            .expect("sequential create");
        made.push(created);
    }
    made
}

// G4: 8 concurrent tasks x 100 creates: 800 distinct names, suffixes increasing in czxid (apply) order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sequential_creates_are_distinct_and_in_apply_order() {
    bounded(async {
        const TASKS: usize = 8;
        const EACH: usize = 100;
        let server = ServerProcess::start();
        let setup = connect(&server.addr_str()).await;
        setup.create("/seq", b"", CreateMode::Persistent).await.expect("create /seq");
        // Four connections, two tasks on each: concurrency both between and within sessions.
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(connect(&server.addr_str()).await);
        }
        let tasks: Vec<_> = (0..TASKS).map(|t| tokio::spawn(create_many(clients[t % 4].clone(), t, EACH))).collect();
        let mut all = Vec::new();
        for task in tasks {
            let made = task.await.expect("creator task");
            // Within one task the creates are sequential, so their suffixes increase.
            let suffixes: Vec<u32> = made.iter().map(|(p, _)| suffix(p)).collect();
            assert!(suffixes.windows(2).all(|w| w[0] < w[1]), "{suffixes:?}");
            all.extend(made);
        }
        let names: HashSet<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names.len(), TASKS * EACH, "names must be distinct");
        all.sort_by_key(|(_, stat)| stat.czxid);
        for pair in all.windows(2) {
            let ((a, sa), (b, sb)) = (&pair[0], &pair[1]);
            assert!(sa.czxid < sb.czxid, "two creates share czxid {}", sa.czxid);
            assert!(suffix(a) < suffix(b), "{a} (czxid {}) vs {b} (czxid {})", sa.czxid, sb.czxid);
        }
        // Only creates touched /seq, so the counter handed out exactly 0..800.
        let suffixes: Vec<u32> = all.iter().map(|(p, _)| suffix(p)).collect();
        assert_eq!(suffixes, (0..(TASKS * EACH) as u32).collect::<Vec<_>>());
        let listed = setup.get_children("/seq").await.expect("ls /seq");
        let mut expected: Vec<String> = all.iter().map(|(p, _)| p.trim_start_matches("/seq/").to_owned()).collect();
        expected.sort();
        assert_eq!(listed, expected);
        let parent = setup.exists("/seq").await.expect("exists").expect("/seq");
        assert_eq!(parent.num_children as usize, TASKS * EACH);
        assert_eq!(parent.cversion as usize, TASKS * EACH);
    })
    .await
}
