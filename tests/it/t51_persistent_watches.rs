//! Persistent and recursive watches through the native client (G23): ZooKeeper's rules for
//! which changes they report, every change of a subtree once and in zxid order across a
//! cut connection, a server restart and the loss of the member serving the watch, and
//! `remove_watches` (or dropping every stream) ending them.

use crate::harness::*;
use std::collections::HashSet;
use std::time::Duration;
use ward_client::{Client, CreateMode, Error, EventKind, WatchEvent, WatchMode, WatchStream};
use ward_testkit::Ensemble;

/// The nodes a writer sets over and over under the watched directory.
const NODES: usize = 5;

/// The next item of `stream`, which must come within [`DEADLINE`].
async fn next(stream: &mut WatchStream) -> Result<WatchEvent, Error> {
    within("the next event", DEADLINE, stream.next()).await.expect("the stream ended")
}

/// The events already delivered to `stream`, without waiting.
fn ready(stream: &mut WatchStream) -> Vec<(EventKind, String)> {
    std::iter::from_fn(|| stream.try_next()).map(|e| e.map(|e| (e.kind, e.path)).expect("an event")).collect()
}

fn ev(kind: EventKind, path: &str) -> (EventKind, String) {
    (kind, path.to_string())
}

/// Creates `dir` and its [`NODES`] children.
async fn subtree(writer: &Client, dir: &str) {
    writer.create(dir, b"", CreateMode::Persistent).await.expect("create the directory");
    for i in 0..NODES {
        writer.create(&format!("{dir}/n{i}"), b"", CreateMode::Persistent).await.expect("create a node");
    }
}

/// Sets the children of `dir` round robin, `count` sets in all. A set that fails with
/// `ConnectionLoss` may or may not have been applied (the nodes' versions say which): it is
/// not repeated, the next one waits for the client to be connected again.
async fn churn(writer: Client, dir: String, count: usize) {
    for i in 0..count {
        match writer.set_data(&format!("{dir}/n{}", i % NODES), i.to_string().as_bytes(), None).await {
            Ok(_) => {}
            Err(Error::ConnectionLoss | Error::Unavailable) => {
                within("the writer to reconnect", DEADLINE, writer_connected(&writer)).await;
            }
            Err(e) => panic!("set {i}: {e:?}"),
        }
    }
    writer.create(&format!("{dir}/done"), b"", CreateMode::Persistent).await.expect("the end marker");
}

async fn writer_connected(writer: &Client) {
    let mut state = writer.state_changes();
    while *state.borrow_and_update() != ward_client::SessionState::Connected {
        state.changed().await.expect("the writer's session");
    }
}

/// Reads `stream` until the creation of `dir/done`.
async fn until_done(stream: &mut WatchStream, dir: &str) -> Vec<WatchEvent> {
    let done = format!("{dir}/done");
    let mut events = Vec::new();
    loop {
        match next(stream).await {
            Ok(event) if event.path == done => return events,
            Ok(event) => events.push(event),
            Err(e) => panic!("the stream failed after {} events: {e:?}", events.len()),
        }
    }
}

/// G23: each change once, in zxid order, and every set of every node: a node's version
/// counts the sets applied to it, and its watcher must have seen exactly that many.
async fn check_every_change_once(events: &[WatchEvent], reader: &Client, dir: &str) {
    assert!(events.windows(2).all(|w| w[0].zxid < w[1].zxid), "events out of zxid order (or twice)");
    let distinct: HashSet<(u64, &str)> = events.iter().map(|e| (e.zxid, e.path.as_str())).collect();
    assert_eq!(distinct.len(), events.len(), "an event came twice");
    let mut total = 0;
    for i in 0..NODES {
        let path = format!("{dir}/n{i}");
        let (_, stat) = reader.get_data(&path).await.expect("read a node");
        let seen = events.iter().filter(|e| e.path == path && e.kind == EventKind::NodeDataChanged).count();
        assert_eq!(seen, stat.version as usize, "{path}: {} sets applied, {seen} seen", stat.version);
        total += seen;
    }
    assert_eq!(total, events.len(), "only the sets were to be seen");
}

