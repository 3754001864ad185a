//! Multi-op transactions: all or nothing, and seen atomically.

use crate::harness::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use ward_client::{Client, CreateMode, Error, Op, OpResult};

fn create(path: &str, data: &[u8]) -> Op {
    Op::Create { path: path.to_owned(), data: data.to_vec(), mode: CreateMode::Persistent }
}

fn set(path: &str, data: &[u8], version: Option<i32>) -> Op {
    Op::SetData { path: path.to_owned(), data: data.to_vec(), version }
}

fn check(path: &str, version: Option<i32>) -> Op {
    Op::Check { path: path.to_owned(), version }
}

fn delete(path: &str, version: Option<i32>) -> Op {
    Op::Delete { path: path.to_owned(), version }
}

/// Asserts `result` is a MultiFailed at `index` whose cause matches `cause`.
fn assert_failed_at(result: Result<Vec<OpResult>, Error>, index: usize, cause: fn(&Error) -> bool) {
    match result {
        Err(Error::MultiFailed { index: got, source }) => {
            assert_eq!(got, index, "failing op index (cause {source:?})");
            assert!(cause(&source), "unexpected cause at {index}: {source:?}");
        }
        other => panic!("expected MultiFailed at {index}, got {other:?}"),
    }
}

async fn snapshot(c: &Client) -> (Vec<u8>, i32, i32, Vec<String>) {
    let (data, stat) = c.get_data("/m").await.expect("get /m");
    let children = c.get_children("/m").await.expect("ls /m");
    (data, stat.version, stat.cversion, children)
}

// G3: a multi with one failing op changes nothing and names the failing op.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_multi_changes_nothing() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        c.create("/m", b"v0", CreateMode::Persistent).await.expect("create /m");
        c.create("/m/keep", b"", CreateMode::Persistent).await.expect("create /m/keep");
        let before = snapshot(&c).await;

        let bad_version = c
            .multi(vec![create("/m/a", b"a"), set("/m", b"v1", None), check("/m", Some(5)), create("/m/b", b"b")])
            .await;
        assert_failed_at(bad_version, 2, |e| matches!(e, Error::BadVersion));
        assert_eq!(snapshot(&c).await, before);

        let no_parent = c.multi(vec![create("/nowhere/x", b""), set("/m", b"v1", None)]).await;
        assert_failed_at(no_parent, 0, |e| matches!(e, Error::NoNode));

        let exists = c.multi(vec![delete("/m/keep", None), create("/m/c", b""), create("/m/c", b"")]).await;
        assert_failed_at(exists, 2, |e| matches!(e, Error::NodeExists));

        let not_empty = c.multi(vec![set("/m", b"v1", Some(0)), delete("/m", None)]).await;
        assert_failed_at(not_empty, 1, |e| matches!(e, Error::NotEmpty));

        let missing = c.multi(vec![create("/m/d", b""), delete("/m/ghost", None)]).await;
        assert_failed_at(missing, 1, |e| matches!(e, Error::NoNode));

        assert_eq!(snapshot(&c).await, before, "no failed multi may leave a trace");
        assert_eq!(c.exists("/nowhere").await.expect("exists"), None);
    })
    .await
}

