//! Membership changes while serving: a member added (caught up from a snapshot) and the
//! leader removed while writers run, and a five-member ensemble losing two members.

use crate::harness::*;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::{Client, CreateMode, MemberInfo, MemberRole};
use ward_testkit::{serial, Ensemble};

/// Snapshots (and log purges) this often: a newcomer cannot be caught up from the log.
const SNAPSHOT_EVERY: &str = "50";
/// Member 4's lag (in log entries) that counts as caught up while the writers go on.
const SMALL_LAG: u64 = 20;

/// An acknowledged write: a node's path and its data.
type Write = (String, Vec<u8>);

/// Clients creating nodes of their own until stopped, keeping what was acknowledged.
struct Writers {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<Write>>>,
    count: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    async fn start(addrs: &str, n: u64) -> Writers {
        let (stop, count) = (Arc::<AtomicBool>::default(), Arc::<AtomicU64>::default());
        let acked: Arc<Mutex<Vec<Write>>> = Arc::default();
        let client = connect(addrs).await;
        client.create("/g18", b"", CreateMode::Persistent).await.expect("create /g18");
        client.close().await.expect("close");
        let mut tasks = Vec::new();
        for writer in 1..=n {
            let client = connect_with(addrs, Duration::from_secs(10)).await;
            let (stop, acked, count) = (stop.clone(), acked.clone(), count.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    // A new path per attempt: a write of unknown outcome is never sent again.
                    let (path, data) = (format!("/g18/w{writer}-{i}"), format!("{writer}:{i}").into_bytes());
                    match timeout(Duration::from_secs(15), client.create(&path, &data, CreateMode::Persistent)).await {
                        Ok(Ok(_)) => {
                            acked.lock().expect("acked").push((path, data));
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                        // Not applied, or unknown: this test checks the acknowledged ones.
                        // Paced, because a client that is reconnecting fails at once.
                        _ => tokio::time::sleep(Duration::from_millis(50)).await,
                    }
                }
                let _ = timeout(Duration::from_secs(5), client.close()).await;
            }));
        }
        Writers { stop, acked, count, tasks }
    }

    /// Waits until `n` more writes are acknowledged: the ensemble takes writes.
    async fn progressed(&self, n: u64, while_what: &str) {
        let from = self.count.load(Ordering::Relaxed);
        let what = format!("{n} more writes acknowledged {while_what}");
        wait_until(&what, DEADLINE, || async { self.count.load(Ordering::Relaxed) >= from + n }).await;
    }

    /// Stops the writers and returns every acknowledged write.
    async fn stop(self) -> Vec<Write> {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            within("a writer stops", DEADLINE, task).await.expect("writer task");
        }
        std::mem::take(&mut *self.acked.lock().expect("acked"))
    }
}

/// A client of member `addr` alone (so it is served by that member).
async fn member_client(addr: &str) -> Client {
    // Refused while the member is out of contact with a leader: ask until it is in.
    wait_for(&format!("member {addr} takes a session"), DEADLINE, || async {
        let connecting = Client::builder(addr).connect_timeout(Duration::from_secs(2)).connect();
        timeout(Duration::from_secs(5), connecting).await.ok()?.ok()
    })
    .await
}

/// Through member `addr` alone: `sync`, then every acknowledged write reads back as written.
async fn all_present(addr: &str, acked: &[Write]) {
    let client = member_client(addr).await;
    client.sync("/").await.expect("sync");
    for (path, data) in acked {
        match client.get_data(path).await {
            Ok((read, _)) => assert_eq!(&read, data, "{path} through {addr}"),
            Err(e) => panic!("acknowledged write {path} not readable through {addr}: {e:?}"),
        }
    }
    client.close().await.expect("close");
}

/// Every member in `addrs` takes a write, and after `sync` reads the writes made through
/// all the others.
async fn serve_everywhere(addrs: &[String], tag: &str) {
    let mut clients = Vec::new();
    for (i, addr) in addrs.iter().enumerate() {
        let client = member_client(addr).await;
        let path = format!("/g18/{tag}-through-{i}");
        client.create(&path, addr.as_bytes(), CreateMode::Persistent).await.expect("a write through each member");
        clients.push(client);
    }
    for (client, addr) in clients.iter().zip(addrs) {
        client.sync("/").await.expect("sync");
        for (i, other) in addrs.iter().enumerate() {
            let (data, _) = client.get_data(&format!("/g18/{tag}-through-{i}")).await.expect("a synced read");
            assert_eq!(&data, other.as_bytes(), "{addr} reads the write made through {other}");
        }
    }
    for client in clients {
        client.close().await.expect("close");
    }
}

/// The member list as the leader reached through `addrs` gives it, once `ok` holds for it
/// (bounded by `limit`).
async fn members_until(
    addrs: &str,
    what: &str,
    limit: Duration,
    ok: impl Fn(&[MemberInfo]) -> bool,
) -> Vec<MemberInfo> {
    wait_for(what, limit, || async {
        let client =
            timeout(Duration::from_secs(5), Client::builder(addrs).connect_timeout(Duration::from_secs(2)).connect());
        let client = client.await.ok()?.ok()?;
        let members = timeout(Duration::from_secs(5), client.members()).await.ok().and_then(Result::ok);
        let _ = timeout(Duration::from_secs(5), client.close()).await;
        members.filter(|m| ok(m))
    })
    .await
}

fn role_of(members: &[MemberInfo], id: u64) -> Option<MemberRole> {
    members.iter().find(|m| m.id == id).map(|m| m.role)
}

