//! Lock-delay (G25, docs/recipes.md "Lock-delay"): a holder whose process is killed with
//! SIGKILL is followed by the next holder no earlier than the lock's delay after its session
//! ended (as the server stamped it), also across a restart of the server and a change of
//! leader; an orderly unlock, close or `ward lock` exit hands over at once, whatever the delay.

use crate::harness::*;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use ward_client::{Client, Contender as Queued, Error, Fence, LockGuard, LockOptions};
use ward_testkit::Ensemble;

/// Session timeouts may go down to this, so that a killed holder's session ends soon.
const SHORT_FLAGS: [&str; 2] = ["--min-session-timeout-ms", "500"];

/// Far longer than any test may wait: a hand-over seen at all came without the delay.
const HOUR: Duration = Duration::from_secs(3600);

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("the clock is past 1970");
    i64::try_from(since.as_millis()).expect("ms fit an i64")
}

/// A `ward-contender hold` of `dir` with `delay`, through `addr`: its fence once it holds.
async fn killable_holder(addr: &str, dir: &str, delay: Duration) -> (Contender, Fence) {
    let delay_ms = delay.as_millis().to_string();
    let args = ["hold", "--server", addr, "--dir", dir, "--session-timeout-ms", "1000", "--lock-delay-ms", &delay_ms];
    let mut holder = Contender::spawn(&args);
    let held = holder.next_line().await.text;
    let fence = match held.split_whitespace().collect::<Vec<_>>()[..] {
        ["held", token, path] => Fence { path: path.to_string(), token: token.parse().expect("a token") },
        _ => panic!("unexpected holder output {held:?}"),
    };
    (holder, fence)
}

/// `client` waiting for `dir`'s lock in a task of its own, once it is queued: the guard and
/// the wall-clock time it was granted at.
async fn queued_waiter(client: &Client, dir: &str, delay: Duration) -> tokio::task::JoinHandle<(LockGuard, i64)> {
    let waiting = {
        let (client, dir) = (client.clone(), dir.to_string());
        tokio::spawn(async move {
            let guard = client.lock_with(&dir, &LockOptions::new().lock_delay(delay)).await.expect("the waiter's lock");
            (guard, now_ms())
        })
    };
    wait_until("the waiter to queue", DEADLINE, || async {
        client.get_children(dir).await.is_ok_and(|c| c.len() == 2)
    })
    .await;
    waiting
}

/// The held-over holder of `dir`, once there is one: its contender as `ward holders` shows it.
async fn held_over(client: &Client, dir: &str) -> Queued {
    wait_for("the killed holder's lock to be held over", DEADLINE, || async {
        let queue = client.lock_holders(dir).await.expect("holders");
        queue.into_iter().find(|c| c.lock_delay_until_ms.is_some())
    })
    .await
}

// G25: kill -9 of the holder; its session expires (stamped by the server as the held-over
// node's mtime), the lock is held over until that time plus the delay, during which the
// stale fence is refused, and the waiter is granted no earlier than then (the server's
// clock and the test's are the same machine's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_is_followed_no_earlier_than_its_delay_after_its_session_ended() {
    bounded(async {
        const DELAY: Duration = Duration::from_secs(3);
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        let addr = server.addr_str();
        let (mut holder, stale) = killable_holder(&addr, "/ld", DELAY).await;
        let waiter = connect(&addr).await;
        let waiting = queued_waiter(&waiter, "/ld", DELAY).await;
        let killed_ms = now_ms();
        holder.kill9();

        let kept = held_over(&waiter, "/ld").await;
        assert_eq!((kept.path.as_str(), kept.session), (stale.path.as_str(), None));
        let until = kept.lock_delay_until_ms.expect("held over");
        let ended = until - DELAY.as_millis() as i64;
        assert!(ended >= killed_ms, "the session ended after the kill ({ended} < {killed_ms})");
        assert_eq!(waiter.check_fence(&stale.path, stale.token).await, Err(Error::StaleFence));
        let holders = run_cli(&addr, &["holders", "/ld"]).await.success().stdout;
        assert!(holders.starts_with(&format!("delayed {} ", stale.path)), "{holders}");
        assert!(holders.contains(" lock-delay-until="), "{holders}");

        let (guard, granted_ms) = within("the waiter to be granted", DEADLINE, waiting).await.expect("waiter");
        println!(
            "lock-delay {DELAY:?}: session ended {} ms after the kill, next grant {} ms after the end",
            ended - killed_ms,
            granted_ms - ended
        );
        assert!(granted_ms >= until, "granted at {granted_ms}, before the delay ended at {until}");
        assert!(guard.fencing_token() > stale.token);
        assert_eq!(waiter.check_fence(&stale.path, stale.token).await, Err(Error::StaleFence));
        waiter.check_fence(guard.path(), guard.fencing_token()).await.expect("the new holder's fence");
        assert!(waiter.exists(&stale.path).await.expect("exists").is_none(), "the held-over node is gone");
    })
    .await
}

