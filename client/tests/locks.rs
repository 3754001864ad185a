//! Locks and elections against an in-process server: handoff, fencing, cancellation.
//! Process-level fault tests (kill -9, cut connections) are in the root package's `tests/it`.

mod common;

use common::start;
use std::time::Duration;
use ward_client::{Client, Error};

#[tokio::test]
async fn handoff_is_fifo_with_growing_tokens_and_one_grant_per_release() {
    let addr = start().await;
    let holder = Client::connect(&addr).await.unwrap();
    let first = holder.lock("/locks/a").await.unwrap();
    let mut waiters = Vec::new();
    for i in 0..5 {
        let c = Client::connect(&addr).await.unwrap();
        let task = tokio::spawn(async move {
            let g = c.lock("/locks/a").await.unwrap();
            (i, g.fencing_token(), g, c)
        });
        // Queue in a known order: wait until this waiter's contender exists.
        loop {
            if holder.get_children("/locks/a").await.unwrap().len() == i + 2 {
                break;
            }
            tokio::task::yield_now().await;
        }
        waiters.push(task);
    }
    let grants_before = holder.server_stats().await.unwrap().lock_grants;
    let mut last_token = first.fencing_token();
    first.unlock().await.unwrap();
    for (expected, task) in waiters.into_iter().enumerate() {
        let (i, token, guard, _c) = task.await.unwrap();
        assert_eq!(i, expected, "FIFO");
        assert!(token > last_token);
        last_token = token;
        guard.unlock().await.unwrap();
    }
    let grants = holder.server_stats().await.unwrap().lock_grants - grants_before;
    assert_eq!(grants, 5, "one grant per release");
    assert!(holder.get_children("/locks/a").await.unwrap().is_empty());
}

#[tokio::test]
async fn stale_fence_is_rejected() {
    let addr = start().await;
    let a = Client::connect(&addr).await.unwrap();
    a.create("/data", b"", ward_client::CreateMode::Persistent).await.unwrap();
    let guard = a.lock("/locks/f").await.unwrap();
    let fence = guard.fence();
    a.set_data_fenced(&fence, "/data", b"1", None).await.unwrap();
    a.check_fence(&fence.path, fence.token).await.unwrap();
    guard.unlock().await.unwrap();
    let b = Client::connect(&addr).await.unwrap();
    let next = b.lock("/locks/f").await.unwrap();
    assert!(next.fencing_token() > fence.token);
    assert_eq!(a.set_data_fenced(&fence, "/data", b"2", None).await, Err(Error::StaleFence));
    assert_eq!(b.check_fence(&fence.path, fence.token).await, Err(Error::StaleFence));
    assert_eq!(b.check_fence(next.path(), fence.token).await, Err(Error::StaleFence));
    b.check_fence(next.path(), next.fencing_token()).await.unwrap();
}

#[tokio::test]
async fn timed_out_and_cancelled_attempts_leave_nothing() {
    let addr = start().await;
    let a = Client::connect(&addr).await.unwrap();
    let held = a.lock("/locks/c").await.unwrap();
    let b = Client::connect(&addr).await.unwrap();
    assert!(b.try_lock("/locks/c", Duration::from_millis(50)).await.unwrap().is_none());
    tokio::select! {
        _ = b.lock("/locks/c") => panic!("granted while held"),
        _ = tokio::time::sleep(Duration::from_millis(20)) => {}
    }
    b.sync("/").await.unwrap();
    // The releases were queued before the sync, so the server has applied them.
    assert_eq!(b.get_children("/locks/c").await.unwrap().len(), 1);
    drop(held);
    let again = b.lock("/locks/c").await.unwrap();
    assert!(!again.is_lost());
}

#[tokio::test]
async fn election_has_one_leader_and_observers_follow() {
    let addr = start().await;
    let a = Client::connect(&addr).await.unwrap();
    let b = Client::connect(&addr).await.unwrap();
    let mut observer = a.election("/elect").observe();
    assert_eq!(observer.next().await.unwrap(), None);
    let lead_a = a.election("/elect").campaign(b"a").await.unwrap();
    assert_eq!(observer.next().await.unwrap().unwrap().data, b"a");
    let election_b = b.election("/elect");
    let pending_b = tokio::spawn(async move { election_b.campaign(b"b").await.unwrap() });
    lead_a.resign().await.unwrap();
    let lead_b = pending_b.await.unwrap();
    let seen = observer.next().await.unwrap();
    let seen = if seen.is_none() { observer.next().await.unwrap() } else { seen };
    assert_eq!(seen.unwrap().token, lead_b.fencing_token());
}

#[tokio::test]
async fn mutex_reenters_and_hands_off_locally_with_a_new_token() {
    let addr = start().await;
    let c = Client::connect(&addr).await.unwrap();
    let a = c.mutex("/locks/m");
    let outer = a.lock().await.unwrap();
    let inner = a.lock().await.unwrap();
    assert_eq!(outer.fencing_token(), inner.fencing_token(), "reentrant: same token");
    assert_eq!(c.get_children("/locks/m").await.unwrap().len(), 1);
    let b = c.mutex("/locks/m");
    let waiter = tokio::spawn(async move {
        let g = b.lock().await.unwrap();
        (g.fencing_token(), g)
    });
    inner.unlock().await.unwrap();
    let old_fence = outer.fence().unwrap();
    c.check_fence(&old_fence.path, old_fence.token).await.unwrap();
    assert!(!waiter.is_finished());
    outer.unlock().await.unwrap();
    let (token, guard) = waiter.await.unwrap();
    assert!(token > old_fence.token, "local handoff changes the token");
    assert_eq!(c.get_children("/locks/m").await.unwrap().len(), 1, "still one contender");
    assert_eq!(c.check_fence(&old_fence.path, old_fence.token).await, Err(Error::StaleFence));
    c.check_fence(&old_fence.path, token).await.unwrap();
    guard.unlock().await.unwrap();
    assert!(c.get_children("/locks/m").await.unwrap().is_empty());
}

