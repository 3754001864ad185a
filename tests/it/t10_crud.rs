//! Create, read, update, delete: results, errors and stat fields as ZooKeeper's.

use crate::harness::*;
use std::collections::HashSet;
use ward_client::{CreateMode, Error};

// G2: a session's read sees its own earlier writes, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_round_trip_reads_own_writes() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        let path = c.create("/a", b"one", CreateMode::Persistent).await.expect("create /a");
        assert_eq!(path, "/a");
        let (data, stat) = c.get_data("/a").await.expect("get /a");
        assert_eq!((data.as_slice(), stat.version, stat.data_length), (&b"one"[..], 0, 3));
        let set = c.set_data("/a", b"two!", None).await.expect("set /a");
        assert_eq!((set.version, set.data_length), (1, 4));
        let (data, stat) = c.get_data("/a").await.expect("get /a again");
        assert_eq!(data, b"two!");
        assert_eq!(stat, set, "get_data shows the stat set_data returned");
        assert_eq!(c.exists("/a").await.expect("exists /a"), Some(stat));
        c.delete("/a", None).await.expect("delete /a");
        assert_eq!(c.exists("/a").await.expect("exists after delete"), None);
        assert!(matches!(c.get_data("/a").await, Err(Error::NoNode)));
        // Empty data is data too.
        c.create("/empty", b"", CreateMode::Persistent).await.expect("create with empty data");
        let (data, stat) = c.get_data("/empty").await.expect("get /empty");
        assert!(data.is_empty());
        assert_eq!(stat.data_length, 0);
    })
    .await
}

// G1: every create/set/delete error is an outcome in the one order of writes; nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_errors_node_exists_no_node_and_ephemeral_parent() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        c.create("/dup", b"first", CreateMode::Persistent).await.expect("create /dup");
        for mode in [CreateMode::Persistent, CreateMode::Ephemeral] {
            let again = c.create("/dup", b"second", mode).await;
            assert!(matches!(again, Err(Error::NodeExists)), "{mode:?}: {again:?}");
        }
        assert_eq!(c.get_data("/dup").await.expect("get /dup").0, b"first");

        let orphan = c.create("/missing/child", b"", CreateMode::Persistent).await;
        assert!(matches!(orphan, Err(Error::NoNode)), "{orphan:?}");
        let orphan = c.create("/missing/seq-", b"", CreateMode::PersistentSequential).await;
        assert!(matches!(orphan, Err(Error::NoNode)), "{orphan:?}");
        assert_eq!(c.exists("/missing").await.expect("exists /missing"), None);

        c.create("/eph", b"", CreateMode::Ephemeral).await.expect("create /eph");
        for mode in [
            CreateMode::Persistent,
            CreateMode::Ephemeral,
            CreateMode::PersistentSequential,
            CreateMode::EphemeralSequential,
        ] {
            let child = c.create("/eph/kid", b"", mode).await;
            assert!(matches!(child, Err(Error::NoChildrenForEphemerals)), "{mode:?}: {child:?}");
        }
        let stat = c.exists("/eph").await.expect("exists /eph").expect("/eph");
        assert_eq!((stat.num_children, stat.cversion), (0, 0));
    })
    .await
}

// G1: reads, sets and deletes of a missing node report NoNode; exists reports None.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_nodes_report_no_node() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        assert!(matches!(c.get_data("/nope").await, Err(Error::NoNode)));
        assert!(matches!(c.get_children("/nope").await, Err(Error::NoNode)));
        assert!(matches!(c.set_data("/nope", b"x", None).await, Err(Error::NoNode)));
        assert!(matches!(c.set_data("/nope", b"x", Some(0)).await, Err(Error::NoNode)));
        assert!(matches!(c.delete("/nope", None).await, Err(Error::NoNode)));
        assert!(matches!(c.delete("/nope", Some(0)).await, Err(Error::NoNode)));
        assert_eq!(c.exists("/nope").await.expect("exists /nope"), None);
        assert_eq!(c.exists("/nope/deeper").await.expect("exists deeper"), None);
        assert!(c.exists("/").await.expect("exists /").is_some());
    })
    .await
}

// G10: a conditional set/delete fails with BadVersion and changes nothing unless the version matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_set_and_delete_check_the_version() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        c.create("/v", b"v0", CreateMode::Persistent).await.expect("create /v");
        for wrong in [1, -1, 7] {
            let set = c.set_data("/v", b"nope", Some(wrong)).await;
            assert!(matches!(set, Err(Error::BadVersion)), "version {wrong}: {set:?}");
        }
        let (data, stat) = c.get_data("/v").await.expect("get /v");
        assert_eq!((data.as_slice(), stat.version), (&b"v0"[..], 0));

        let stat = c.set_data("/v", b"v1", Some(0)).await.expect("set at version 0");
        assert_eq!(stat.version, 1);
        // The version the first writer saw is stale now: a second writer using it loses.
        let stale = c.set_data("/v", b"lost update", Some(0)).await;
        assert!(matches!(stale, Err(Error::BadVersion)), "{stale:?}");
        let stat = c.set_data("/v", b"v2", None).await.expect("unconditional set");
        assert_eq!(stat.version, 2);

        let del = c.delete("/v", Some(1)).await;
        assert!(matches!(del, Err(Error::BadVersion)), "{del:?}");
        assert_eq!(c.get_data("/v").await.expect("still there").0, b"v2");
        c.delete("/v", Some(2)).await.expect("delete at version 2");
        assert_eq!(c.exists("/v").await.expect("exists /v"), None);
    })
    .await
}