// G23: a persistent watch reports every change of its node, children changes included; a
// recursive one every change of its subtree, naming the node, without children changes
// (ZooKeeper's WatchManager). Both stay armed, and an event comes before the reply of the
// write that made it (G6).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_and_recursive_watches_report_what_zookeeper_reports() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        let mut node = c.watch("/p", WatchMode::Persistent).await.expect("watch /p");
        let mut tree = c.watch("/r", WatchMode::PersistentRecursive).await.expect("watch /r");
        c.create("/p", b"", CreateMode::Persistent).await.expect("create");
        assert_eq!(ready(&mut node), [ev(EventKind::NodeCreated, "/p")], "before the create's reply");
        c.set_data("/p", b"1", None).await.expect("set");
        c.create("/p/k", b"", CreateMode::Ephemeral).await.expect("create a child");
        c.delete("/p/k", None).await.expect("delete the child");
        c.delete("/p", None).await.expect("delete");
        c.create("/p", b"", CreateMode::Persistent).await.expect("create again");
        let want = [
            ev(EventKind::NodeDataChanged, "/p"),
            ev(EventKind::NodeChildrenChanged, "/p"),
            ev(EventKind::NodeChildrenChanged, "/p"),
            ev(EventKind::NodeDeleted, "/p"),
            ev(EventKind::NodeCreated, "/p"),
        ];
        assert_eq!(ready(&mut node), want, "nothing about /p/k itself");

        c.create("/r", b"", CreateMode::Persistent).await.expect("create");
        c.create("/r/a", b"", CreateMode::Persistent).await.expect("create");
        c.set_data("/r/a", b"1", None).await.expect("set");
        c.multi(vec![
            ward_client::Op::Create { path: "/r/a/b".into(), data: vec![], mode: CreateMode::Persistent },
            ward_client::Op::Delete { path: "/r/a/b".into(), version: None },
        ])
        .await
        .expect("multi");
        c.create("/rest", b"", CreateMode::Persistent).await.expect("a sibling with the same prefix");
        let want = [
            ev(EventKind::NodeCreated, "/r"),
            ev(EventKind::NodeCreated, "/r/a"),
            ev(EventKind::NodeDataChanged, "/r/a"),
            ev(EventKind::NodeCreated, "/r/a/b"),
            ev(EventKind::NodeDeleted, "/r/a/b"),
        ];
        assert_eq!(ready(&mut tree), want);
        assert!(ready(&mut node).is_empty());
    })
    .await
}

// G23, G7: a watcher whose connection is cut (and kept off while the writer goes on) gets,
// once it is back, the changes it missed and then the live ones: every set of the subtree
// once, in zxid order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_of_a_subtree_arrives_once_in_order_across_a_cut_connection() {
    bounded(async {
        let server = ServerProcess::start();
        let proxy = Proxy::start(server.addr()).await;
        let writer = connect(&server.addr_str()).await;
        subtree(&writer, "/cut").await;
        let watcher = connect_with(&proxy.addr_str(), Duration::from_secs(20)).await;
        let mut stream = watcher.watch("/cut", WatchMode::PersistentRecursive).await.expect("watch");
        let writing = tokio::spawn(churn(writer.clone(), "/cut".into(), 600));
        // Cut once some events came, and keep the watcher off while sets go on.
        let mut events = Vec::new();
        for _ in 0..20 {
            events.push(next(&mut stream).await.expect("an event before the cut"));
        }
        proxy.isolate();
        let before = writer.get_data("/cut/n0").await.expect("read").1.version;
        wait_until("sets while the watcher is off", DEADLINE, || async {
            writer.get_data("/cut/n0").await.expect("read").1.version >= before + 40
        })
        .await;
        proxy.unblock();
        events.extend(until_done(&mut stream, "/cut").await);
        within("the writer", DEADLINE, writing).await.expect("writer");
        assert!(proxy.accepted() >= 2, "the watcher reconnected");
        check_every_change_once(&events, &writer, "/cut").await;
    })
    .await
}

// G23: a watcher away longer than the server's history of changes reaches back is told so:
// its stream yields `EventsMissed`, where the gap is, and then goes on with the live changes.
// The server keeps almost no history (`--watch-history-bytes 1`: a chunk of changes is over
// it as soon as it is made), so any change while the watcher is off is past the horizon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_away_longer_than_the_history_reaches_is_told_it_missed_events() {
    bounded(async {
        let server = ServerProcess::start_with(&["--watch-history-bytes", "1"]);
        let proxy = Proxy::start(server.addr()).await;
        let writer = connect(&server.addr_str()).await;
        subtree(&writer, "/gap").await;
        let watcher = connect_with(&proxy.addr_str(), Duration::from_secs(20)).await;
        let mut stream = watcher.watch("/gap", WatchMode::PersistentRecursive).await.expect("watch");
        writer.set_data("/gap/n0", b"seen", None).await.expect("set");
        let seen = next(&mut stream).await.expect("an event before the cut");
        assert_eq!((seen.kind, seen.path.as_str()), (EventKind::NodeDataChanged, "/gap/n0"));
        proxy.isolate();
        for i in 0..5 {
            writer.set_data("/gap/n1", i.to_string().as_bytes(), None).await.expect("a set while the watcher is off");
        }
        proxy.unblock();
        assert_eq!(next(&mut stream).await.map(drop), Err(Error::EventsMissed), "the gap is reported");
        // The gap was found when the watch was armed again: a set after it comes live.
        writer.set_data("/gap/n2", b"live", None).await.expect("set");
        let live = next(&mut stream).await.expect("the live event");
        assert_eq!((live.kind, live.path.as_str()), (EventKind::NodeDataChanged, "/gap/n2"));
    })
    .await
}

