//! Observers (G31): a member added with `ward members add --observer` (`Client::add_observer`)
//! is an openraft learner that is never promoted. Through a client connected to it alone it
//! serves reads, forwards writes, fires watches, keeps sessions (and their ephemerals) and
//! hands over locks; `ward members` lists it as a `learner` and ZooKeeper's four-letter words
//! call it an `observer`. It counts toward no quorum: the voters commit without it, and with
//! it alive but two of three voters gone nothing commits. A lock holder on a cut-off observer
//! learns `lost()` before a contender on the voters is granted (G16).

// G31: an observer serves reads, watches, sessions and lock waits and forwards writes, and
// counts toward no quorum; its clients' sessions and locks keep every promise of G13–G19 (a
// holder on a cut-off observer sees lost() before anyone else is granted its lock: G16).

use crate::harness::*;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::{Client, CreateMode, Error, EventKind, MemberRole, SessionState};
use ward_testkit::zk::raw::four_letters;
use ward_testkit::{wait_state, Ensemble};

/// The member added as an observer.
const OBSERVER: u64 = 4;
/// The voting members.
const VOTERS: [u64; 3] = [1, 2, 3];
/// How long a write is given, with two of three voters gone, to be (wrongly) acknowledged.
const REFUSED_WITHIN: Duration = Duration::from_secs(10);

/// How member 4 is added as an observer.
#[derive(Clone, Copy, Debug)]
enum AddBy {
    /// `ward members add --observer 4=PEER_ADDR`.
    Cli,
    /// `Client::add_observer(4, PEER_ADDR)`.
    Client,
}

/// The client addresses of `ids`, as a connect string.
fn addrs_of(ensemble: &Ensemble, ids: &[u64]) -> String {
    ids.iter().map(|&id| ensemble.addr(id)).collect::<Vec<_>>().join(",")
}

/// The member list as a member of `addrs` gives it, within short bounds; `None` if none
/// answered.
async fn listed(addrs: &str) -> Option<Vec<ward_client::MemberInfo>> {
    let admin = try_connect(addrs, Duration::from_secs(10)).await?;
    let members = timeout(Duration::from_secs(5), admin.members()).await.ok().and_then(Result::ok);
    let _ = timeout(Duration::from_secs(5), admin.close()).await;
    members
}

/// Three voters (1, 2, 3) and member 4 as an observer, every member's peer traffic through
/// the ensemble's proxies. The harness wires a member's links when the ensemble starts, so
/// four members are started, member 4 is removed, started again empty with `--join` (a
/// newcomer on the same ports, [`Ensemble::try_rejoin`]) and added back as an observer.
async fn three_voters_and_an_observer(by: AddBy) -> Ensemble {
    let mut ensemble = Ensemble::start(4, &[]).await;
    ensemble.leader(&[]).await;
    let voters = addrs_of(&ensemble, &VOTERS);
    // Through the voters (member 4 may lead: its own connections may close as it leaves).
    // Asked again until the voters list it no longer, under a leader among them.
    wait_until("member 4 is removed", DEADLINE * 2, || async {
        let members = listed(&voters).await;
        match members {
            Some(m) if m.iter().all(|m| m.id != OBSERVER) && m.iter().any(|m| m.role == MemberRole::Leader) => true,
            Some(m) if m.iter().any(|m| m.id == OBSERVER) => {
                if let Some(admin) = try_connect(&voters, Duration::from_secs(10)).await {
                    let _ = timeout(Duration::from_secs(10), admin.remove_member(OBSERVER)).await;
                    let _ = timeout(Duration::from_secs(5), admin.close()).await;
                }
                false
            }
            _ => false,
        }
    })
    .await;
    tokio::task::block_in_place(|| ensemble.try_rejoin(OBSERVER)).expect("member 4 restarted empty with --join");
    // An observer is refused until the leader has heard every member say release level 3
    // (docs/operations.md, "Upgrading"): wait for that rather than retry a refusal.
    wait_until("the leader has heard every member's release level", DEADLINE, || async {
        let Ok(leader) = ensemble.try_leader(&VOTERS, Duration::from_secs(5)).await else { return false };
        figure_of(&ensemble, leader, "ensemble_level").await.is_some_and(|level| level >= 3)
    })
    .await;
    let peer = ensemble.peer_addr(OBSERVER).to_string();
    let at = Instant::now();
    match by {
        AddBy::Cli => {
            let spec = format!("{OBSERVER}={peer}");
            run_cli(&voters, &["members", "add", "--observer", &spec]).await.success();
        }
        AddBy::Client => {
            let admin = connect_serving(&voters, Duration::from_secs(10)).await;
            within("add_observer", DEADLINE * 2, admin.add_observer(OBSERVER, &peer)).await.expect("add_observer");
            admin.close().await.expect("close");
        }
    }
    println!("member 4 added as an observer ({by:?}) in {:?}", at.elapsed());
    ensemble
}

