//! Locks on an ensemble (G16): contender processes across ten leader kills, a holder whose
//! member is partitioned away, a fence check through a lagging follower, a holder process
//! paused past its session timeout, and a holder whose member is killed and restarted.

use crate::harness::*;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};
use ward_client::{Client, CreateMode, Error, Fence, SessionState};
use ward_testkit::{serial, wait_state, Ensemble};

const KILLS: usize = 10;

/// The contenders' session timeouts: from the shortest allowed, whose guards often report
/// the lock lost while a failover holds up their fenced write, to the default, which rides
/// failovers out.
const SESSION_TIMEOUTS_MS: [&str; 3] = ["4000", "6000", "10000"];

/// What a `ward-contender fenced` record showed.
#[derive(Debug, Default)]
struct FencedRecord {
    /// Acquisitions per contender pid.
    enters: BTreeMap<u32, usize>,
    /// Sections that ended with the guard reporting the lock lost.
    lost: usize,
    /// Accepted fenced writes (token, zxid of the write), in record order.
    accepted: Vec<(u64, u64)>,
    /// Fenced writes made inside a section that the server refused.
    refused: usize,
    /// Fenced writes made inside a section whose outcome is unknown.
    unknown: usize,
    /// Writes with a released fence, refused as they must be.
    stale_refused: usize,
    /// Writes with a released fence whose outcome is unknown.
    stale_unknown: usize,
}

/// Reads a `fenced` record (see testkit/contender), checking as it goes that held
/// sections never overlap (a section ends at its "exit" or, for a holder told that its lock
/// is lost, at its "lost" line), that each holder's token is above every earlier one, and
/// that no write with a released fence was accepted. Panics with the offending line. A
/// `finished` record (every contender has stopped) may not end inside a section.
fn read_fenced_record(text: &str, finished: bool) -> FencedRecord {
    let mut seen = FencedRecord::default();
    let mut inside: Option<u64> = None;
    let mut last_token = 0;
    for (n, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| -> u64 {
            words.get(i).and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("line {}: malformed {line:?}", n + 1))
        };
        match words.first().copied() {
            Some("enter") => {
                if let Some(holder) = inside {
                    panic!("line {}: overlap: {line:?} while token {holder} is held", n + 1);
                }
                let token = number(1);
                assert!(token > last_token, "line {}: token {token} not above the previous {last_token}", n + 1);
                (inside, last_token) = (Some(token), token);
                *seen.enters.entry(number(2) as u32).or_default() += 1;
            }
            Some(end @ ("exit" | "lost")) => {
                assert_eq!(inside, Some(number(1)), "line {}: {line:?} does not close the open section", n + 1);
                inside = None;
                seen.lost += usize::from(end == "lost");
            }
            Some("wrote") => seen.accepted.push((number(1), number(2))),
            Some("refused") => seen.refused += 1,
            Some("unknown") => seen.unknown += 1,
            Some("stale") => match words.get(2).copied() {
                Some("refused") => seen.stale_refused += 1,
                Some("unknown") => seen.stale_unknown += 1,
                _ => panic!("line {}: a write with a released fence was accepted: {line:?}", n + 1),
            },
            _ => panic!("line {}: unknown record line {line:?}", n + 1),
        }
    }
    if finished {
        assert_eq!(inside, None, "the record ends inside a section");
    }
    seen
}

/// The resource's view: in the order the ensemble applied them (by zxid), accepted fenced
/// writes carry tokens that never go down.
fn check_accepted_in_token_order(accepted: &[(u64, u64)]) {
    let mut by_zxid = accepted.to_vec();
    by_zxid.sort_by_key(|&(_, zxid)| zxid);
    for pair in by_zxid.windows(2) {
        let ((earlier, at), (later, then)) = (pair[0], pair[1]);
        assert!(
            later >= earlier,
            "the write of token {later} (zxid {then}) was accepted after token {earlier}'s ({at})"
        );
    }
}

/// Waits until member `id` takes clients again and has caught up with a sync.
async fn wait_serving(ensemble: &Ensemble, id: u64) {
    let addr = ensemble.addr(id);
    wait_until(&format!("member {id} serves again"), DEADLINE, || async {
        let Some(client) = try_connect(&addr, Duration::from_secs(4)).await else { return false };
        let synced = client.sync("/").await.is_ok();
        let _ = client.close().await;
        synced
    })
    .await
}

