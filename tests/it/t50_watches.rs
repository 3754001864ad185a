//! One-shot watches, and their order against replies.

use crate::harness::*;
use ward_client::{CreateMode, EventKind, Watch};

fn assert_not_fired(watch: &mut Watch, why: &str) {
    let early = watch.try_recv();
    assert!(early.is_none(), "watch fired {why}: {early:?}");
}

// G6: the event reaches the client before the reply of a later get_data that shows the new data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_arrives_before_the_reply_showing_the_change() {
    bounded(async {
        let server = ServerProcess::start();
        let a = connect(&server.addr_str()).await;
        let b = connect(&server.addr_str()).await;
        a.create("/w", b"0", CreateMode::Persistent).await.expect("create /w");
        for round in 1..=25u32 {
            let (_, _, mut watch) = a.get_data_watch("/w").await.expect("watch /w");
            let value = round.to_string();
            // B writes while A polls, so A's reads race the change.
            let writer = {
                let b = b.clone();
                let value = value.clone();
                tokio::spawn(async move { b.set_data("/w", value.as_bytes(), None).await })
            };
            let stat = wait_for("A reads the new data", DEADLINE, || async {
                let (data, stat) = a.get_data("/w").await.expect("get /w");
                (data == value.as_bytes()).then_some(stat)
            })
            .await;
            // At the moment A sees the new data, the event must already be there.
            match watch.try_recv() {
                Some(Ok(event)) => {
                    assert_eq!(event.kind, EventKind::NodeDataChanged);
                    assert_eq!(event.path, "/w");
                    assert_eq!(event.zxid, stat.mzxid, "the event names the change's zxid");
                }
                other => panic!("round {round}: new data seen but the event is {other:?}"),
            }
            writer.await.expect("writer task").expect("set /w");
        }
    })
    .await
}

// G6: a data watch fires once, for the first change only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_watch_is_one_shot() {
    bounded(async {
        let server = ServerProcess::start();
        let a = connect(&server.addr_str()).await;
        let b = connect(&server.addr_str()).await;
        a.create("/once", b"0", CreateMode::Persistent).await.expect("create /once");
        let (_, _, watch) = a.get_data_watch("/once").await.expect("watch");
        let first = b.set_data("/once", b"1", None).await.expect("set 1");
        b.set_data("/once", b"2", None).await.expect("set 2");
        let event = fired(watch).await;
        assert_eq!((event.kind, event.zxid), (EventKind::NodeDataChanged, first.mzxid));

        // A new watch is a new one-shot: it sees the next change, not the one before it.
        let (data, _, mut again) = a.get_data_watch("/once").await.expect("re-arm");
        assert_eq!(data, b"2");
        assert_not_fired(&mut again, "for a change made before it was set");
        let third = b.set_data("/once", b"3", None).await.expect("set 3");
        let event = fired(again).await;
        assert_eq!(event.zxid, third.mzxid);
    })
    .await
}

// G6: exists-watches see creation, data change and deletion; each fires once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exists_watch_sees_create_change_and_delete() {
    bounded(async {
        let server = ServerProcess::start();
        let a = connect(&server.addr_str()).await;
        let b = connect(&server.addr_str()).await;
        let (stat, watch) = a.exists_watch("/e").await.expect("exists_watch missing");
        assert_eq!(stat, None);
        let (_, created) = b.create_with_stat("/e", b"", CreateMode::Persistent).await.expect("create /e");
        let event = fired(watch).await;
        assert_eq!((event.kind, event.path.as_str(), event.zxid), (EventKind::NodeCreated, "/e", created.czxid));

        let (stat, watch) = a.exists_watch("/e").await.expect("exists_watch present");
        assert!(stat.is_some());
        b.set_data("/e", b"x", None).await.expect("set /e");
        assert_eq!(fired(watch).await.kind, EventKind::NodeDataChanged);

        let (_, watch) = a.exists_watch("/e").await.expect("exists_watch again");
        b.delete("/e", None).await.expect("delete /e");
        assert_eq!(fired(watch).await.kind, EventKind::NodeDeleted);
    })
    .await
}

// G6: child watches fire on child create/delete and on the node's own delete, not on a child's data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_watch_sees_membership_changes_only() {
    bounded(async {
        let server = ServerProcess::start();
        let a = connect(&server.addr_str()).await;
        let b = connect(&server.addr_str()).await;
        b.create("/kids", b"", CreateMode::Persistent).await.expect("create /kids");
        b.create("/kids/one", b"", CreateMode::Persistent).await.expect("create one");

        let (children, mut watch) = a.get_children_watch("/kids").await.expect("watch kids");
        assert_eq!(children, ["one"]);
        b.set_data("/kids/one", b"x", None).await.expect("set child data");
        b.set_data("/kids", b"x", None).await.expect("set parent data");
        // Any event for those writes would have reached A before this reply.
        a.get_data("/kids").await.expect("read after the sets");
        assert_not_fired(&mut watch, "for data changes");
        b.create("/kids/two", b"", CreateMode::Persistent).await.expect("create two");
        let event = fired(watch).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeChildrenChanged, "/kids"));

        let (_, watch) = a.get_children_watch("/kids").await.expect("re-arm");
        b.delete("/kids/one", None).await.expect("delete one");
        assert_eq!(fired(watch).await.kind, EventKind::NodeChildrenChanged);

        let (_, child_watch) = a.get_children_watch("/kids").await.expect("re-arm");
        let (_, _, data_watch) = a.get_data_watch("/kids").await.expect("data watch");
        b.delete("/kids/two", None).await.expect("delete two");
        assert_eq!(fired(child_watch).await.kind, EventKind::NodeChildrenChanged);
        let (_, last_child_watch) = a.get_children_watch("/kids").await.expect("re-arm");
        b.delete("/kids", None).await.expect("delete kids");
        assert_eq!(fired(last_child_watch).await.kind, EventKind::NodeDeleted);
        assert_eq!(fired(data_watch).await.kind, EventKind::NodeDeleted);
    })
    .await
}

// G6: two watches on one node from one client both fire, once each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_watches_on_one_node_both_fire() {
    bounded(async {
        let server = ServerProcess::start();
        let a = connect(&server.addr_str()).await;
        a.create("/twice", b"", CreateMode::Persistent).await.expect("create");
        let (_, _, first) = a.get_data_watch("/twice").await.expect("watch 1");
        let (_, second) = a.exists_watch("/twice").await.expect("watch 2");
        // The writer's own watches fire too: watches belong to the session, not to others.
        let stat = a.set_data("/twice", b"x", None).await.expect("set");
        assert_eq!(fired(first).await.zxid, stat.mzxid);
        assert_eq!(fired(second).await.zxid, stat.mzxid);
    })
    .await
}
