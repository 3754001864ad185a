//! The client against an in-process server: the basic round trips, one test per concern.
//! The full behaviour (real processes, faults) is tested in the root package's `tests/it`.

mod common;

use common::start;
use ward_client::{Client, CreateMode, Error, EventKind, SessionState};

#[tokio::test]
async fn create_read_update_delete() {
    let addr = start().await;
    let c = Client::connect(&addr).await.unwrap();
    assert_eq!(c.create("/a", b"one", CreateMode::Persistent).await.unwrap(), "/a");
    let (data, stat) = c.get_data("/a").await.unwrap();
    assert_eq!((data.as_slice(), stat.version, stat.czxid == stat.mzxid), (&b"one"[..], 0, true));
    let stat2 = c.set_data("/a", b"two", Some(0)).await.unwrap();
    assert_eq!(stat2.version, 1);
    assert!(stat2.mzxid > stat.mzxid);
    assert_eq!(c.set_data("/a", b"x", Some(0)).await, Err(Error::BadVersion));
    assert_eq!(c.create("/a", b"", CreateMode::Persistent).await, Err(Error::NodeExists));
    assert_eq!(c.create("/none/b", b"", CreateMode::Persistent).await, Err(Error::NoNode));
    c.create("/a/b", b"", CreateMode::Persistent).await.unwrap();
    assert_eq!(c.delete("/a", None).await, Err(Error::NotEmpty));
    assert_eq!(c.get_children("/a").await.unwrap(), vec!["b".to_string()]);
    c.delete("/a/b", None).await.unwrap();
    c.delete("/a", Some(1)).await.unwrap();
    assert_eq!(c.exists("/a").await.unwrap(), None);
    assert!(matches!(c.get_data("bad").await, Err(Error::BadArguments(_))));
}

#[tokio::test]
async fn watch_fires_before_later_reply() {
    let addr = start().await;
    let a = Client::connect(&addr).await.unwrap();
    let b = Client::connect(&addr).await.unwrap();
    a.create("/w", b"0", CreateMode::Persistent).await.unwrap();
    let (_, _, mut watch) = a.get_data_watch("/w").await.unwrap();
    b.set_data("/w", b"1", None).await.unwrap();
    loop {
        let (data, _) = a.get_data("/w").await.unwrap();
        if data == b"1" {
            break;
        }
    }
    let event = watch.try_recv().expect("event before the reply that shows the data").unwrap();
    assert_eq!(event.kind, EventKind::NodeDataChanged);
}

#[tokio::test]
async fn close_deletes_ephemerals_and_tells_watchers() {
    let addr = start().await;
    let owner = Client::connect(&addr).await.unwrap();
    let watcher = Client::connect(&addr).await.unwrap();
    owner.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
    assert_eq!(owner.create("/e/c", b"", CreateMode::Persistent).await, Err(Error::NoChildrenForEphemerals));
    let (stat, watch) = watcher.exists_watch("/e").await.unwrap();
    assert_eq!(stat.unwrap().ephemeral_owner, Some(owner.session_id()));
    owner.close().await.unwrap();
    assert_eq!(owner.state(), SessionState::Closed);
    assert_eq!(watcher.exists("/e").await.unwrap(), None);
    assert_eq!(watch.await.unwrap().kind, EventKind::NodeDeleted);
    assert_eq!(owner.exists("/").await, Err(Error::Closed));
}

/// G2: a session's requests are handled in the order sent, so a read sent just before a
/// write (pipelined, not awaited) does not see it, and one sent just after does.
#[tokio::test]
async fn pipelined_reads_see_exactly_the_earlier_writes() {
    let addr = start().await;
    let c = Client::connect(&addr).await.unwrap();
    c.create("/fifo", b"0", CreateMode::Persistent).await.unwrap();
    for round in 1..=50u32 {
        let new = round.to_string();
        let (before, set, after) =
            tokio::join!(c.get_data("/fifo"), c.set_data("/fifo", new.as_bytes(), None), c.get_data("/fifo"));
        set.unwrap();
        assert_eq!(before.unwrap().0, (round - 1).to_string().as_bytes(), "round {round}");
        assert_eq!(after.unwrap().0, new.as_bytes(), "round {round}");
    }
}