/// Starts one `ward-contender fenced` per session timeout, all on one lock and recording
/// into `record`, and lets them go once each is connected.
async fn start_contenders(all: &str, record: &RecordFile, stop: &str) -> Vec<Contender> {
    let file = record.path_str();
    let mut contenders: Vec<Contender> = SESSION_TIMEOUTS_MS
        .iter()
        .map(|timeout| {
            Contender::spawn(&[
                "fenced",
                "--server",
                all,
                "--dir",
                "/t102-lock",
                "--file",
                &file,
                "--target",
                "/t102-resource",
                "--stop-file",
                stop,
                "--session-timeout-ms",
                timeout,
                "--iters",
                "1000000",
            ])
        })
        .collect();
    for contender in &mut contenders {
        assert_eq!(contender.next_line().await.text, "ready");
    }
    for contender in &mut contenders {
        contender.go();
    }
    contenders
}

/// Acquisitions per contender pid so far.
fn acquisitions(record: &RecordFile) -> BTreeMap<u32, usize> {
    read_fenced_record(&record.read(), false).enters
}

/// Waits until each of `pids` has acquired since `before`; panics with what the lock queue
/// looks like from every member if that takes longer than [`DEADLINE`].
async fn wait_all_acquire(ensemble: &Ensemble, record: &RecordFile, pids: &[u32], before: &BTreeMap<u32, usize>) {
    let count = |counts: &BTreeMap<u32, usize>, pid: &u32| counts.get(pid).copied().unwrap_or(0);
    let progress = tokio::time::timeout(DEADLINE, async {
        while !pids.iter().all(|pid| count(&acquisitions(record), pid) > count(before, pid)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    if progress.await.is_ok() {
        return;
    }
    let mut views = Vec::new();
    for id in ensemble.ids() {
        let Some(client) = try_connect(&ensemble.addr(id), Duration::from_secs(4)).await else {
            views.push(format!("member {id}: takes no clients"));
            continue;
        };
        let zxid = client.server_stats().await.map(|s| s.last_zxid);
        let queue = client.get_children("/t102-lock").await;
        views.push(format!("member {id} at zxid {zxid:?}: queue {queue:?}"));
        let _ = client.close().await;
    }
    let tail: Vec<String> = record.read().lines().rev().take(12).map(str::to_string).collect();
    panic!(
        "not every contender acquired within {DEADLINE:?} (before: {before:?}); {views:?}; record tail (newest \
         first) {tail:?}"
    );
}

// G16: three contender processes loop lock, fenced write, unlock on one lock while the
// leader is killed with SIGKILL and restarted ten times. No two held sections overlap (a
// section a guard reported lost ends there), tokens rise from holder to holder, every write
// with a released fence is refused, the accepted fenced writes never go back in token order,
// and every contender keeps acquiring after each kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contenders_stay_exclusive_and_fenced_across_ten_leader_kills() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let all = ensemble.connect_string();
        let record = RecordFile::new("t102-failover");
        let stop = record.path().with_file_name("stop");
        let admin = connect_serving(&all, Duration::from_secs(10)).await;
        admin.create("/t102-resource", b"", CreateMode::Persistent).await.expect("create the resource");
        let mut contenders = start_contenders(&all, &record, stop.to_str().expect("UTF-8 path")).await;
        let pids: Vec<u32> = contenders.iter().map(Contender::pid).collect();
        wait_all_acquire(&ensemble, &record, &pids, &BTreeMap::new()).await;

        for kill in 1..=KILLS {
            let leader = ensemble.leader(&[]).await;
            let others: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
            let before = acquisitions(&record);
            let killed_at = Instant::now();
            ensemble.member(leader).kill9_now();
            let next = ensemble.leader(&others).await;
            let elected = killed_at.elapsed();
            ensemble.member(leader).restart_now();
            wait_all_acquire(&ensemble, &record, &pids, &before).await;
            let progressed = killed_at.elapsed();
            // Each kill takes a member out of a whole ensemble, not out of a half-recovered one.
            wait_serving(&ensemble, leader).await;
            println!(
                "kill {kill}: leader {leader} -> {next} seen after {elected:?}; every contender acquired again \
                 after {progressed:?}; member {leader} back after {:?}",
                killed_at.elapsed()
            );
        }

        std::fs::write(&stop, b"").expect("create the stop file");
        for contender in &mut contenders {
            let done = contender.next_line().await.text;
            assert!(done.starts_with("done "), "contender {} said {done:?}", contender.pid());
            println!("contender {}: {done}", contender.pid());
            assert!(contender.wait_exit(DEADLINE).await.success());
        }
        let seen = read_fenced_record(&record.read(), true);
        check_accepted_in_token_order(&seen.accepted);
        println!(
            "{} acquisitions {:?}, {} ended by lost(); fenced writes: {} accepted, {} refused, {} unknown; \
             writes with a released fence: {} refused, {} unknown, 0 accepted",
            seen.enters.values().sum::<usize>(),
            seen.enters,
            seen.lost,
            seen.accepted.len(),
            seen.refused,
            seen.unknown,
            seen.stale_refused,
            seen.stale_unknown
        );
        check_resource_holds_the_last_write(&admin, &seen.accepted).await;
        let _ = admin.close().await;
    })
    .await
}

