//! kazoo's recipes against Ward with several contenders, and a kazoo Lock and a native Ward
//! lock on one directory excluding each other in one queue.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;
use ward_client::{Client, CreateMode, LockOptions};
use ward_testkit::zk::{expected, Kazoo};
use ward_testkit::{Proxy, ServerProcess, DEADLINE};

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

// G25, docs/recipes.md "Lock-delay": a Ward holder with a lock-delay loses its session (cut
// off past its timeout); kazoo's Lock queued behind it sees the held-over node as its
// predecessor and gets the lock no earlier than the delay after the session's end, which the
// server stamped as that node's mtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kazoo_lock_waits_out_the_lock_delay_of_a_lost_ward_holder() {
    let Some(kazoo) = Kazoo::find() else { return };
    let ward = ServerProcess::builder().zookeeper().in_memory().flags(&["--min-session-timeout-ms", "500"]).start();
    ward_testkit::bounded(async {
        let proxy = Proxy::start(ward.addr()).await;
        let holder = ward_testkit::connect_with(&proxy.addr_str(), Duration::from_millis(1000)).await;
        let options = LockOptions::new().lock_delay(Duration::from_secs(3));
        let _guard = holder.lock_with("/delayed", &options).await.expect("the Ward holder");
        let observer = ward_testkit::connect(&ward.addr_str()).await;
        let zk = ward.zk_addr_str();
        let waiter =
            tokio::task::spawn_blocking(move || kazoo.run(SCRIPTS, "lock_interop.py", &[&zk, "/delayed", "wait"]));
        ward_testkit::wait_until("kazoo to queue", DEADLINE, || async {
            observer.get_children("/delayed").await.is_ok_and(|c| c.len() == 2)
        })
        .await;
        proxy.isolate();
        let until = ward_testkit::wait_for("the lost holder's lock to be held over", DEADLINE, || async {
            let queue = observer.lock_holders("/delayed").await.expect("holders");
            queue.first().and_then(|c| c.lock_delay_until_ms)
        })
        .await;
        let out = ward_testkit::within("kazoo to get the lock", DEADLINE, waiter).await.expect("kazoo");
        let acquired: i64 = out.trim().strip_prefix("acquired ").and_then(|ms| ms.parse().ok()).expect("acquired MS");
        assert!(acquired >= until, "kazoo got the lock at {acquired}, before the delay ended at {until}");
    })
    .await;
}