/// `srvr`'s and `stat`'s `Mode:` and `mntr`'s `zk_server_state` on member `id`'s ZooKeeper
/// port, when all three agree.
async fn zk_mode(ensemble: &Ensemble, id: u64) -> Option<String> {
    let zk = ensemble.zk_addr(id);
    let (srvr, stat, mntr) =
        (four_letters(&zk, b"srvr").await, four_letters(&zk, b"stat").await, four_letters(&zk, b"mntr").await);
    let mode = |text: &str| text.lines().find_map(|l| l.strip_prefix("Mode: ")).map(|m| m.trim().to_owned());
    let state = mntr.lines().find_map(|l| l.strip_prefix("zk_server_state\t")).map(|m| m.trim().to_owned());
    mode(&srvr).filter(|m| Some(m) == mode(&stat).as_ref() && Some(m) == state.as_ref())
}

/// Member `id`'s row of `ward members` asked of the voters' leader, split in columns
/// (ID, PEER ADDRESS, ROLE, APPLIED, LAG, CONTACT...), with the whole listing.
async fn members_rows(ensemble: &Ensemble) -> Option<(Vec<Vec<String>>, String)> {
    let leader = ensemble.try_leader(&VOTERS, DEADLINE).await.ok()?;
    let out = run_cli(&ensemble.addr(leader), &["members"]).await;
    if !out.status.success() {
        return None;
    }
    let rows = out.stdout.lines().skip(1).map(|l| l.split_whitespace().map(str::to_owned).collect()).collect();
    Some((rows, out.stdout))
}