/// The resource holds the last accepted write, unless a write of unknown outcome landed
/// after it.
async fn check_resource_holds_the_last_write(admin: &Client, accepted: &[(u64, u64)]) {
    // The admin's member may have closed its connection in the last failover: read again
    // once it has moved.
    answered("a sync after the last kill", || admin.sync("/")).await.expect("sync");
    let read = answered("a read of the resource", || admin.get_data("/t102-resource")).await;
    let (data, stat) = read.expect("read the resource");
    let &(token, zxid) = accepted.iter().max_by_key(|&&(_, zxid)| zxid).expect("some accepted write");
    assert!(stat.mzxid >= zxid, "the resource's last write {} is older than an accepted one {zxid}", stat.mzxid);
    if stat.mzxid == zxid {
        assert_eq!(data, token.to_string().as_bytes());
    }
}

// G16: a holder connected only to a follower that is then partitioned from the rest of the
// ensemble sees lost() before a waiter on the majority side is granted the lock, and that
// grant does come; after healing, the follower serves again and the old token is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_on_a_partitioned_follower_sees_lost_before_the_next_grant() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let ids = ensemble.ids();
        let follower = ids.iter().copied().find(|&id| id != leader).expect("a follower");
        let majority: Vec<String> = ids.iter().filter(|&&id| id != follower).map(|&id| ensemble.addr(id)).collect();
        let holder = connect_serving(&ensemble.addr(follower), Duration::from_secs(6)).await;
        let guard = holder.lock("/t102-part").await.expect("holder lock");
        let old = guard.fence();
        let waiter = connect_serving(&majority.join(","), Duration::from_secs(10)).await;
        waiter.create("/t102-part-resource", b"", CreateMode::Persistent).await.expect("create the resource");
        let granted = queue_waiter(&waiter, "/t102-part").await;
        let lost = tokio::spawn(async move {
            guard.lost().await;
            (Instant::now(), guard)
        });
        assert!(!lost.is_finished(), "lost before the partition");

        let cut_at = Instant::now();
        ensemble.isolate(follower);
        let (granted_at, next) = within("the waiter is granted", DEADLINE, granted).await.expect("waiter task");
        let (lost_at, guard) = within("lost() completes", DEADLINE, lost).await.expect("lost task");
        println!(
            "member {follower} isolated (holder's session timeout 6 s): lost() after {:?}, the waiter granted after \
             {:?}, {:?} apart",
            lost_at - cut_at,
            granted_at - cut_at,
            granted_at.saturating_duration_since(lost_at)
        );
        assert!(lost_at < granted_at, "lost() completed {:?} after the next grant", lost_at - granted_at);
        assert!(guard.is_lost());
        assert!(next.fencing_token() > old.token);

        ensemble.heal();
        // The partitioned member comes back into contact and tells the holder its session
        // ended.
        wait_state(&holder, SessionState::Expired, DEADLINE).await;
        drop(guard);
        // The healed member may start an election: writes are repeated until answered (the
        // same fenced write twice sets the same data).
        let (resource, fence) = ("/t102-part-resource", next.fence());
        let write = answered("the new holder's write", || waiter.set_data_fenced(&fence, resource, b"next", None));
        write.await.expect("the new holder's write");
        let stale = answered("the old holder's write", || waiter.set_data_fenced(&old, resource, b"old", None)).await;
        assert_eq!(stale, Err(Error::StaleFence), "the partitioned holder's token");
        let rejoined = connect_serving(&ensemble.addr(follower), Duration::from_secs(10)).await;
        answered("a sync through the healed member", || rejoined.sync("/")).await.expect("sync");
        let read = answered("a read through the healed member", || rejoined.get_data(resource)).await;
        assert_eq!(read.expect("read").0, b"next");
        next.unlock().await.expect("unlock");
        let relock = answered("a lock through the healed member", || rejoined.lock("/t102-part")).await;
        relock.expect("lock through the healed member").unlock().await.expect("unlock");
        let _ = rejoined.close().await;
        let _ = waiter.close().await;
    })
    .await
}