// G1: a node with children cannot be deleted (NotEmpty) until they are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_children_is_not_empty() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        c.create("/p", b"", CreateMode::Persistent).await.expect("create /p");
        c.create("/p/c", b"", CreateMode::Persistent).await.expect("create /p/c");
        c.create("/p/c/g", b"", CreateMode::Ephemeral).await.expect("create /p/c/g");
        assert!(matches!(c.delete("/p", None).await, Err(Error::NotEmpty)));
        assert!(matches!(c.delete("/p/c", Some(0)).await, Err(Error::NotEmpty)));
        c.delete("/p/c/g", None).await.expect("delete grandchild");
        c.delete("/p/c", None).await.expect("delete child");
        c.delete("/p", None).await.expect("delete now-empty parent");
        assert_eq!(c.exists("/p").await.expect("exists /p"), None);
    })
    .await
}

// G1: stat fields (czxid, mzxid, pzxid, version, cversion, num_children, data_length, owner) follow ZooKeeper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stat_fields_follow_zookeeper() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        let (_, created) = c.create_with_stat("/s", b"abc", CreateMode::Persistent).await.expect("create /s");
        assert!(created.czxid > 0);
        assert_eq!((created.mzxid, created.pzxid), (created.czxid, created.czxid));
        assert_eq!((created.version, created.cversion, created.aversion), (0, 0, 0));
        assert_eq!((created.data_length, created.num_children), (3, 0));
        assert_eq!(created.ephemeral_owner, None);
        assert_eq!(created.ctime, created.mtime);
        assert!(created.ctime > 0, "ctime is wall-clock milliseconds");
        assert_eq!(c.exists("/s").await.expect("exists").expect("/s"), created);

        let set = c.set_data("/s", b"abcdef", None).await.expect("set /s");
        assert!(set.mzxid > created.czxid, "a set gets a later zxid");
        assert_eq!((set.czxid, set.pzxid), (created.czxid, created.pzxid));
        assert_eq!((set.version, set.cversion, set.data_length), (1, 0, 6));
        assert_eq!(set.ctime, created.ctime);
        assert!(set.mtime >= set.ctime);

        let (_, child) = c.create_with_stat("/s/k", b"", CreateMode::Ephemeral).await.expect("create /s/k");
        assert!(child.czxid > set.mzxid);
        assert_eq!(child.ephemeral_owner, Some(c.session_id()));
        let parent = c.exists("/s").await.expect("exists").expect("/s");
        assert_eq!(parent.pzxid, child.czxid, "pzxid is the last child change");
        assert_eq!((parent.cversion, parent.num_children), (1, 1));
        assert_eq!((parent.mzxid, parent.version), (set.mzxid, 1), "child changes leave data alone");

        c.delete("/s/k", None).await.expect("delete /s/k");
        let after = c.exists("/s").await.expect("exists").expect("/s");
        assert!(after.pzxid > child.czxid, "a child delete moves pzxid");
        assert_eq!((after.cversion, after.num_children), (2, 0));
        assert_eq!((after.mzxid, after.version, after.data_length), (set.mzxid, 1, 6));
    })
    .await
}

// G1: concurrent writers get distinct zxids, each session's in increasing order (G2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_get_distinct_increasing_zxids() {
    bounded(async {
        let server = ServerProcess::start();
        let setup = connect(&server.addr_str()).await;
        setup.create("/z", b"", CreateMode::Persistent).await.expect("create /z");
        let mut tasks = Vec::new();
        for w in 0..4 {
            let c = connect(&server.addr_str()).await;
            tasks.push(tokio::spawn(async move {
                let mine = format!("/z/w{w}");
                let mut zxids = Vec::new();
                let (_, stat) = c.create_with_stat(&mine, b"", CreateMode::Persistent).await.expect("create own node");
                zxids.push(stat.czxid);
                for i in 0..50 {
                    let stat = c.set_data(&mine, format!("{i}").as_bytes(), None).await.expect("set own node");
                    zxids.push(stat.mzxid);
                    // G2: the session's next read sees what it just wrote.
                    let (data, _) = c.get_data(&mine).await.expect("read own node");
                    assert_eq!(data, format!("{i}").as_bytes());
                }
                zxids
            }));
        }
        let mut all = HashSet::new();
        for task in tasks {
            let zxids = task.await.expect("writer task");
            assert!(zxids.windows(2).all(|w| w[0] < w[1]), "per-session order: {zxids:?}");
            for z in zxids {
                assert!(all.insert(z), "zxid {z} given to two writes");
            }
        }
        assert_eq!(all.len(), 4 * 51);
    })
    .await
}

// G1: children are listed by name, sorted; a sync'd read sees another session's writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_sorted_and_sync_then_read() {
    bounded(async {
        let server = ServerProcess::start();
        let a = connect(&server.addr_str()).await;
        let b = connect(&server.addr_str()).await;
        a.create("/l", b"", CreateMode::Persistent).await.expect("create /l");
        assert!(a.get_children("/l").await.expect("ls empty").is_empty());
        for name in ["b", "a10", "B", "a", "a2", "c-1"] {
            a.create(&format!("/l/{name}"), b"", CreateMode::Persistent).await.expect("create child");
        }
        let mut expected = vec!["B", "a", "a10", "a2", "b", "c-1"];
        expected.sort();
        assert_eq!(a.get_children("/l").await.expect("ls /l"), expected);
        b.sync("/l").await.expect("sync");
        assert_eq!(b.get_children("/l").await.expect("ls from b"), expected);
        let root = b.get_children("/").await.expect("ls /");
        assert!(root.contains(&"l".to_owned()), "{root:?}");
        a.set_data("/l/a", b"from a", None).await.expect("set /l/a");
        b.sync("/").await.expect("sync /");
        assert_eq!(b.get_data("/l/a").await.expect("get").0, b"from a");
    })
    .await
}