// G31 (and G4, G6, G12, G13, G15): member 4, added with `ward members add --observer`, is
// listed by `ward members` as a learner (the voters as leader and followers) and says
// `observer` in `srvr`, `stat` and `mntr`. A client connected to it alone creates, reads,
// sets and deletes (the writes forwarded: a client of the voters sees them), its data watch
// fires on a change made through a voter, its lock wait is granted when a holder on a voter
// releases, and its ephemeral node lives as long as its session and goes when it closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_is_listed_as_a_learner_and_serves_reads_writes_watches_sessions_and_lock_waits() {
    bounded(async {
        let ensemble = three_voters_and_an_observer(AddBy::Cli).await;

        let (rows, listing) = wait_for("ward members lists member 4 as a reachable learner", DEADLINE, || async {
            let (rows, listing) = members_rows(&ensemble).await?;
            let row = rows.iter().find(|r| r.first().map(String::as_str) == Some("4"))?;
            (row.get(2).map(String::as_str) == Some("learner") && row.get(5).map(String::as_str) == Some("reachable"))
                .then_some((rows, listing))
        })
        .await;
        println!("ward members:\n{listing}");
        assert_eq!(rows.len(), 4, "three voters and the observer:\n{listing}");
        for id in VOTERS {
            let row = rows.iter().find(|r| r.first() == Some(&id.to_string())).expect("a voter's row");
            assert!(
                matches!(row[2].as_str(), "leader" | "follower"),
                "voter {id} is a leader or a follower:\n{listing}"
            );
        }
        let mode =
            wait_for("member 4 says observer on its ZooKeeper port", DEADLINE, || zk_mode(&ensemble, OBSERVER)).await;
        assert_eq!(mode, "observer", "srvr, stat and mntr on the observer's ZooKeeper port");
        for id in VOTERS {
            let mode = wait_for("a voter's mode", DEADLINE, || zk_mode(&ensemble, id)).await;
            assert!(matches!(mode.as_str(), "leader" | "follower"), "voter {id} says {mode}");
        }

        let observer = connect_serving(&ensemble.addr(OBSERVER), Duration::from_secs(20)).await;
        let voters = connect_serving(&addrs_of(&ensemble, &VOTERS), Duration::from_secs(20)).await;
        let members = observer.members().await.expect("members through the observer");
        let role = members.iter().find(|m| m.id == OBSERVER).map(|m| m.role);
        assert_eq!(role, Some(MemberRole::Learner), "the observer's own member list: {members:?}");

        // Create, read, set, read, delete through the observer; each write seen by the voters.
        observer.create("/g31", b"created", CreateMode::Persistent).await.expect("create through the observer");
        assert_eq!(observer.get_data("/g31").await.expect("get").0, b"created", "the observer reads its own write");
        voters.sync("/g31").await.expect("sync");
        assert_eq!(voters.get_data("/g31").await.expect("get through a voter").0, b"created");
        let stat = observer.set_data("/g31", b"set", Some(0)).await.expect("set through the observer");
        assert_eq!(stat.version, 1);
        assert_eq!(observer.get_data("/g31").await.expect("get").0, b"set", "the observer reads its own set");
        voters.sync("/g31").await.expect("sync");
        assert_eq!(voters.get_data("/g31").await.expect("get through a voter").0, b"set");
        observer.create("/g31/child", b"", CreateMode::Persistent).await.expect("create a child");
        assert_eq!(observer.get_children("/g31").await.expect("ls"), ["child"]);
        observer.delete("/g31/child", None).await.expect("delete through the observer");
        assert_eq!(observer.exists("/g31/child").await.expect("exists"), None, "the observer reads its own delete");
        voters.sync("/g31").await.expect("sync");
        assert_eq!(voters.exists("/g31/child").await.expect("exists through a voter"), None);
        assert_eq!(voters.get_data("/g31").await.expect("get").1.num_children, 0);

        // A watch set through the observer fires on a change made through a voter.
        voters.create("/g31-watched", b"0", CreateMode::Persistent).await.expect("create through a voter");
        observer.sync("/g31-watched").await.expect("sync through the observer");
        let (data, _, watch) = observer.get_data_watch("/g31-watched").await.expect("arm a data watch");
        assert_eq!(data, b"0");
        voters.set_data("/g31-watched", b"1", None).await.expect("the watched change, through a voter");
        let event = fired(watch).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeDataChanged, "/g31-watched"));
        assert_eq!(observer.get_data("/g31-watched").await.expect("get").0, b"1", "the change after its event");

        // A lock wait on the observer is granted when the holder, on a voter, releases.
        let held = voters.lock("/g31-lock").await.expect("the holder on the voters");
        let held_token = held.fencing_token();
        let waiting = queue_waiter(&observer, "/g31-lock").await;
        assert!(!waiting.is_finished(), "granted while held");
        held.unlock().await.expect("the holder releases");
        let (_, granted) = within("the observer's waiter is granted", DEADLINE, waiting).await.expect("waiter task");
        assert!(granted.fencing_token() > held_token, "a higher token for the next holder");
        voters.check_fence(granted.path(), granted.fencing_token()).await.expect("the voters vouch for the grant");
        granted.unlock().await.expect("unlock through the observer");

        // An ephemeral node of the observer's session lives as long as it does.
        let session = observer.session_id();
        observer.create("/g31-ephemeral", b"", CreateMode::Ephemeral).await.expect("an ephemeral through the observer");
        voters.sync("/g31-ephemeral").await.expect("sync");
        let (stat, gone) = voters.exists_watch("/g31-ephemeral").await.expect("exists through a voter");
        let owner = stat.expect("the ephemeral, seen by the voters").ephemeral_owner;
        assert_eq!(owner, Some(session), "owned by the observer's session");
        assert_eq!(observer.session_id(), session, "the observer's client kept its session");
        observer.close().await.expect("close the observer's session");
        let event = fired(gone).await;
        assert_eq!((event.kind, event.path.as_str()), (EventKind::NodeDeleted, "/g31-ephemeral"));
        assert_eq!(voters.exists("/g31-ephemeral").await.expect("exists"), None);
        voters.close().await.expect("close");
    })
    .await
}