// G12: a fence check answers for the lock as it stands in the ensemble, not as a lagging
// member last applied it. The follower's messages from the leader are held after it has
// applied the first grant, so its own state still shows the first holder after that holder
// released and another was granted. Through it the old token is never called valid: the
// check fails while the follower cannot catch up, and is refused once it has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_follower_never_vouches_for_a_superseded_fence() {
    let _serial = serial().await;
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let follower = ensemble.ids().into_iter().find(|&id| id != leader).expect("a follower");
        let first = connect_serving(&ensemble.addr(leader), Duration::from_secs(10)).await;
        let second = connect_serving(&ensemble.addr(leader), Duration::from_secs(10)).await;
        let checker = connect_serving(&ensemble.addr(follower), Duration::from_secs(30)).await;
        let guard = first.lock("/t102-lag").await.expect("the first holder");
        let old = guard.fence();
        checker.sync("/t102-lag").await.expect("the follower has applied the first grant");
        checker.check_fence(&old.path, old.token).await.expect("the first holder's token is valid");

        ensemble.hold(leader, follower);
        guard.unlock().await.expect("the first holder releases");
        let next = second.lock("/t102-lag").await.expect("the second holder");
        // Held back indeed: read without a sync, the follower still shows the first contender.
        let stale = checker.exists(&old.path).await.expect("a read through the follower");
        assert!(stale.is_some(), "the follower was not held back: the first contender is gone there");
        let held = tokio::time::timeout(DEADLINE, checker.check_fence(&old.path, old.token)).await;
        println!("fence check through the held-back follower: {held:?}");
        assert!(!matches!(held, Ok(Ok(()))), "a lagging follower vouched for a superseded token");

        ensemble.release(leader, follower);
        // The follower may have started an election, or given its clients up, meanwhile.
        let caught_up = wait_for("a fence check answered through the caught-up follower", DEADLINE, || async {
            match checker.check_fence(&old.path, old.token).await {
                outcome @ (Ok(()) | Err(Error::StaleFence)) => Some(outcome),
                Err(_) => None,
            }
        })
        .await;
        assert_eq!(caught_up, Err(Error::StaleFence), "the old token once the follower caught up");
        let fence = next.fence();
        let current = answered("the new holder's check", || checker.check_fence(&fence.path, fence.token));
        current.await.expect("the new holder's token is valid");
        next.unlock().await.expect("unlock");
        for client in [first, second, checker] {
            let _ = client.close().await;
        }
    })
    .await
}

/// Sends `signal` ("-STOP", "-CONT") to process `pid`.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill").arg(signal).arg(pid.to_string()).status().expect("run kill");
    assert!(status.success(), "kill {signal} {pid} failed: {status}");
}

