//! Durability of the real `ward-server` process (G11): SIGKILL at random moments under
//! load, sessions and ephemerals across restarts, restart from a snapshot plus the log tail,
//! and a group-commit figure. Every server here is durable, on its own temporary data
//! directory, and restarted on the same port so that clients reconnect by themselves.
//!
//! The test bodies run one at a time ([`ward_testkit::serial`]): a kill loop and a throughput figure
//! do not share a 2-core machine well.

use futures_util::future::join_all;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use ward_client::{Client, CreateMode, Error, Op, OpResult, SessionState};
use ward_testkit::{
    assert_same_tree, connect_with, seed, serial, tree_digest, wait_for, wait_state, within, Proxy, Rng, ServerProcess,
    DEADLINE,
};

/// A test body that hangs fails with a message instead of stalling the run.
const TEST_DEADLINE: Duration = Duration::from_secs(240);

/// Long enough that no session of these tests expires by accident on a loaded machine.
const LONG_SESSION: Duration = Duration::from_secs(30);

// ---- G11: SIGKILL at random moments while 8 clients write ----

const WRITERS: usize = 8;
const ROUNDS: usize = 20;
/// The kill lands this long (at most) after the writers start: short bursts.
const MAX_BURST_MS: u64 = 300;
/// Bytes of padding each write also sets.
const PAD: usize = 1024;

/// One of the 8 writing clients, and what it knows about its own writes.
///
/// Writer `w` owns `/w{w}`. Its k-th write is one multi: create `a{k}` and `b{k}` (data `k`)
/// and set `last` to `k` at version k-1. It has one write in flight at a time, so after a
/// crash the writes present must be exactly 1..=m with m = the acknowledged count, or one
/// more if the write in flight at the kill (outcome unknown) was applied; both of its nodes or
/// neither; and `last` = m.
struct Writer {
    id: usize,
    client: Client,
    /// Writes 1..=acked are known to be applied.
    acked: u64,
    /// Write `acked + 1` failed with ConnectionLoss: it may or may not have been applied.
    unknown: bool,
    /// Nodes up to this k have had their data and stats checked.
    verified: u64,
    /// The highest zxid of an acknowledged write.
    max_zxid: u64,
    acked_total: u64,
    unknown_total: u64,
    unknown_applied: u64,
}

impl Writer {
    fn dir(&self) -> String {
        format!("/w{}", self.id)
    }

    fn node(&self, kind: char, k: u64) -> String {
        format!("/w{}/{kind}{k:08}", self.id)
    }

    /// Writes until `stop` is set or the connection is lost (the server was killed).
    /// `floor`: the server's last zxid before this burst; every new write must be above it.
    async fn burst(mut self, stop: Arc<AtomicBool>, floor: u64) -> Writer {
        while !stop.load(Ordering::SeqCst) {
            let k = self.acked + 1;
            let data = k.to_string().into_bytes();
            let ops = vec![
                Op::Create { path: self.node('a', k), data: data.clone(), mode: CreateMode::Persistent },
                Op::Create { path: self.node('b', k), data: data.clone(), mode: CreateMode::Persistent },
                Op::SetData { path: format!("{}/last", self.dir()), data, version: Some((k - 1) as i32) },
                // Volume for the log (the tree stays small): segments fill, roll over and are
                // purged during the kills too.
                Op::SetData { path: format!("{}/pad", self.dir()), data: vec![k as u8; PAD], version: None },
            ];
            match self.client.multi(ops).await {
                Ok(results) => {
                    let zxid = match &results[0] {
                        OpResult::Created { stat, .. } => stat.czxid,
                        other => panic!("writer {}: write {k}: unexpected result {other:?}", self.id),
                    };
                    assert!(
                        zxid > floor,
                        "writer {}: write {k} got zxid {zxid}, not above {floor}, the server's zxid before this burst: \
                         the zxid went backwards",
                        self.id
                    );
                    assert!(zxid > self.max_zxid, "writer {}: zxid {zxid} after {}", self.id, self.max_zxid);
                    self.max_zxid = zxid;
                    self.acked = k;
                    self.acked_total += 1;
                }
                Err(Error::ConnectionLoss) => {
                    self.unknown = true;
                    self.unknown_total += 1;
                    break;
                }
                Err(e) => {
                    panic!("writer {} (session {:?}): write {k} failed: {e:?}", self.id, self.client.session_id())
                }
            }
        }
        self
    }