/// A sequential node under `/g31-quorum` created through `client`, repeated while the answer
/// is "connection lost" or "unavailable" (a repeat at most adds a node): its path.
async fn write(client: &Client, what: &str) -> String {
    let created = answered(what, || client.create("/g31-quorum/w-", what.as_bytes(), CreateMode::PersistentSequential));
    created.await.unwrap_or_else(|e| panic!("{what}: {e:?}"))
}

/// A write through `client` given [`REFUSED_WITHIN`]: `Ok` only if it was acknowledged.
async fn bounded_write(client: &Client) -> Result<String, String> {
    let create = client.create("/g31-quorum/refused-", b"", CreateMode::PersistentSequential);
    match timeout(REFUSED_WITHIN, create).await {
        Ok(Ok(path)) => Ok(path),
        Ok(Err(e)) => Err(format!("{e:?}")),
        Err(_) => Err(format!("no answer within {REFUSED_WITHIN:?}")),
    }
}

// G31 (and G14): the observer counts toward no quorum. With the observer alive, the leader is
// killed with kill -9: the two other voters elect one of themselves and writes go on through
// them and through the observer. The observer is killed too: two voters of three, alone,
// still commit (had the observer a vote, two of four could not). The observer is restarted and
// catches up; a second voter is killed: with one voter of three and the observer running, no
// write through either is acknowledged, and the observer never stands (it still says
// `observer`). The two voters restarted, writes go on, and every acknowledged write reads back
// through the observer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_counts_toward_no_quorum() {
    bounded(async {
        let mut ensemble = three_voters_and_an_observer(AddBy::Client).await;
        let voters = connect_serving(&addrs_of(&ensemble, &VOTERS), Duration::from_secs(30)).await;
        voters.create("/g31-quorum", b"", CreateMode::Persistent).await.expect("create /g31-quorum");
        let observer = connect_serving(&ensemble.addr(OBSERVER), Duration::from_secs(30)).await;
        let mut acked = vec![write(&voters, "through the voters").await];
        acked.push(write(&observer, "through the observer").await);

        let first = ensemble.leader(&VOTERS).await;
        ensemble.member(first).kill9_now();
        let rest: Vec<u64> = VOTERS.into_iter().filter(|&id| id != first).collect();
        let next = ensemble.leader(&rest).await;
        println!("leader {first} killed with the observer alive; member {next} leads");
        assert!(rest.contains(&next), "a voter leads, not the observer");
        acked.push(write(&voters, "through two voters, the observer alive").await);
        acked.push(write(&observer, "through the observer, one voter gone").await);

        ensemble.member(OBSERVER).kill9_now();
        println!("observer killed: two of three voters left, and no observer");
        let two = connect_serving(&addrs_of(&ensemble, &rest), Duration::from_secs(30)).await;
        acked.push(write(&two, "through two voters, the observer gone").await);
        acked.push(write(&voters, "through two voters, the observer gone (the first client)").await);

        ensemble.member(OBSERVER).restart_now();
        let observer = connect_serving(&ensemble.addr(OBSERVER), Duration::from_secs(30)).await;
        answered("a sync through the restarted observer", || observer.sync("/g31-quorum")).await.expect("sync");
        for path in &acked {
            assert!(observer.exists(path).await.expect("exists").is_some(), "{path} through the restarted observer");
        }
        acked.push(write(&observer, "through the restarted observer").await);

        let second = ensemble.leader(&rest).await;
        let last = rest.iter().copied().find(|&id| id != second).expect("the other voter");
        let on_last = connect_serving(&ensemble.addr(last), Duration::from_secs(30)).await;
        ensemble.member(second).kill9_now();
        println!("member {second} killed too: member {last} is the one voter left, the observer runs");
        let (through_observer, through_last) = tokio::join!(bounded_write(&observer), bounded_write(&on_last));
        println!("one voter of three: through the observer {through_observer:?}, through {last} {through_last:?}");
        assert!(through_observer.is_err(), "a write through the observer was acknowledged with one voter of three");
        assert!(through_last.is_err(), "a write through the last voter was acknowledged with one voter of three");
        let mode = wait_for("the observer's mode", DEADLINE, || zk_mode(&ensemble, OBSERVER)).await;
        assert_eq!(mode, "observer", "the observer stood for election");
        ensemble.member(OBSERVER).assert_running();

        ensemble.member(first).restart_now();
        ensemble.member(second).restart_now();
        let leader = ensemble.leader(&VOTERS).await;
        println!("members {first} and {second} restarted; member {leader} leads");
        assert_ne!(leader, OBSERVER);
        let observer = connect_serving(&ensemble.addr(OBSERVER), Duration::from_secs(30)).await;
        acked.push(write(&observer, "through the observer, the voters back").await);
        answered("a sync through the observer", || observer.sync("/g31-quorum")).await.expect("sync");
        for path in &acked {
            assert!(observer.exists(path).await.expect("exists").is_some(), "acknowledged {path} through the observer");
        }
        println!("{} acknowledged writes read back through the observer", acked.len());
        for client in [observer, on_last, two, voters] {
            let _ = timeout(Duration::from_secs(5), client.close()).await;
        }
    })
    .await
}