// G3: a successful multi applies every op, later ops seeing earlier ones, as one change (one zxid).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn successful_multi_applies_every_op() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        c.create("/m", b"v0", CreateMode::Persistent).await.expect("create /m");
        c.create("/m/old", b"", CreateMode::Persistent).await.expect("create /m/old");
        let results = c
            .multi(vec![
                create("/m/dir", b"d"),
                create("/m/dir/leaf", b"l"),
                Op::Create { path: "/m/seq-".to_owned(), data: vec![], mode: CreateMode::PersistentSequential },
                set("/m", b"v1", Some(0)),
                check("/m", Some(1)),
                delete("/m/old", Some(0)),
            ])
            .await
            .expect("multi");
        assert_eq!(results.len(), 6);
        let czxid = match &results[0] {
            OpResult::Created { path, stat } => {
                assert_eq!(path, "/m/dir");
                stat.czxid
            }
            other => panic!("op 0: {other:?}"),
        };
        match &results[1] {
            OpResult::Created { path, stat } => {
                assert_eq!((path.as_str(), stat.czxid), ("/m/dir/leaf", czxid));
            }
            other => panic!("op 1: {other:?}"),
        }
        match &results[2] {
            // /m had one child (old) and gained dir before this op: the counter is at 2.
            OpResult::Created { path, .. } => assert_eq!(path, "/m/seq-0000000002"),
            other => panic!("op 2: {other:?}"),
        }
        match &results[3] {
            OpResult::DataSet(stat) => {
                assert_eq!((stat.version, stat.mzxid), (1, czxid), "one multi, one zxid");
            }
            other => panic!("op 3: {other:?}"),
        }
        assert_eq!(results[4], OpResult::Checked);
        assert_eq!(results[5], OpResult::Deleted);
        assert_eq!(c.get_children("/m").await.expect("ls /m"), ["dir", "seq-0000000002"]);
        assert_eq!(c.get_data("/m/dir/leaf").await.expect("get leaf").0, b"l");
        assert_eq!(c.get_data("/m").await.expect("get /m").0, b"v1");
        // A create then delete of the same node inside one multi is fine and leaves nothing.
        c.multi(vec![create("/m/tmp", b""), delete("/m/tmp", None)]).await.expect("create+delete multi");
        assert_eq!(c.exists("/m/tmp").await.expect("exists"), None);
    })
    .await
}

// G3: a concurrent reader never sees half of a multi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_is_seen_atomically_by_a_concurrent_reader() {
    bounded(async {
        const ROUNDS: u32 = 150;
        const WIDTH: u32 = 4;
        let server = ServerProcess::start();
        let writer = connect(&server.addr_str()).await;
        let reader = connect(&server.addr_str()).await;
        writer.create("/atom", b"", CreateMode::Persistent).await.expect("create /atom");
        writer.create("/pair", b"", CreateMode::Persistent).await.expect("create /pair");
        writer.create("/pair/x", b"0", CreateMode::Persistent).await.expect("create x");
        writer.create("/pair/y", b"0", CreateMode::Persistent).await.expect("create y");
        let done = Arc::new(AtomicBool::new(false));

        let watcher = {
            let done = Arc::clone(&done);
            tokio::spawn(async move {
                let mut reads = 0u64;
                while !done.load(Ordering::SeqCst) {
                    let children = reader.get_children("/atom").await.expect("ls /atom");
                    assert_eq!(children.len() as u32 % WIDTH, 0, "saw part of a multi: {children:?}");
                    // x is read before y and both are set together, so y can never lag x.
                    let x = read_u32(&reader, "/pair/x").await;
                    let y = read_u32(&reader, "/pair/y").await;
                    assert!(y >= x, "saw x={x} but y={y}: half of a multi");
                    reads += 1;
                }
                reads
            })
        };

        for round in 1..=ROUNDS {
            let mut ops = Vec::new();
            for i in 0..WIDTH {
                // Each round replaces the previous round's children with its own.
                if round > 1 {
                    ops.push(delete(&format!("/atom/r{}-{i}", round - 1), None));
                }
                ops.push(create(&format!("/atom/r{round}-{i}"), b""));
            }
            let value = round.to_string();
            ops.push(set("/pair/x", value.as_bytes(), None));
            ops.push(set("/pair/y", value.as_bytes(), None));
            writer.multi(ops).await.expect("writer multi");
        }
        done.store(true, Ordering::SeqCst);
        let reads = within("the reader to stop", DEADLINE, watcher).await.expect("reader task");
        assert!(reads > 0);
        assert_eq!(read_u32(&writer, "/pair/y").await, ROUNDS);
    })
    .await
}

async fn read_u32(c: &Client, path: &str) -> u32 {
    let (data, _) = c.get_data(path).await.expect("get counter");
    String::from_utf8(data).expect("utf-8 counter").parse().expect("numeric counter")
}

// G9: an invalid path inside a multi is refused as BadArguments and nothing applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_with_an_invalid_path_is_refused_whole() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        let result = c.multi(vec![create("/fine", b""), create("bad//path", b"")]).await;
        match &result {
            Err(Error::BadArguments(_)) => {}
            Err(Error::MultiFailed { index: 1, source }) => {
                assert!(matches!(**source, Error::BadArguments(_)), "{source:?}")
            }
            other => panic!("expected BadArguments, got {other:?}"),
        }
        assert_eq!(c.exists("/fine").await.expect("exists /fine"), None);
    })
    .await
}
