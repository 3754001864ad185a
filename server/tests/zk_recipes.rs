//! kazoo's recipes against Ward with several contenders, and a kazoo Lock and a native Ward
//! lock on one directory excluding each other in one queue.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;
use ward_client::{Client, CreateMode};
use ward_testkit::zk::{expected, Kazoo};
use ward_testkit::ServerProcess;

/// The kazoo scripts and their expected outputs.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zk");

#[test]
fn kazoo_recipes_hold_with_several_contenders() {
    let Some(kazoo) = Kazoo::find() else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    assert_eq!(kazoo.run(SCRIPTS, "recipes.py", &[&ward.zk_addr_str()]), expected(SCRIPTS, "recipes.expected"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_lock_and_native_lock_exclude_each_other() {
    let Some(kazoo) = Kazoo::find() else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let native = Client::connect(&ward.addr_str()).await.expect("connect");
    native.create("/shared", b"", CreateMode::Persistent).await.expect("create dir");
    let zk = ward.zk_addr_str();
    let try_kazoo = {
        let (kazoo, zk) = (kazoo.clone(), zk.clone());
        move || {
            let (kazoo, zk) = (kazoo.clone(), zk.clone());
            tokio::task::spawn_blocking(move || kazoo.run(SCRIPTS, "lock_interop.py", &[&zk, "/shared", "try"]))
        }
    };

    // Native holds: kazoo's lock sees the Ward contender ahead of it.
    let guard = native.lock("/shared").await.expect("native lock");
    assert_eq!(try_kazoo().await.expect("join"), "busy\n");
    guard.unlock().await.expect("unlock");
    assert_eq!(try_kazoo().await.expect("join"), "acquired\n");

    // kazoo holds: a native contender queues behind it and gets the lock when kazoo releases.
    let mut holder = kazoo
        .command(SCRIPTS, "lock_interop.py", &[&zk, "/shared", "hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn kazoo holder");
    let mut lines = BufReader::new(holder.stdout.take().expect("stdout")).lines();
    let held = tokio::task::spawn_blocking(move || {
        let line = lines.next();
        (line, lines)
    });
    let (line, mut lines) =
        tokio::time::timeout(Duration::from_secs(60), held).await.expect("kazoo holds in time").expect("join");
    assert!(line.expect("a line").expect("read").starts_with("held"), "kazoo did not report holding");
    let busy = native.try_lock("/shared", Duration::from_millis(300)).await.expect("try_lock");
    assert!(busy.is_none(), "a native try_lock got in while kazoo held the lock");
    let waiter = {
        let native = native.clone();
        tokio::spawn(async move { native.lock("/shared").await })
    };
    holder.stdin.take().expect("stdin").write_all(b"release\n").expect("tell kazoo to release");
    let guard = tokio::time::timeout(Duration::from_secs(60), waiter)
        .await
        .expect("native lock granted after kazoo released")
        .expect("join")
        .expect("native lock");
    let released = tokio::task::spawn_blocking(move || lines.next()).await.expect("join");
    assert_eq!(released.expect("a line").expect("read"), "released");
    let _ = holder.wait();
    guard.unlock().await.expect("unlock");
}