    /// After a restart: exactly the acknowledged writes are there, plus at most the one whose
    /// outcome is unknown, each whole; and the session and its ephemeral survived.
    async fn verify(mut self, round: usize) -> Writer {
        let who = format!("round {round}, writer {}", self.id);
        wait_state(&self.client, SessionState::Connected, DEADLINE).await;
        let ephemeral = self.client.exists(&format!("/eph/w{}", self.id)).await.expect("exists");
        let owner = ephemeral.and_then(|stat| stat.ephemeral_owner);
        assert_eq!(owner, Some(self.client.session_id()), "{who}: the session's ephemeral after the restart");

        let children = self.client.get_children(&self.dir()).await.unwrap_or_else(|e| panic!("{who}: list: {e:?}"));
        let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
        for name in &children {
            let parsed = |prefix: char| -> Option<u64> { name.strip_prefix(prefix)?.parse().ok() };
            match (parsed('a'), parsed('b')) {
                (Some(k), _) => a.insert(k),
                (_, Some(k)) => b.insert(k),
                _ if name == "last" || name == "pad" => true,
                _ => panic!("{who}: unexpected node {name:?}"),
            };
        }
        let m = a.len() as u64;
        let half: Vec<_> = a.symmetric_difference(&b).collect();
        assert!(half.is_empty(), "{who}: half-applied multis (one node of the pair only) for k = {half:?}");
        assert_eq!(a, (1..=m).collect::<BTreeSet<_>>(), "{who}: the writes present have holes");
        assert!(m >= self.acked, "{who}: {} acknowledged writes but only {m} present: lost writes", self.acked);
        let most = self.acked + u64::from(self.unknown);
        assert!(m <= most, "{who}: {m} writes present, but only {} acknowledged (+{})", self.acked, self.unknown as u8);
        if self.unknown && m > self.acked {
            self.unknown_applied += 1;
        }

        let (last, last_stat) = self.client.get_data(&format!("{}/last", self.dir())).await.expect("get last");
        assert_eq!(String::from_utf8_lossy(&last), m.to_string(), "{who}: `last` does not match the writes present");
        assert_eq!(last_stat.version as u64, m, "{who}: `last` version");
        assert!(last_stat.mzxid >= self.max_zxid, "{who}: `last` mzxid {} < acked {}", last_stat.mzxid, self.max_zxid);
        let (pad, pad_stat) = self.client.get_data(&format!("{}/pad", self.dir())).await.expect("get pad");
        assert_eq!((pad_stat.version as u64, pad_stat.mzxid), (m, last_stat.mzxid), "{who}: `pad` set by write {m}");
        if m > 0 {
            assert_eq!(pad, vec![m as u8; PAD], "{who}: `pad` data");
        }

        // Every node new since the last check: its data, and one zxid per multi.
        let reads = (self.verified + 1..=m).map(|k| {
            let client = &self.client;
            let (pa, pb) = (self.node('a', k), self.node('b', k));
            async move { (k, client.get_data(&pa).await, client.get_data(&pb).await) }
        });
        for (k, ra, rb) in join_all(reads).await {
            let ((da, sa), (db, sb)) = (ra.expect("read a"), rb.expect("read b"));
            assert_eq!((da, db), (k.to_string().into_bytes(), k.to_string().into_bytes()), "{who}: data of write {k}");
            assert_eq!(sa.czxid, sb.czxid, "{who}: the two nodes of write {k} were not created by one multi");
            if k == m {
                assert_eq!(sa.czxid, last_stat.mzxid, "{who}: write {m} set `last` in the same multi");
            }
        }
        self.max_zxid = self.max_zxid.max(last_stat.mzxid);
        self.verified = m;
        self.acked = m;
        self.unknown = false;
        self
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_loses_no_acknowledged_write() {
    let _serial = serial().await;
    let seed = seed();
    println!("seed {seed} (WARD_TEST_SEED={seed} repeats the kill moments)");
    within("the test", TEST_DEADLINE, async {
        let mut rng = Rng::new(seed);
        let started = Instant::now();
        // Frequent snapshots, so that some kills land while one is written or the log purged.
        let mut server = ServerProcess::start_with(&["--snapshot-every", "64"]);
        let addr = server.addr_str();
        let checker = connect_with(&addr, LONG_SESSION).await;
        checker.create("/eph", b"", CreateMode::Persistent).await.expect("create /eph");
        let mut writers = Vec::new();
        for id in 0..WRITERS {
            let client = connect_with(&addr, LONG_SESSION).await;
            client.create(&format!("/w{id}"), b"", CreateMode::Persistent).await.expect("create dir");
            client.create(&format!("/w{id}/last"), b"0", CreateMode::Persistent).await.expect("create last");
            client.create(&format!("/w{id}/pad"), b"", CreateMode::Persistent).await.expect("create pad");
            client.create(&format!("/eph/w{id}"), b"", CreateMode::Ephemeral).await.expect("create ephemeral");
            writers.push(Writer {
                id,
                client,
                acked: 0,
                unknown: false,
                verified: 0,
                max_zxid: 0,
                acked_total: 0,
                unknown_total: 0,
                unknown_applied: 0,
            });
        }
        let mut floor = checker.server_stats().await.expect("stats").last_zxid;
        let mut restart_time = Duration::ZERO;
        for round in 1..=ROUNDS {
            let stop = Arc::new(AtomicBool::new(false));
            let tasks: Vec<_> =
                writers.drain(..).map(|w| tokio::spawn(w.burst(Arc::clone(&stop), floor))).collect();
            let delay = rng.below(MAX_BURST_MS + 1);
            // Not a synchronisation: the random moment of the kill.
            tokio::time::sleep(Duration::from_millis(delay)).await;
            server.kill9_now();
            stop.store(true, Ordering::SeqCst);
            let t = Instant::now();
            // Now and then, a crash in the middle of the next startup as well.
            let startup_crash = (rng.below(4) == 0).then(|| Duration::from_millis(rng.below(120)));
            if let Some(after) = startup_crash {
                tokio::task::block_in_place(|| server.crash_during_startup(after));
            }
            server.restart_now();
            restart_time += t.elapsed();
            for task in tasks {
                writers.push(within("a writer to stop", DEADLINE, task).await.expect("writer task"));
            }
            let verified = join_all(writers.drain(..).map(|w| w.verify(round))).await;
            writers = verified;

            wait_state(&checker, SessionState::Connected, DEADLINE).await;
            let stats = checker.server_stats().await.expect("stats");
            let acked_max = writers.iter().map(|w| w.max_zxid).max().unwrap_or(0);
            assert!(stats.last_zxid >= floor, "round {round}: zxid went backwards: {} < {floor}", stats.last_zxid);
            assert!(stats.last_zxid >= acked_max, "round {round}: zxid {} < acknowledged {acked_max}", stats.last_zxid);
            let crash = startup_crash.map(|d| format!(", and {} ms into the next startup", d.as_millis()));
            println!(
                "round {round:2}: kill after {delay:3} ms{}; writes present {:6}; unknown outcomes {:3} ({} applied); \
                 zxid {} -> {}",
                crash.unwrap_or_default(),
                writers.iter().map(|w| w.acked).sum::<u64>(),
                writers.iter().map(|w| w.unknown_total).sum::<u64>(),
                writers.iter().map(|w| w.unknown_applied).sum::<u64>(),
                floor,
                stats.last_zxid,
            );
            floor = stats.last_zxid;
        }
        // Every round checked that each writer's session survived (its ephemeral, still owned
        // by it); none expired since.
        assert!(writers.iter().all(|w| w.client.state() == SessionState::Connected), "every writer kept its session");
        let acked: u64 = writers.iter().map(|w| w.acked_total).sum();
        let unknown: u64 = writers.iter().map(|w| w.unknown_total).sum();
        let applied: u64 = writers.iter().map(|w| w.unknown_applied).sum();
        println!(
            "{ROUNDS} SIGKILLs: {acked} writes acknowledged, 0 lost; {unknown} with unknown outcome ({applied} applied, \
             each whole); mean restart {:?}; whole test {:?}",
            restart_time / ROUNDS as u32,
            started.elapsed()
        );
        let log_files = std::fs::read_dir(server.data_dir().join("log")).expect("log dir").count();
        let first_segment = server.data_dir().join("log").join("00000000000000000001.wal");
        println!(
            "data dir: snapshot {}, first log segment {}, {log_files} files in log/",
            if server.data_dir().join("snapshot").exists() { "present" } else { "absent" },
            if first_segment.exists() { "present" } else { "purged" },
        );
        for w in &writers {
            w.client.close().await.expect("close");
        }
        checker.close().await.expect("close");
    })
    .await;
}

// ---- G7, G11: sessions and ephemerals across a restart ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_keeps_its_session_and_ephemerals_across_a_quick_restart() {
    let _serial = serial().await;
    within("the test", TEST_DEADLINE, async {
        let mut server = ServerProcess::start();
        let addr = server.addr_str();
        let client = connect_with(&addr, Duration::from_secs(10)).await;
        assert_eq!(client.session_timeout(), Duration::from_secs(10));
        let session = client.session_id();
        client.create("/svc", b"", CreateMode::Persistent).await.expect("create /svc");
        client.create("/svc/member", b"me", CreateMode::Ephemeral).await.expect("create ephemeral");
        let first = client.create("/svc/seq-", b"", CreateMode::PersistentSequential).await.expect("sequential");
        let zxid_before = client.server_stats().await.expect("stats").last_zxid;

        server.kill9_now();
        wait_state(&client, SessionState::Disconnected, DEADLINE).await;
        let down = Instant::now();
        server.restart_now();
        wait_state(&client, SessionState::Connected, DEADLINE).await;
        println!("SIGKILL to reconnected: {:?} (session timeout 10 s)", down.elapsed());

        assert_eq!(client.session_id(), session);
        let stat = client.exists("/svc/member").await.expect("exists").expect("the ephemeral survived the restart");
        assert_eq!(stat.ephemeral_owner, Some(session), "still owned by the same session");
        let (data, _) = client.get_data("/svc/member").await.expect("get");
        assert_eq!(data, b"me");
        // Sequence counters and the zxid come back too.
        let second = client.create("/svc/seq-", b"", CreateMode::PersistentSequential).await.expect("sequential");
        let number = |p: &str| -> u64 { p.rsplit('-').next().and_then(|n| n.parse().ok()).expect("sequence number") };
        assert_eq!(number(&second), number(&first) + 1, "{first} then {second}");
        let stats = client.server_stats().await.expect("stats");
        assert!(stats.last_zxid > zxid_before, "zxid {} after the restart, {zxid_before} before", stats.last_zxid);

        // The session is the same one on the server: closing it deletes the ephemeral.
        let observer = connect_with(&addr, LONG_SESSION).await;
        assert!(observer.exists("/svc/member").await.expect("exists").is_some());
        client.close().await.expect("close");
        assert_eq!(observer.exists("/svc/member").await.expect("exists"), None, "closed: the ephemeral is gone");
        observer.close().await.expect("close");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_long_outage_returning_sessions_live_and_absent_ones_expire_one_timeout_after_restart() {
    let _serial = serial().await;
    within("the test", TEST_DEADLINE, async {
        let timeout = Duration::from_secs(4);
        let mut server = ServerProcess::start_with(&["--min-session-timeout-ms", "1000"]);
        let addr = server.addr_str();
        // `lost` reaches the server only through a proxy, which is cut for good below.
        let proxy = Proxy::start(server.addr()).await;
        let lost = connect_with(&proxy.addr_str(), timeout).await;
        let back = connect_with(&addr, timeout).await;
        assert_eq!((lost.session_timeout(), back.session_timeout()), (timeout, timeout));
        lost.create("/lost", b"", CreateMode::Ephemeral).await.expect("create");
        back.create("/back", b"", CreateMode::Ephemeral).await.expect("create");

        proxy.isolate();
        wait_state(&lost, SessionState::Disconnected, DEADLINE).await;
        server.kill9_now();
        wait_state(&back, SessionState::Disconnected, DEADLINE).await;
        // The scenario, not a synchronisation: the server stays down longer than the timeout.
        tokio::time::sleep(timeout + Duration::from_secs(1)).await;
        server.restart_now();
        let restarted = Instant::now();

        // Sessions come back with a fresh full timeout: right after the restart, the absent
        // client's ephemeral is still there. (Checked only if this read is quick enough that
        // the answer cannot depend on the machine's load.)
        let checker = connect_with(&addr, LONG_SESSION).await;
        let seen = checker.exists("/lost").await.expect("exists");
        let at = restarted.elapsed();
        if at < timeout / 2 {
            let owner = seen.and_then(|s| s.ephemeral_owner);
            assert_eq!(owner, Some(lost.session_id()), "the absent session's ephemeral {at:?} after the restart");
        } else {
            println!("note: first read {at:?} after the restart; not checking that /lost was still there");
        }

        // The client that comes back keeps its session, although the outage was longer than
        // its timeout.
        wait_state(&back, SessionState::Connected, DEADLINE).await;
        let stat = back.exists("/back").await.expect("exists").expect("the returning client's ephemeral");
        assert_eq!(stat.ephemeral_owner, Some(back.session_id()));

        // The absent one expires one timeout after the restart.
        wait_for("the absent session's ephemeral is deleted", DEADLINE, || async {
            checker.exists("/lost").await.expect("exists").is_none().then_some(())
        })
        .await;
        println!(
            "absent session's ephemeral deleted {:?} after the restart (timeout {timeout:?})",
            restarted.elapsed()
        );
        let stat = back.exists("/back").await.expect("exists").expect("the returning client's ephemeral stays");
        assert_eq!(stat.ephemeral_owner, Some(back.session_id()));
        assert_eq!(back.state(), SessionState::Connected);

        // When the absent client finally gets through, it learns its session is over.
        proxy.unblock();
        wait_state(&lost, SessionState::Expired, DEADLINE).await;
        assert_eq!(lost.exists("/").await.err(), Some(Error::SessionExpired));

        back.close().await.expect("close");
        assert_eq!(checker.exists("/back").await.expect("exists"), None);
        checker.close().await.expect("close");
    })
    .await;
}

// ---- G11: snapshots, purge, restart from snapshot + tail ----

/// A writer's mix of operations; about half carry 1 KiB so the log fills segments quickly.
async fn mixed_write(client: &Client, w: usize, i: u64) {
    let dir = format!("/s/w{w}");
    let big = vec![(i % 251) as u8; 1024];
    let result = match i % 6 {
        0 => client.create(&format!("{dir}/n{i}"), &i.to_le_bytes(), CreateMode::Persistent).await.map(drop),
        1 => client.set_data(&format!("{dir}/big"), &big, None).await.map(drop),
        2 => client.create(&format!("{dir}/q-"), b"q", CreateMode::PersistentSequential).await.map(drop),
        3 => client.delete(&format!("{dir}/n{}", i - 3), None).await,
        4 => client
            .multi(vec![
                Op::Create { path: format!("{dir}/m{i}"), data: vec![1, 2, 3], mode: CreateMode::Persistent },
                Op::SetData { path: format!("{dir}/big"), data: big, version: None },
            ])
            .await
            .map(drop),
        _ => client.set_data(&format!("{dir}/big"), &big, None).await.map(drop),
    };
    result.unwrap_or_else(|e| panic!("writer {w}, op {i}: {e:?}"));
}

/// The tree, plus the server's zxid, node and session counts.
async fn full_digest(client: &Client) -> (Vec<(String, Vec<u8>, ward_client::Stat)>, (u64, u64, u64)) {
    let tree = tree_digest(client).await.expect("walk the tree");
    let s = client.server_stats().await.expect("stats");
    (tree, (s.last_zxid, s.znodes, s.sessions))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_from_snapshot_and_log_tail_gives_the_same_tree() {
    let _serial = serial().await;
    within("the test", TEST_DEADLINE, async {
        let started = Instant::now();
        let snapshot_every = 200;
        let mut server = ServerProcess::start_with(&["--snapshot-every", &snapshot_every.to_string()]);
        let addr = server.addr_str();
        let data_dir = server.data_dir().to_path_buf();
        let first_segment = data_dir.join("log").join("00000000000000000001.wal");
        let snapshot = data_dir.join("snapshot");

        let reader = connect_with(&addr, LONG_SESSION).await;
        let owner = connect_with(&addr, LONG_SESSION).await;
        owner.create("/s", b"root", CreateMode::Persistent).await.expect("create /s");
        for i in 0..5 {
            owner.create(&format!("/s/eph{i}"), b"e", CreateMode::Ephemeral).await.expect("ephemeral");
            owner.create("/s/eseq-", b"e", CreateMode::EphemeralSequential).await.expect("ephemeral sequential");
        }

        // Write until a snapshot exists and the first segment was purged, then a little more
        // so that the log has a tail past the snapshot.
        let purged = Arc::new(AtomicBool::new(false));
        let monitor = {
            let purged = Arc::clone(&purged);
            let (snapshot, first_segment) = (snapshot.clone(), first_segment.clone());
            tokio::spawn(async move {
                while !snapshot.exists() || first_segment.exists() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                purged.store(true, Ordering::SeqCst);
            })
        };
        let mut tasks = Vec::new();
        for w in 0..4 {
            let client = connect_with(&addr, LONG_SESSION).await;
            client.create(&format!("/s/w{w}"), b"", CreateMode::Persistent).await.expect("dir");
            client.create(&format!("/s/w{w}/big"), b"", CreateMode::Persistent).await.expect("big");
            let purged = Arc::clone(&purged);
            tasks.push(tokio::spawn(async move {
                let mut i = 0;
                let mut after = 0;
                while after < 30 {
                    mixed_write(&client, w, i).await;
                    i += 1;
                    if purged.load(Ordering::SeqCst) {
                        after += 1;
                    }
                    assert!(i < 40_000, "no snapshot and purge after {i} writes of writer {w}");
                }
                client.close().await.expect("close");
                i
            }));
        }
        let mut writes = 0;
        for task in tasks {
            writes += within("the writers", Duration::from_secs(180), task).await.expect("writer");
        }
        monitor.abort();
        let segments = std::fs::read_dir(data_dir.join("log")).expect("log dir").count();
        println!(
            "{writes} writes in {:?}; snapshot of {} bytes; first segment purged; {segments} files in log/",
            started.elapsed(),
            std::fs::metadata(&snapshot).expect("snapshot").len(),
        );

        let before = full_digest(&reader).await;
        server.kill9_now();
        server.restart_now();
        wait_state(&reader, SessionState::Connected, DEADLINE).await;
        wait_state(&owner, SessionState::Connected, DEADLINE).await;
        let after = full_digest(&reader).await;
        assert_same_tree(&before.0, &after.0, "restart from snapshot + tail");
        assert_eq!(before.1, after.1, "(last zxid, znodes, sessions) after the restart");
        assert!(snapshot.exists() && !first_segment.exists(), "the restart did not bring back purged segments");
        println!("after SIGKILL + restart: the same {} nodes, zxid {}", after.0.len(), after.1 .0);

        // A tail that is certainly only in the log: write until a new snapshot appears, then a
        // few writes (far fewer than --snapshot-every), and check that no snapshot came after
        // them. Then another SIGKILL and the same check.
        let snapshot_bytes = || std::fs::read(&snapshot).expect("read snapshot");
        let mut tail = None;
        for attempt in 1..=20 {
            let base = snapshot_bytes();
            let mut n = 0u64;
            while snapshot_bytes() == base {
                reader.set_data("/s", &n.to_be_bytes(), None).await.expect("set");
                n += 1;
                assert!(n < 20 * snapshot_every, "no new snapshot after {n} writes");
            }
            let taken = snapshot_bytes();
            for _ in 0..20 {
                reader.create("/s/tail-", b"t", CreateMode::PersistentSequential).await.expect("create");
            }
            if snapshot_bytes() == taken {
                tail = Some((attempt, n));
                break;
            }
        }
        let (attempt, n) = tail.expect("20 writes right after a snapshot stayed out of every snapshot");
        println!("tail: a new snapshot after {n} writes (attempt {attempt}), then 20 writes only in the log");
        let before = full_digest(&reader).await;
        server.kill9_now();
        server.restart_now();
        wait_state(&reader, SessionState::Connected, DEADLINE).await;
        let after = full_digest(&reader).await;
        assert_same_tree(&before.0, &after.0, "second restart");
        assert_eq!(before.1, after.1, "(last zxid, znodes, sessions) after the second restart");
        let (_, stat) = reader.create_with_stat("/s/next", b"", CreateMode::Persistent).await.expect("write");
        assert_eq!(stat.czxid, after.1 .0 + 1, "the next write takes the next zxid");

        wait_state(&owner, SessionState::Connected, DEADLINE).await;
        owner.close().await.expect("close");
        assert!(reader.get_children("/s").await.expect("list").iter().all(|n| !n.starts_with("e")));
        reader.close().await.expect("close");
        println!("whole test {:?}", started.elapsed());
    })
    .await;
}

// ---- Measured only (docs/benchmarks.md): group commit with 64 concurrent writers ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commit_with_64_writers_prints_writes_per_fsync() {
    let _serial = serial().await;
    within("the test", TEST_DEADLINE, async {
        const CLIENTS: usize = 64;
        const EACH: usize = 100;
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let probe = connect_with(&addr, LONG_SESSION).await;
        probe.create("/g", b"", CreateMode::Persistent).await.expect("create /g");
        let clients = join_all((0..CLIENTS).map(|_| connect_with(&addr, LONG_SESSION))).await;
        let before = probe.server_stats().await.expect("stats");
        let start = Instant::now();
        let tasks: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(c, client)| {
                let client = client.clone();
                tokio::spawn(async move {
                    for i in 0..EACH {
                        client
                            .create(&format!("/g/c{c}-{i}"), &[7; 100], CreateMode::Persistent)
                            .await
                            .unwrap_or_else(|e| panic!("writer {c}, write {i}: {e:?}"));
                    }
                })
            })
            .collect();
        for task in tasks {
            within("the writers", Duration::from_secs(120), task).await.expect("writer");
        }
        let elapsed = start.elapsed().as_secs_f64();
        let after = probe.server_stats().await.expect("stats");
        let writes = (CLIENTS * EACH) as f64;
        let fsyncs = (after.log_fsyncs - before.log_fsyncs) as f64;
        assert!(fsyncs > 0.0, "a durable server counts its fsyncs");
        assert_eq!(after.znodes - before.znodes, (CLIENTS * EACH) as u64);
        let build = if cfg!(debug_assertions) { "debug" } else { "release" };
        println!(
            "group commit, {CLIENTS} writers ({build} build): {writes} acknowledged writes in {elapsed:.2} s = {:.0}/s; \
             {fsyncs} fsyncs = {:.0}/s; writes per fsync {:.1}",
            writes / elapsed,
            fsyncs / elapsed,
            writes / fsyncs
        );
        for client in clients {
            client.close().await.expect("close");
        }
        probe.close().await.expect("close");
    })
    .await;
}

// G11 across a clean stop: with more log since the last snapshot than a restart should
// replay, SIGTERM takes a snapshot before the server exits; the next start loads it, replays
// (next to) nothing, and serves the same tree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_takes_a_snapshot_of_a_long_log_and_the_restart_serves_the_same_tree() {
    let _serial = serial().await;
    within("the test", TEST_DEADLINE, async {
        // Segments of the default size: no snapshot is due by size within these writes.
        let mut server = ServerProcess::start_with(&["--segment-mb", "64"]);
        let client = connect_with(&server.addr_str(), LONG_SESSION).await;
        client.create("/big", b"", CreateMode::Persistent).await.expect("create /big");
        // About 6 MiB of log: more than a clean stop lets a restart replay.
        let data = vec![7u8; 1024];
        for batch in 0..100 {
            let paths: Vec<String> = (0..60).map(|i| format!("/big/n{batch:03}-{i:02}")).collect();
            let creates = paths.iter().map(|path| client.create(path, &data, CreateMode::Persistent));
            for created in join_all(creates).await {
                created.expect("create");
            }
        }
        let before = tree_digest(&client).await.expect("the tree before");
        drop(client);
        assert!(server.terminate().success(), "a clean stop exits 0");
        let stop = server.log_tail();
        assert!(stop.contains("taking a snapshot before stopping"), "no snapshot at the stop:\n{stop}");
        assert!(stop.contains("snapshot written"), "the snapshot at the stop was not written:\n{stop}");
        server.restart();
        let client = connect_with(&server.addr_str(), LONG_SESSION).await;
        let after = tree_digest(&client).await.expect("the tree after");
        assert_same_tree(&before, &after, "after a clean stop and a start from its snapshot");
    })
    .await;
}
