//! A leader whose process is gone is replaced at once (G28): its followers find its peer port
//! serving nothing and elect the next leader without waiting out openraft's lease. A leader
//! that is alive but cut off still cannot lose a holder its lock before the holder's
//! `lost()` (G16), even when the fast path elects its successor.

use crate::harness::*;
use std::time::{Duration, Instant};
use ward_client::{CreateMode, Error, SessionState};
use ward_testkit::Ensemble;

/// Elections started by the fast path, summed over `ids`.
async fn fast_elections(ensemble: &Ensemble, ids: &[u64]) -> u64 {
    let mut sum = 0;
    for id in ids {
        sum += figure_of(ensemble, *id, "raft_fast_elections_total").await.unwrap_or(0);
    }
    sum
}

// G28: the leader of three is killed with SIGKILL under a writer and a lock holder connected
// to the followers. A follower stands at once (the fast path, counted in
// `ward_raft_fast_elections_total`), the other grants its vote although it heard the old
// leader within its lease, writes go on, and no session or lock is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_without_waiting_out_its_lease() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let rest: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
        let on_rest: Vec<String> = rest.iter().map(|id| ensemble.addr(*id)).collect();
        let writer = connect_serving(&on_rest.join(","), Duration::from_secs(20)).await;
        writer.create("/g28", b"", CreateMode::Persistent).await.expect("create /g28");
        let holder = connect_serving(&on_rest.join(","), Duration::from_secs(20)).await;
        let guard = holder.lock("/g28-lock").await.expect("lock");
        let (writer_session, holder_session, token) = (writer.session_id(), holder.session_id(), guard.fencing_token());
        assert_eq!(fast_elections(&ensemble, &rest).await, 0, "a fast election before any kill");
        // Every follower is in contact with the leader (the touch rounds keep a connection
        // to it open): a write through each has been acknowledged.
        for addr in &on_rest {
            let c = connect_serving(addr, Duration::from_secs(20)).await;
            c.create("/g28/through-", b"", CreateMode::PersistentSequential).await.expect("write through a follower");
            c.close().await.expect("close");
        }

        let killed_at = Instant::now();
        ensemble.member(leader).kill9_now();
        let next = ensemble.leader(&rest).await;
        let first =
            answered("a write after the kill", || writer.create("/g28/after-", b"", CreateMode::PersistentSequential));
        first.await.expect("a write after the kill");
        println!(
            "leader {leader} killed; member {next} leads, first write acknowledged {:?} after the kill",
            killed_at.elapsed()
        );

        wait_until("the fast path is counted", DEADLINE, || async { fast_elections(&ensemble, &rest).await >= 1 })
            .await;
        assert!(
            ensemble.log_tail(next).contains("standing at once"),
            "the new leader stood by the fast path:\n{}",
            ensemble.log_tail(next)
        );
        assert_eq!(writer.session_id(), writer_session, "the writer's session");
        assert_eq!(holder.session_id(), holder_session, "the holder's session");
        assert!(!guard.is_lost(), "the holder lost its lock");
        holder.check_fence(guard.path(), token).await.expect("the new leader vouches for the holder's token");
        guard.unlock().await.expect("unlock");
        writer.close().await.expect("close");
        holder.close().await.expect("close");
    })
    .await
}

// G16 with G28: a leader alive but cut off loudly (its peer connections closed, new ones
// closed at once, so to the followers its port serves nothing and the fast path elects the
// next leader at once) keeps its own clients. Its lock holder sees `lost()` before a waiter
// connected to the others is granted the lock; after healing, the old token is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leaders_holder_sees_lost_before_the_fast_path_grants_its_lock() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let rest: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
        let on_rest: Vec<String> = rest.iter().map(|id| ensemble.addr(*id)).collect();
        let holder = connect_serving(&ensemble.addr(leader), Duration::from_secs(6)).await;
        let guard = holder.lock("/g28-cut").await.expect("holder lock");
        let old = guard.fence();
        let waiter = connect_serving(&on_rest.join(","), Duration::from_secs(10)).await;
        waiter.create("/g28-cut-resource", b"", CreateMode::Persistent).await.expect("create the resource");
        let granted = queue_waiter(&waiter, "/g28-cut").await;
        let lost = tokio::spawn(async move {
            guard.lost().await;
            (Instant::now(), guard)
        });
        assert!(!lost.is_finished(), "lost before the cut");

        let cut_at = Instant::now();
        ensemble.cut_off(leader);
        let (granted_at, next) = within("the waiter is granted", DEADLINE, granted).await.expect("waiter task");
        let (lost_at, guard) = within("lost() completes", DEADLINE, lost).await.expect("lost task");
        println!(
            "leader {leader} cut off (holder's session timeout 6 s): lost() after {:?}, the waiter granted after {:?}",
            lost_at - cut_at,
            granted_at - cut_at
        );
        assert!(lost_at < granted_at, "lost() completed {:?} after the next grant", lost_at - granted_at);
        assert!(fast_elections(&ensemble, &rest).await >= 1, "the followers elected by the fast path");
        assert!(next.fencing_token() > old.token);

        ensemble.heal();
        ward_testkit::wait_state(&holder, SessionState::Expired, DEADLINE).await;
        drop(guard);
        let (resource, fence) = ("/g28-cut-resource", next.fence());
        let write = answered("the new holder's write", || waiter.set_data_fenced(&fence, resource, b"next", None));
        write.await.expect("the new holder's write");
        let stale = answered("the old holder's write", || waiter.set_data_fenced(&old, resource, b"old", None)).await;
        assert_eq!(stale, Err(Error::StaleFence), "the cut-off holder's token");
        next.unlock().await.expect("unlock");
        let _ = waiter.close().await;
    })
    .await
}
