//! Planned leadership changes (G26): a leader stopped with SIGTERM hands its leadership to a
//! follower before it stops, and `ward members transfer-leader` moves it on demand. Writers
//! see no failed write, sessions and lock holders keep what they had.

use crate::harness::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use ward_client::{Client, CreateMode, Error};
use ward_testkit::Ensemble;

/// What the writer saw: each write's outcome, and when each acknowledgement came.
#[derive(Default)]
struct Seen {
    acked: Vec<Instant>,
    failed: Vec<Error>,
}

/// One write at a time through `client` until `stop`, as a service using Ward would.
fn writer(client: Client, stop: Arc<AtomicBool>) -> (tokio::task::JoinHandle<Client>, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = seen.clone();
    let task = tokio::spawn(async move {
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) && start.elapsed() < DEADLINE * 4 {
            let write = client.create("/g26/w-", b"x", CreateMode::PersistentSequential);
            let outcome = tokio::time::timeout(DEADLINE, write).await;
            let mut seen = log.lock().expect("seen");
            match outcome {
                Ok(Ok(_)) => seen.acked.push(Instant::now()),
                Ok(Err(e)) => seen.failed.push(e),
                Err(_) => seen.failed.push(Error::ConnectionLoss),
            }
        }
        client
    });
    (task, seen)
}

fn acks(seen: &Mutex<Seen>) -> usize {
    seen.lock().expect("seen").acked.len()
}

/// The longest time between two acknowledgements.
fn longest_gap(seen: &Mutex<Seen>) -> Duration {
    let seen = seen.lock().expect("seen");
    seen.acked.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default()
}

async fn client_of(addrs: &str) -> Client {
    wait_for(&format!("a member of {addrs} takes a session"), DEADLINE, || async {
        Client::builder(addrs).session_timeout(Duration::from_secs(20)).connect().await.ok()
    })
    .await
}

// G26: SIGTERM to the leader of three members, under a writer with one write outstanding
// and a lock holder: the leader hands its leadership to a follower before it stops. No
// write fails, the writer and the holder keep their sessions, and the holder keeps its lock
// with its token, which the new leader still vouches for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_with_sigterm_hands_over_and_no_write_fails() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let rest: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
        // The writer starts at the leader, the member stopped.
        let addrs: Vec<String> =
            std::iter::once(leader).chain(rest.iter().copied()).map(|id| ensemble.addr(id)).collect();
        let client = client_of(&addrs.join(",")).await;
        client.create("/g26", b"", CreateMode::Persistent).await.expect("create /g26");
        let holder = client_of(&addrs.join(",")).await;
        let guard = holder.lock("/g26-lock").await.expect("lock");
        let token = guard.fencing_token();
        let (writer_session, holder_session) = (client.session_id(), holder.session_id());

        let stop = Arc::new(AtomicBool::new(false));
        let (task, seen) = writer(client, stop.clone());
        wait_until("writes are acknowledged", DEADLINE, || async { acks(&seen) >= 50 }).await;
        let before = acks(&seen);
        let at = Instant::now();
        let status = tokio::task::block_in_place(|| ensemble.member(leader).terminate());
        println!("leader {leader} stopped ({status}) {:?} after SIGTERM", at.elapsed());
        let next = ensemble.leader(&rest).await;
        wait_until("writes go on after the stop", DEADLINE, || async { acks(&seen) >= before + 50 }).await;
        stop.store(true, Ordering::Relaxed);
        let client = within("the writer stops", DEADLINE, task).await.expect("writer task");

        println!("leader {leader} -> {next}: longest gap between acknowledged writes {:?}", longest_gap(&seen));
        assert!(
            ensemble.log_tail(leader).contains("leadership handed over"),
            "the stopped leader handed its leadership over:\n{}",
            ensemble.log_tail(leader)
        );
        let failed = std::mem::take(&mut seen.lock().expect("seen").failed);
        assert!(failed.is_empty(), "writes failed across the hand-over: {failed:?}");
        assert_eq!(client.session_id(), writer_session, "the writer's session");
        assert_eq!(holder.session_id(), holder_session, "the holder's session");
        assert!(!guard.is_lost(), "the holder lost its lock");
        holder.check_fence(guard.path(), token).await.expect("the new leader vouches for the holder's token");
        guard.unlock().await.expect("unlock");
        client.close().await.expect("close");
        holder.close().await.expect("close");
    })
    .await
}

// G26: `ward members transfer-leader ID` hands the leadership to member ID and says so; the
// ensemble then answers with that leader, and without an ID the most up-to-date follower
// takes it. A client's session and its writes carry on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_transfer_leader_moves_the_leadership_on_demand() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let target = ensemble.ids().into_iter().find(|id| *id != leader).expect("a follower");
        let client = client_of(&ensemble.connect_string()).await;
        client.create("/g26-demand", b"", CreateMode::Persistent).await.expect("create");
        let session = client.session_id();

        let out = run_cli(&ensemble.addr(leader), &["members", "transfer-leader", &target.to_string()]).await.success();
        assert_eq!(out.stdout.trim(), format!("member {target} leads"));
        assert_eq!(ensemble.leader(&[]).await, target, "the ensemble's leader after the transfer");

        let moved = within("a transfer to the most up-to-date follower", DEADLINE, client.transfer_leader(None))
            .await
            .expect("transfer without an id");
        assert_ne!(moved, target, "a follower took it");
        assert_eq!(ensemble.leader(&[]).await, moved);

        client.create("/g26-demand/after", b"", CreateMode::Persistent).await.expect("a write after both transfers");
        assert_eq!(client.session_id(), session, "the client's session");
        client.close().await.expect("close");
    })
    .await
}

// docs/console.md, "Views": while the leader hands its leadership over, the console's
// `/api/ensemble` on it names the member it hands to, and no longer once the transfer is
// over. Held here by holding back what the leader sends the target, which must have the
// leader's whole log before it is asked to stand (the leader waits up to 5 s for that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_says_the_leader_is_handing_over_while_it_does() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let target = ensemble.ids().into_iter().find(|id| *id != leader).expect("a follower");
        let client = client_of(&ensemble.addr(leader)).await;
        ensemble.hold(leader, target);
        // Committed with the other follower; the target does not have it yet.
        client.create("/handing-over", b"", CreateMode::Persistent).await.expect("create");
        let addr = ensemble.addr(leader);
        let transfer =
            tokio::spawn(async move { run_cli(&addr, &["members", "transfer-leader", &target.to_string()]).await });
        let admin = ensemble.admin_addr(leader);
        let handing = || async move { ensemble_view(admin).await.map(|view| view["handing_over_to"].clone()) };
        let to_target = || async move { handing().await.filter(|to| *to == target) };
        wait_for("the console names the member the leader hands over to", DEADLINE, to_target).await;
        ensemble.release(leader, target);
        transfer.await.expect("the transfer's CLI");
        let done = || async move { handing().await.filter(serde_json::Value::is_null) };
        wait_for("the console no longer says the leader is handing over", DEADLINE, done).await;
        client.close().await.expect("close");
    })
    .await
}