#[tokio::test]
async fn read_write_lock_semaphore_and_multi_lock() {
    let addr = start().await;
    let c = Client::connect(&addr).await.unwrap();
    let d = Client::connect(&addr).await.unwrap();
    let r1 = c.read_lock("/rw").await.unwrap();
    let r2 = d.read_lock("/rw").await.unwrap();
    assert!(d.try_lock("/rw", Duration::from_millis(50)).await.unwrap().is_none());
    drop((r1, r2));
    let w = d.lock("/rw").await.unwrap();
    w.unlock().await.unwrap();

    let p1 = c.acquire_permit("/sem", 2).await.unwrap();
    let p2 = d.acquire_permit("/sem", 2).await.unwrap();
    assert_eq!(d.acquire_permit("/sem", 3).await.err(), Some(Error::PermitsMismatch));
    let e = Client::connect(&addr).await.unwrap();
    let waiting = tokio::spawn(async move { e.acquire_permit("/sem", 2).await.map(|g| (g, e)) });
    p1.unlock().await.unwrap();
    let (p3, _e) = waiting.await.unwrap().unwrap();
    drop((p2, p3));

    let ab = c.lock_all(&["/ma", "/mb"]).await.unwrap();
    assert_eq!(ab.fences().len(), 2);
    let ba = tokio::spawn(async move { d.lock_all(&["/mb", "/ma"]).await.map(|g| (g, d)) });
    ab.unlock().await.unwrap();
    let (ba, _d) = ba.await.unwrap().unwrap();
    assert!(ba.fences()[0].path.starts_with("/mb/"));
}

#[tokio::test]
async fn a_new_session_of_the_same_owner_ends_the_old_one_at_once() {
    let addr = start().await;
    let old =
        Client::builder(&addr).owner("billing-1").session_timeout(Duration::from_secs(30)).connect().await.unwrap();
    let held = old.lock("/locks/owned").await.unwrap();
    let other = Client::builder(&addr).owner("billing-2").connect().await.unwrap();
    let new = Client::builder(&addr).owner("billing-1").connect().await.unwrap();
    // The old incarnation's lock is gone without waiting out its 30 s timeout.
    let again = new.try_lock("/locks/owned", Duration::from_secs(10)).await.unwrap().expect("lock freed");
    assert!(again.fencing_token() > held.fencing_token());
    let mut state = old.state_changes();
    state.wait_for(|s| *s == ward_client::SessionState::Expired).await.unwrap();
    assert!(held.is_lost());
    assert_eq!(other.exists("/").await.map(|s| s.is_some()), Ok(true), "other owners untouched");
}

/// A local handoff happens only while no other client waits behind: otherwise the lock goes
/// back to the server's queue, so the waiting client is not starved and tokens keep growing.
#[tokio::test]
async fn local_handoff_yields_to_a_waiting_client_and_tokens_keep_growing() {
    let addr = start().await;
    let x = Client::connect(&addr).await.unwrap();
    let y = Client::connect(&addr).await.unwrap();
    let (a, b) = (x.mutex("/locks/fair"), x.mutex("/locks/fair"));
    let held = a.lock().await.unwrap();
    let first = held.fencing_token();
    let remote = tokio::spawn(async move {
        let g = y.lock("/locks/fair").await.unwrap();
        let token = g.fencing_token();
        g.unlock().await.unwrap();
        token
    });
    while x.get_children("/locks/fair").await.unwrap().len() < 2 {
        tokio::task::yield_now().await;
    }
    let local = tokio::spawn(async move {
        let g = b.lock().await.unwrap();
        let token = g.fencing_token();
        g.unlock().await.unwrap();
        token
    });
    held.unlock().await.unwrap();
    let y_token = remote.await.unwrap();
    let b_token = local.await.unwrap();
    assert!(first < y_token && y_token < b_token, "tokens {first} < {y_token} < {b_token}");
}

/// A dropped guard's release is sent at once, ahead of anything the session sends next: the
/// same session's next `lock()` finds the lock free instead of queueing behind its own old
/// contender (no handoff message), and other sessions still get the lock afterwards.
#[tokio::test]
async fn dropped_guard_releases_ahead_of_the_sessions_next_request() {
    let addr = start().await;
    let a = Client::connect(&addr).await.unwrap();
    let grants_before = a.server_stats().await.unwrap().lock_grants;
    let mut last_token = 0;
    for _ in 0..200 {
        let guard = a.lock("/locks/drop").await.unwrap();
        assert!(guard.fencing_token() > last_token);
        last_token = guard.fencing_token();
        drop(guard);
    }
    let grants = a.server_stats().await.unwrap().lock_grants - grants_before;
    assert_eq!(grants, 0, "each lock() found the previous release already applied");
    // Requests after a drop see the release: the directory is empty for a read sent next.
    assert!(a.get_children("/locks/drop").await.unwrap().is_empty());
    let b = Client::connect(&addr).await.unwrap();
    let taken = tokio::time::timeout(Duration::from_secs(30), b.lock("/locks/drop")).await.unwrap().unwrap();
    assert!(taken.fencing_token() > last_token);
}