/// A free port on 127.0.0.1 for member 4's peer listener (bound by it a moment later).
fn free_addr() -> String {
    let probe = TcpListener::bind("127.0.0.1:0").expect("bind a probe port");
    probe.local_addr().expect("probe address").to_string()
}

// G18: while writers run on a three-member ensemble that snapshots every 50 entries (so its
// log no longer starts at the beginning), a fourth member joins as a learner, is caught up
// (from a snapshot: the log it would need is purged) and becomes a voting follower; then the
// leader is removed. A new leader takes over among the rest, writes and synced reads work
// through every remaining member, member 4 included, and member 4 holds every write
// acknowledged during the whole run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_added_from_a_snapshot_and_the_leader_removed_while_writes_run() {
    let _serial = serial().await;
    bounded(async {
        let flags = ["--snapshot-every", SNAPSHOT_EVERY];
        let mut ensemble = Ensemble::start(3, &flags).await;
        ensemble.leader(&[]).await;
        let writers = Writers::start(&ensemble.connect_string(), 3).await;
        // Well past the second snapshot (at about entry 100): each founder then keeps only the 50
        // entries before its snapshot, so the log from entry 1, which the newcomer needs, is
        // gone and it can only be caught up by a snapshot.
        let founders = ensemble.connect_string();
        let members = members_until(&founders, "the founders have applied 160 entries", DEADLINE * 2, |m| {
            m.iter().any(|m| m.role == MemberRole::Leader && m.applied.unwrap_or(0) >= 160)
        })
        .await;
        for id in ensemble.ids() {
            let snapshot = ensemble.member(id).data_dir().join("snapshot");
            wait_until(&format!("member {id} has taken a snapshot"), DEADLINE, || async { snapshot.exists() }).await;
        }
        println!("before the join: {members:?}");

        let peer_addr = free_addr();
        let join = ["--id", "4", "--join", "--peer-listen", &peer_addr, "--snapshot-every", SNAPSHOT_EVERY];
        let mut newcomer = ServerProcess::builder().flags(&join).start();
        let at = Instant::now();
        let admin = connect(&founders).await;
        within("add_member", DEADLINE * 2, admin.add_member(4, &peer_addr)).await.expect("add member 4");
        let added = at.elapsed();
        admin.close().await.expect("close");
        let members = members_until(&founders, "member 4 is a follower with a small lag", DEADLINE, |m| {
            m.iter().any(|m| m.id == 4 && m.role == MemberRole::Follower && m.lag.is_some_and(|l| l <= SMALL_LAG))
        })
        .await;
        println!("member 4 added in {added:?}, caught up in {:?}: {members:?}", at.elapsed());
        writers.progressed(20, "with member 4 voting").await;

        let leader = ensemble.leader(&[]).await;
        let rest: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
        let mut rest_addrs: Vec<String> = rest.iter().map(|&id| ensemble.addr(id)).collect();
        rest_addrs.push(newcomer.addr_str());
        let at = Instant::now();
        // Through a member that stays: the leader's own connections may close as it leaves.
        let admin = connect(&rest_addrs.join(",")).await;
        match within("remove_member", DEADLINE, admin.remove_member(leader)).await {
            Ok(()) | Err(ward_client::Error::ConnectionLoss) => {}
            Err(e) => panic!("remove the leader {leader}: {e:?}"),
        }
        let members = members_until(&rest_addrs.join(","), "a new leader, without the old one", DEADLINE, |m| {
            role_of(m, leader).is_none() && m.iter().any(|m| m.role == MemberRole::Leader) && m.len() == 3
        })
        .await;
        println!("leader {leader} removed; {:?} later: {members:?}", at.elapsed());
        writers.progressed(20, "after the leader's removal").await;
        serve_everywhere(&rest_addrs, "after-removal").await;

        let acked = writers.stop().await;
        println!("{} writes acknowledged in all", acked.len());
        all_present(&newcomer.addr_str(), &acked).await;
        for addr in &rest_addrs {
            all_present(addr, &acked).await;
        }
        newcomer.assert_running();
    })
    .await
}

// G18 (and G14): a five-member ensemble loses two members to kill -9, one of them the
// leader, while writers run: the three survivors elect a leader among themselves, take
// writes and serve synced reads through each of them, and hold every acknowledged write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_members_survive_two_kills() {
    let _serial = serial().await;
    bounded(async {
        let mut ensemble = Ensemble::start(5, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let writers = Writers::start(&ensemble.connect_string(), 3).await;
        writers.progressed(20, "on five members").await;

        let follower = ensemble.ids().into_iter().find(|&id| id != leader).expect("a follower");
        let at = Instant::now();
        ensemble.member(leader).kill9_now();
        ensemble.member(follower).kill9_now();
        let survivors: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader && id != follower).collect();
        let next = ensemble.leader(&survivors).await;
        println!("killed leader {leader} and follower {follower}: {next} answers as leader after {:?}", at.elapsed());
        assert!(survivors.contains(&next));
        writers.progressed(20, "on the three survivors").await;
        println!("writes flowing again {:?} after the kills", at.elapsed());

        let addrs: Vec<String> = survivors.iter().map(|&id| ensemble.addr(id)).collect();
        serve_everywhere(&addrs, "survivors").await;
        let acked = writers.stop().await;
        println!("{} writes acknowledged in all", acked.len());
        for addr in &addrs {
            all_present(addr, &acked).await;
        }
    })
    .await
}
