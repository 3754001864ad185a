//! Members that come back behind the others: a leader restarted before anyone replaced it,
//! and a follower cut off long enough that it catches up from a snapshot. Each hides
//! changes that a client connected to it must still see: a write acknowledged just before
//! the restart, a watch's change and a lock's handoff that fall in the snapshot's gap.

use crate::harness::*;
use std::time::Duration;
use ward_client::{Client, CreateMode, EventKind};
use ward_testkit::{serial, Ensemble};

/// Sessions that outlive every cut and failover of these tests.
const SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Three members that snapshot every 50 entries (purging the log behind), a follower to cut
/// off, and a client of the other two: (ensemble, leader, that follower, client).
async fn snapshotting_ensemble() -> (Ensemble, u64, u64, Client) {
    let ensemble = Ensemble::start(3, &["--snapshot-every", "50"]).await;
    let leader = ensemble.leader(&[]).await;
    let behind = ensemble.ids().into_iter().find(|&id| id != leader).expect("a follower");
    let others: Vec<String> =
        ensemble.ids().into_iter().filter(|&id| id != behind).map(|id| ensemble.addr(id)).collect();
    let writer = connect(&others.join(",")).await;
    (ensemble, leader, behind, writer)
}

/// `sync` then read `path` through `client`, within `limit`: `None` if either failed.
async fn synced_read(client: &Client, path: &str, limit: Duration) -> Option<Vec<u8>> {
    let read = async {
        client.sync(path).await.ok()?;
        client.get_data(path).await.ok().map(|(data, _)| data)
    };
    tokio::time::timeout(limit, read).await.ok().flatten()
}

// G17: a leader killed just after acknowledging a write, and restarted before the others
// elect a new one, must not resume leading its old term: it no longer knows how far that
// term was committed, and a `sync` on a follower that had not yet heard the write was
// committed would be answered without it. The follower's messages from the leader are held,
// so it has not heard; its synced read may fail while it cannot catch up, but never shows
// the older value, and once the messages flow it shows the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_leader_never_answers_a_sync_without_what_it_acknowledged() {
    let _serial = serial().await;
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let follower = ensemble.ids().into_iter().find(|&id| id != leader).expect("a follower");
        let writer = connect(&ensemble.addr(leader)).await;
        let reader = connect_with(&ensemble.addr(follower), SESSION_TIMEOUT).await;
        writer.create("/g17-restart", b"before", CreateMode::Persistent).await.expect("create");
        assert_eq!(synced_read(&reader, "/g17-restart", DEADLINE).await.as_deref(), Some(&b"before"[..]));

        ensemble.hold(leader, follower);
        writer.set_data("/g17-restart", b"acknowledged", None).await.expect("a write the third member commits");
        ensemble.member(leader).kill9_now();
        ensemble.member(leader).restart_now();

        let during = synced_read(&reader, "/g17-restart", DEADLINE).await;
        println!("synced read while the follower is held back: {:?}", during.as_deref().map(String::from_utf8_lossy));
        assert_ne!(during.as_deref(), Some(&b"before"[..]), "a synced read went back before an acknowledged write");

        ensemble.release(leader, follower);
        // The follower may have given its clients up meanwhile (out of contact): ask until
        // a read succeeds.
        let after = within("a synced read after the release", DEADLINE, async {
            loop {
                if let Some(data) = synced_read(&reader, "/g17-restart", DEADLINE).await {
                    return data;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert_eq!(after, b"acknowledged", "the acknowledged write after the release");
    })
    .await
}

// G6 and G16: a follower cut off while its client's watch should fire and its client's lock
// is handed to it, and then caught up from a snapshot (the log it missed is purged), has
// applied neither change one by one. Its clients must still get the watch's event and the
// grant: the member closes their connections when it installs the snapshot, and they re-arm
// and ask again from what they last saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_caught_up_from_a_snapshot_still_fires_watches_and_hands_over_locks() {
    let _serial = serial().await;
    bounded(async {
        let (mut ensemble, _, behind, writer) = snapshotting_ensemble().await;
        // A long timeout: the sessions must outlive the cut, which a loaded machine stretches.
        let watcher = connect_with(&ensemble.addr(behind), SESSION_TIMEOUT).await;
        writer.create("/g6-snap", b"0", CreateMode::Persistent).await.expect("create");
        watcher.sync("/g6-snap").await.expect("sync");
        let (_, _, watch) = watcher.get_data_watch("/g6-snap").await.expect("arm a data watch");
        let holder = writer.lock("/g16-snap").await.expect("the first holder");
        let waiting = tokio::spawn({
            let watcher = watcher.clone();
            async move { watcher.lock("/g16-snap").await }
        });
        wait_until("the second contender is queued", DEADLINE, || async {
            writer.get_children("/g16-snap").await.is_ok_and(|c| c.len() == 2)
        })
        .await;

        ensemble.isolate(behind);
        writer.set_data("/g6-snap", b"1", None).await.expect("the watched change");
        holder.unlock().await.expect("unlock: the lock goes to the cut-off member's client");
        // Snapshots every 50 entries keep 50 behind them: a few hundred writes purge what the
        // cut-off member would need, so it can only be caught up by a snapshot.
        writer.create("/g6-snap-filler", b"", CreateMode::Persistent).await.expect("create the filler");
        for i in 0..400 {
            writer.set_data("/g6-snap-filler", format!("{i}").as_bytes(), None).await.expect("a filler write");
        }
        for id in ensemble.ids().into_iter().filter(|&id| id != behind) {
            let snapshot = ensemble.member(id).data_dir().join("snapshot");
            wait_until(&format!("member {id} has taken a snapshot"), DEADLINE, || async { snapshot.exists() }).await;
        }
        ensemble.heal();

        let event = fired(watch).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeDataChanged, "/g6-snap"));
        let guard = within("the handed-over lock", DEADLINE, waiting).await.expect("join").expect("the lock");
        assert!(!guard.is_lost(), "the lock handed over during the cut");
        guard.unlock().await.expect("unlock");
    })
    .await
}