// G23, G7, G11: the watcher's link goes silent while sets go on, then the server is killed
// with kill -9 and restarted; the watcher resumes its session there, and its stream goes on
// from the last change it had: the restarted server's history of changes comes from
// replaying its log, so the sets made before the kill that the watcher never got are sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_of_a_subtree_arrives_once_in_order_across_a_server_restart() {
    bounded(async {
        let mut server = ServerProcess::start();
        let proxy = Proxy::start(server.addr()).await;
        let writer = connect_with(&server.addr_str(), Duration::from_secs(30)).await;
        subtree(&writer, "/rs").await;
        let watcher = connect_with(&proxy.addr_str(), Duration::from_secs(30)).await;
        let mut stream = watcher.watch("/rs", WatchMode::PersistentRecursive).await.expect("watch");
        let writing = tokio::spawn(churn(writer.clone(), "/rs".into(), 600));
        let mut events = Vec::new();
        for _ in 0..50 {
            events.push(next(&mut stream).await.expect("an event before the restart"));
        }
        proxy.partition();
        let before = writer.get_data("/rs/n0").await.expect("read").1.version;
        wait_until("sets the watcher does not hear of", DEADLINE, || async {
            writer.get_data("/rs/n0").await.expect("read").1.version >= before + 20
        })
        .await;
        server.restart_now();
        proxy.unblock();
        proxy.cut();
        events.extend(until_done(&mut stream, "/rs").await);
        within("the writer", DEADLINE, writing).await.expect("writer");
        check_every_change_once(&events, &writer, "/rs").await;
    })
    .await
}

// G23, G15: on an ensemble, the watcher's link to its member goes silent while sets go on,
// and that member is then killed with kill -9; the watcher moves to another member, whose
// history (the same changes at the same positions: every member applies the same commands)
// gives it what it missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_moves_to_another_member_with_every_change_once_in_order() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        ensemble.leader(&[]).await;
        let writer = connect(&ensemble.connect_string()).await;
        subtree(&writer, "/fo").await;
        // The watcher reaches the members through proxies, which tell which one it is on.
        let mut proxies = Vec::new();
        for id in ensemble.ids() {
            let addr = ensemble.addr(id).parse().expect("a member's address");
            proxies.push((id, Proxy::start(addr).await));
        }
        let addrs: Vec<String> = proxies.iter().map(|(_, p)| p.addr_str()).collect();
        let watcher = connect_with(&addrs.join(","), Duration::from_secs(20)).await;
        let mut stream = watcher.watch("/fo", WatchMode::PersistentRecursive).await.expect("watch");
        let writing = tokio::spawn(churn(writer.clone(), "/fo".into(), 400));
        let mut events = Vec::new();
        for _ in 0..50 {
            events.push(next(&mut stream).await.expect("an event before the kill"));
        }
        let (serving, proxy) = proxies.iter().find(|(_, p)| p.accepted() > 0).expect("the watcher's member");
        proxy.partition();
        let before = writer.get_data("/fo/n0").await.expect("read").1.version;
        wait_until("sets the watcher does not hear of", DEADLINE, || async {
            writer.get_data("/fo/n0").await.map(|(_, stat)| stat.version >= before + 20).unwrap_or(false)
        })
        .await;
        ensemble.member(*serving).kill9_now();
        proxy.cut();
        events.extend(until_done(&mut stream, "/fo").await);
        within("the writer", DEADLINE, writing).await.expect("writer");
        writer.sync("/").await.expect("sync");
        check_every_change_once(&events, &writer, "/fo").await;
    })
    .await
}

// G23: remove_watches ends every stream of the watch, and no event follows; a second removal
// finds none. Dropping every stream of a watch removes the server's watch too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_watches_ends_the_streams_and_dropped_streams_disarm_the_server() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        let mut one = c.watch("/x", WatchMode::Persistent).await.expect("watch");
        let mut two = c.watch("/x", WatchMode::Persistent).await.expect("watch again");
        c.create("/x", b"", CreateMode::Persistent).await.expect("create");
        assert_eq!(ready(&mut one), [ev(EventKind::NodeCreated, "/x")]);
        assert_eq!(ready(&mut two), [ev(EventKind::NodeCreated, "/x")]);
        assert_eq!(c.server_stats().await.expect("stats").watches, 1, "one server watch for both");

        c.remove_watches("/x", WatchMode::Persistent).await.expect("remove");
        c.set_data("/x", b"1", None).await.expect("set");
        assert!(within("the stream to end", DEADLINE, one.next()).await.is_none());
        assert!(within("the stream to end", DEADLINE, two.next()).await.is_none());
        assert_eq!(c.server_stats().await.expect("stats").watches, 0);
        assert_eq!(c.remove_watches("/x", WatchMode::Persistent).await, Err(Error::NoWatcher));

        let dropped = c.watch("/y", WatchMode::PersistentRecursive).await.expect("watch");
        assert_eq!(c.server_stats().await.expect("stats").watches, 1);
        drop(dropped);
        c.create("/y", b"", CreateMode::Persistent).await.expect("create");
        wait_until("the dropped watch to be removed", DEADLINE, || async {
            c.server_stats().await.expect("stats").watches == 0
        })
        .await;
    })
    .await
}