// G16: a holder process stopped (SIGSTOP) past its session timeout learns nothing while
// stopped; a waiter is granted the lock, and once resumed the old holder's fenced write with
// its old token is refused (StaleFence), through its own session or a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_holder_process_has_its_fenced_write_refused_after_resuming() {
    bounded(async {
        let ensemble = Ensemble::start(3, &["--min-session-timeout-ms", "1000"]).await;
        let all = ensemble.connect_string();
        let waiter = connect_serving(&all, Duration::from_secs(10)).await;
        waiter.create("/t102-paused-resource", b"", CreateMode::Persistent).await.expect("create the resource");
        let mut holder = Contender::spawn(&[
            "hold",
            "--server",
            &all,
            "--dir",
            "/t102-paused",
            "--session-timeout-ms",
            "3000",
            "--write-on-go",
            "/t102-paused-resource",
        ]);
        let held = holder.next_line().await.text;
        let old = match held.split_whitespace().collect::<Vec<_>>()[..] {
            ["held", token, path] => Fence { path: path.to_string(), token: token.parse().expect("token") },
            _ => panic!("unexpected holder output {held:?}"),
        };
        let granted = queue_waiter(&waiter, "/t102-paused").await;

        let stopped_at = Instant::now();
        signal(holder.pid(), "-STOP");
        let (granted_at, next) = within("the waiter is granted", DEADLINE, granted).await.expect("waiter task");
        assert!(next.fencing_token() > old.token);
        waiter.set_data_fenced(&next.fence(), "/t102-paused-resource", b"next", None).await.expect("the new write");
        signal(holder.pid(), "-CONT");
        let resumed_at = Instant::now();
        let lost = holder.next_line().await;
        assert_eq!(lost.text, "lost", "the resumed holder learns its lock is lost");
        println!(
            "holder stopped (session timeout 3 s): the waiter granted after {:?}; resumed after {:?}; lost() \
             reported {:?} after resuming",
            granted_at - stopped_at,
            resumed_at - stopped_at,
            lost.at.saturating_duration_since(resumed_at)
        );
        holder.go();
        let mut outcomes = vec![holder.next_line().await.text];
        if outcomes[0] != "fenced stale-fence" && !outcomes[0].starts_with("fenced ok") {
            // No answer through its own session (over by now): the same fence, presented
            // through a new session.
            outcomes.push(holder.next_line().await.text);
        }
        println!("the old holder's fenced writes: {outcomes:?}");
        assert!(
            outcomes.iter().all(|o| !o.starts_with("fenced ok")),
            "a stale fenced write was accepted: {outcomes:?}"
        );
        assert_eq!(outcomes.last().map(String::as_str), Some("fenced stale-fence"), "{outcomes:?}");
        assert!(holder.wait_exit(DEADLINE).await.success());
        assert_eq!(waiter.get_data("/t102-paused-resource").await.expect("read").0, b"next");
        assert_eq!(waiter.check_fence(&old.path, old.token).await, Err(Error::StaleFence));
        next.unlock().await.expect("unlock");
        waiter.close().await.expect("close");
    })
    .await
}

// G16 (with G15): a holder connected only to the leader, which is killed and restarted
// after a new leader is elected, keeps its session and its lock: the restarted member,
// still replaying its log, must not call the session expired (which would end it for good
// while the new leader keeps it, and its lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_keeps_its_lock_across_a_restart_of_its_member() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let others: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
        let majority: Vec<String> = others.iter().map(|&id| ensemble.addr(id)).collect();
        // Long enough to cover an election, the writes, a restart and a reconnect on a
        // loaded machine: the point is the restarted member's answer, not the timeout.
        let holder = connect_serving(&ensemble.addr(leader), Duration::from_secs(20)).await;
        let guard = holder.lock("/t102-restart").await.expect("holder lock");
        let other = connect_serving(&majority.join(","), Duration::from_secs(10)).await;
        let killed_at = Instant::now();
        ensemble.member(leader).kill9_now();
        let next = ensemble.leader(&others).await;
        // The log moves on without the member, so that it has some catching up to do.
        for i in 0..20 {
            let path = format!("/t102-restart-{i}");
            // Right after the election the write may be cut off; its retry may find it done.
            match answered("a write through the new leader", || other.create(&path, b"", CreateMode::Persistent)).await
            {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(e) => panic!("create {path}: {e:?}"),
            }
        }
        ensemble.member(leader).restart_now();
        wait_state(&holder, SessionState::Connected, DEADLINE).await;
        println!(
            "leader {leader} killed ({next} elected) and restarted: its holder connected again after {:?}, lock \
             reported lost: {}",
            killed_at.elapsed(),
            guard.is_lost()
        );
        let held = answered("a fence check", || holder.check_fence(guard.path(), guard.fencing_token())).await;
        held.expect("the holder still holds the lock");
        guard.unlock().await.expect("unlock");
        let _ = holder.close().await;
        let _ = other.close().await;
    })
    .await
}