// G25: an orderly hand-over is never delayed: with a delay of an hour, an unlock, a closed
// session and a `ward lock` whose command exits each let the next contender in at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orderly_unlock_close_or_cli_exit_hands_over_at_once_whatever_the_delay() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let options = LockOptions::new().lock_delay(HOUR);

        let (first, second) = (connect(&addr).await, connect(&addr).await);
        let held = first.lock_with("/lo", &options).await.expect("first");
        let waiting = queued_waiter(&second, "/lo", HOUR).await;
        held.unlock().await.expect("unlock");
        let (guard, _) = within("the hand-over after an unlock", DEADLINE, waiting).await.expect("second");

        let third = connect(&addr).await;
        let waiting = queued_waiter(&third, "/lo", HOUR).await;
        second.close().await.expect("close, the lock still held");
        within("the hand-over after a close", DEADLINE, waiting)
            .await
            .expect("third")
            .0
            .unlock()
            .await
            .expect("unlock");
        drop(guard);

        // `ward lock --lock-delay` records the delay and releases when its command exits.
        let fourth = connect(&addr).await;
        let mut cli = ClientProcess::spawn(
            &addr,
            &["lock", "--lock-delay", "3600", "/lc", "--", "sh", "-c", "echo in; read x; exit 0"],
        );
        assert_eq!(cli.next_line().await, "in");
        let (data, _) = fourth.get_data("/lc").await.expect("the lock's directory");
        assert_eq!(data, b"ward-lock lock-delay-ms=3600000");
        let waiting = queued_waiter(&fourth, "/lc", HOUR).await;
        cli.close_stdin();
        assert!(cli.wait_exit().await.success());
        let (held, _) = within("the hand-over after ward lock exits", DEADLINE, waiting).await.expect("fourth");
        assert_eq!(
            fourth.lock_with("/lc", &LockOptions::new().lock_delay(Duration::from_secs(1))).await.err(),
            Some(Error::LockDelayMismatch),
            "the delay is the directory's"
        );
        held.unlock().await.expect("unlock");
    })
    .await
}

// G25, G11: the held-over node is state like any other: killed and restarted during the
// delay, the server still holds the lock over, and its leader waits the delay out again in
// full from its start (later, never sooner); the waiter, whose session survives the
// restart, is granted no earlier than the delay after the holder's session ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_over_across_a_server_restart_is_granted_no_earlier_than_its_delay() {
    bounded(async {
        const DELAY: Duration = Duration::from_secs(2);
        let mut server = ServerProcess::start_with(&SHORT_FLAGS);
        let addr = server.addr_str();
        let (mut holder, stale) = killable_holder(&addr, "/lr", DELAY).await;
        let waiter = connect_with(&addr, Duration::from_secs(30)).await;
        let waiting = queued_waiter(&waiter, "/lr", DELAY).await;
        holder.kill9();
        let until = held_over(&waiter, "/lr").await.lock_delay_until_ms.expect("held over");
        let restarted_ms = now_ms();
        server.restart_now();
        let (guard, granted_ms) = within("the waiter to be granted", DEADLINE, waiting).await.expect("waiter");
        println!(
            "restarted {} ms before the delay's end; granted {} ms after",
            until - restarted_ms,
            granted_ms - restarted_ms
        );
        assert!(granted_ms >= until, "granted at {granted_ms}, before the delay ended at {until}");
        assert!(
            granted_ms >= restarted_ms + DELAY.as_millis() as i64,
            "the restarted leader waits the delay out in full"
        );
        assert!(guard.fencing_token() > stale.token);
    })
    .await
}

// G25, G15: on an ensemble, the leader is killed near the end of a lock's delay; the next
// leader (whose clock may not be the first's) waits the delay out in full from when it
// leads, and the waiter is granted no earlier than the delay after the holder's session
// ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_over_across_a_leader_kill_is_granted_no_earlier_than_its_delay() {
    bounded(async {
        const DELAY: Duration = Duration::from_secs(5);
        let mut ensemble = Ensemble::start(3, &SHORT_FLAGS).await;
        let leader = ensemble.leader(&[]).await;
        let followers: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
        let (mut holder, stale) = killable_holder(&ensemble.addr(followers[0]), "/le", DELAY).await;
        let others: Vec<String> = followers.iter().map(|id| ensemble.addr(*id)).collect();
        let waiter = connect_with(&others.join(","), Duration::from_secs(30)).await;
        let waiting = queued_waiter(&waiter, "/le", DELAY).await;
        holder.kill9();
        let until = held_over(&waiter, "/le").await.lock_delay_until_ms.expect("held over");
        // In its second half, when the old leader would soon have ended it; with room left for
        // finding the leader (a connect and a list of members) on a loaded machine.
        wait_until("the delay's second half", DEADLINE, || async { now_ms() >= until - 2500 }).await;
        let leader = ensemble.leader(&[]).await;
        let killed_ms = now_ms();
        ensemble.member(leader).kill9_now();
        let (guard, granted_ms) = within("the waiter to be granted", DEADLINE, waiting).await.expect("waiter");
        println!(
            "leader killed {} ms before the delay's end; granted {} ms after the kill",
            until - killed_ms,
            granted_ms - killed_ms
        );
        assert!(granted_ms >= until, "granted at {granted_ms}, before the delay ended at {until}");
        assert!(granted_ms >= killed_ms + DELAY.as_millis() as i64, "the new leader waits the delay out in full");
        assert!(guard.fencing_token() > stale.token);
    })
    .await
}