/// Member `admin`'s `GET /digest` line (zxid, counts, digest of the state), if it answers.
async fn state_digest(admin: std::net::SocketAddr) -> Option<String> {
    let get = move || ward_testkit::http::try_get(admin, "/digest", Duration::from_secs(5));
    tokio::task::spawn_blocking(get).await.ok()?.ok().map(|(_, body)| body)
}

// Snapshot transfer (docs/storage.md, "Sending and receiving snapshots"): a follower cut off
// while the others write a tree whose snapshot is several times a transfer chunk (1 MiB),
// and purge the log behind it, is caught up by that snapshot, sent a chunk at a time from
// the leader's file into a file of the follower's; it ends with the leader's state: the
// same digest, and the same tree node for node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_caught_up_by_a_snapshot_of_many_chunks_holds_the_same_tree() {
    const NODES: usize = 320;
    const DATA: usize = 16 << 10;
    let _serial = serial().await;
    bounded(async {
        let (mut ensemble, leader, behind, writer) = snapshotting_ensemble().await;
        writer.create("/transfer", b"", CreateMode::Persistent).await.expect("create");

        ensemble.isolate(behind);
        // One entry each: snapshots every 50 entries purge all but 50 behind them.
        for i in 0..NODES {
            let data = vec![(i % 251) as u8; DATA];
            writer.create(&format!("/transfer/n{i:03}"), &data, CreateMode::Persistent).await.expect("create");
        }
        // A snapshot is begun every 50 entries, unless one is being written: small writes
        // until the others' snapshots hold four chunks and more.
        let several_chunks = 4 << 20;
        let snapshots: Vec<_> = ensemble
            .ids()
            .into_iter()
            .filter(|&id| id != behind)
            .map(|id| ensemble.member(id).data_dir().join("snapshot"))
            .collect();
        writer.create("/transfer-filler", b"", CreateMode::Persistent).await.expect("create the filler");
        wait_until("the others have snapshots of several chunks", DEADLINE, || async {
            writer.set_data("/transfer-filler", b"", None).await.expect("a filler write");
            snapshots.iter().all(|s| std::fs::metadata(s).is_ok_and(|m| m.len() > several_chunks))
        })
        .await;
        ensemble.heal();

        let (leader_admin, behind_admin) = (ensemble.admin_addr(leader), ensemble.admin_addr(behind));
        wait_until("the follower reports the leader's state digest", DEADLINE, || async {
            let (theirs, ours) = (state_digest(leader_admin).await, state_digest(behind_admin).await);
            theirs.is_some() && theirs == ours
        })
        .await;
        let installed = ensemble.member(behind).data_dir().join("snapshot");
        let size = std::fs::metadata(&installed).map(|m| m.len()).unwrap_or(0);
        assert!(size > several_chunks, "the follower installed a snapshot of {size} bytes, not several chunks");
        let on_leader = ward_testkit::tree_digest(&connect(&ensemble.addr(leader)).await).await.expect("leader's tree");
        let on_behind =
            ward_testkit::tree_digest(&connect(&ensemble.addr(behind)).await).await.expect("follower's tree");
        assert!(on_leader.len() > NODES, "{} nodes", on_leader.len());
        ward_testkit::assert_same_tree(&on_leader, &on_behind, "the follower caught up by a snapshot");
    })
    .await
}