// G31 with G16: a lock holder connected only to the observer, which is then cut off from
// every voter (its peer links silently partitioned), sees lost() before a waiter on the
// voters is granted the lock, and that grant does come. After healing, the holder's session
// is expired, its token refused, and the observer serves again: a synced read shows the new
// holder's write, and a lock through it is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_on_a_cut_off_observer_sees_lost_before_the_next_grant() {
    bounded(async {
        let ensemble = three_voters_and_an_observer(AddBy::Client).await;
        let voters = addrs_of(&ensemble, &VOTERS);
        let holder = connect_serving(&ensemble.addr(OBSERVER), Duration::from_secs(6)).await;
        let guard = holder.lock("/g31-cut").await.expect("holder lock through the observer");
        let old = guard.fence();
        let waiter = connect_serving(&voters, Duration::from_secs(10)).await;
        waiter.create("/g31-cut-resource", b"", CreateMode::Persistent).await.expect("create the resource");
        let granted = queue_waiter(&waiter, "/g31-cut").await;
        let lost = tokio::spawn(async move {
            guard.lost().await;
            (Instant::now(), guard)
        });
        assert!(!lost.is_finished(), "lost before the cut");

        let cut_at = Instant::now();
        ensemble.isolate(OBSERVER);
        let (granted_at, next) = within("the waiter is granted", DEADLINE, granted).await.expect("waiter task");
        let (lost_at, guard) = within("lost() completes", DEADLINE, lost).await.expect("lost task");
        println!(
            "observer cut off (holder's session timeout 6 s): lost() after {:?}, the waiter granted after {:?}, {:?} \
             apart",
            lost_at - cut_at,
            granted_at - cut_at,
            granted_at.saturating_duration_since(lost_at)
        );
        assert!(lost_at < granted_at, "lost() completed {:?} after the next grant", lost_at - granted_at);
        assert!(guard.is_lost());
        assert!(next.fencing_token() > old.token);

        ensemble.heal();
        // The observer comes back into contact and tells the holder its session ended.
        wait_state(&holder, SessionState::Expired, DEADLINE).await;
        drop(guard);
        let (resource, fence) = ("/g31-cut-resource", next.fence());
        let write = answered("the new holder's write", || waiter.set_data_fenced(&fence, resource, b"next", None));
        write.await.expect("the new holder's write");
        let stale = answered("the old holder's write", || waiter.set_data_fenced(&old, resource, b"old", None)).await;
        assert_eq!(stale, Err(Error::StaleFence), "the cut-off holder's token");
        let back = connect_serving(&ensemble.addr(OBSERVER), Duration::from_secs(10)).await;
        answered("a sync through the healed observer", || back.sync("/")).await.expect("sync");
        let read = answered("a read through the healed observer", || back.get_data(resource)).await;
        assert_eq!(read.expect("read").0, b"next");
        next.unlock().await.expect("unlock");
        let relock = answered("a lock through the healed observer", || back.lock("/g31-cut")).await;
        relock.expect("lock through the healed observer").unlock().await.expect("unlock");
        let _ = back.close().await;
        let _ = waiter.close().await;
    })
    .await
}
