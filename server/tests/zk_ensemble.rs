//! ZooKeeper clients of an ensemble: a kazoo session, its ephemeral node and its kazoo Lock
//! through a kill -9 of the member serving it, the leader; what the four-letter words say of
//! each member.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use ward_client::SessionId;
use ward_testkit::zk::raw::four_letters;
use ward_testkit::zk::{Kazoo, SCRIPT_LIMIT};
use ward_testkit::{bounded, connect, serial, wait_for, within, Ensemble, ServerProcess, DEADLINE};

/// The kazoo scripts.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zk");
const EPHEMERAL: &str = "/g15-ephemeral";
const LOCK_DIR: &str = "/g16-lock";

/// What the script finds after the kill.
const CHECKED: [&str; 8] = [
    "connection lost and resumed: True",
    "session lost: False",
    "same session: True",
    "ephemeral is ours: True",
    "lock acquired: True",
    "lock node is ours: True",
    "contenders: ['kazoo']",
    "checked",
];

/// The script, told when to go on through its stdin; its stdout read line by line on a
/// thread of its own, so that a silent script fails the wait instead of blocking the test.
struct Script {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
}

impl Script {
    fn start(kazoo: &Kazoo, args: &[&str]) -> Script {
        let mut child = kazoo
            .command(SCRIPTS, "ensemble_lock.py", args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ensemble_lock.py");
        let (stdin, stdout) = (child.stdin.take().expect("stdin"), child.stdout.take().expect("stdout"));
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Script { child, stdin, lines }
    }

    async fn line(&mut self, waiting_for: &str) -> String {
        match within(waiting_for, SCRIPT_LIMIT, self.lines.recv()).await {
            Some(line) => line,
            None => panic!("ensemble_lock.py ended ({:?}) before {waiting_for}", self.child.try_wait()),
        }
    }

    /// Every line up to and including `last`.
    async fn lines_until(&mut self, last: &str) -> Vec<String> {
        let mut lines = Vec::new();
        while lines.last().is_none_or(|l| l != last) {
            lines.push(self.line(last).await);
        }
        lines
    }

    fn go_on(&mut self) {
        self.stdin.write_all(b"go on\n").and_then(|()| self.stdin.flush()).expect("write to the script");
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// G15 and G16 for ZooKeeper clients: a kazoo session on a three-member ensemble holds an
// ephemeral node and a kazoo Lock; the leader, the member serving the session, is killed
// with kill -9. kazoo resumes the same session on a survivor; the ephemeral and the lock
// node are still its own and it still holds the lock, while a native Ward client on the
// survivors is refused the lock. Once kazoo releases and closes, the native client gets the
// lock and the ephemeral is gone (G5).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_session_ephemeral_and_lock_survive_a_leader_kill() {
    let Some(kazoo) = Kazoo::find() else { return };
    let _serial = serial().await;
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let rest: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
        // kazoo tries its hosts in order here: it is served by the leader, the member killed.
        let zk_hosts: Vec<String> =
            std::iter::once(leader).chain(rest.iter().copied()).map(|id| ensemble.zk_addr(id)).collect();
        let mut script = Script::start(&kazoo, &[&zk_hosts.join(","), EPHEMERAL, LOCK_DIR]);
        let ready = script.line("ready").await;
        let session = match ready.strip_prefix("ready ").map(str::parse::<u64>) {
            Some(Ok(session)) => SessionId(session),
            _ => panic!("unexpected first line {ready:?}"),
        };

        let at = Instant::now();
        ensemble.member(leader).kill9_now();
        let next = ensemble.leader(&rest).await;
        script.go_on();
        let checked = script.lines_until("checked").await;
        println!(
            "kill -9 of leader {leader}: {next} answers as leader, kazoo served again {:?} after the kill",
            at.elapsed()
        );
        assert_eq!(checked, CHECKED, "what kazoo found after the kill");

        let survivors: Vec<String> = rest.iter().map(|&id| ensemble.addr(id)).collect();
        let native = connect(&survivors.join(",")).await;
        native.sync("/").await.expect("sync");
        let stat = native.exists(EPHEMERAL).await.expect("exists").expect("kazoo's ephemeral on the survivors");
        assert_eq!(stat.ephemeral_owner, Some(session), "the ephemeral's owner");
        let busy = native.try_lock(LOCK_DIR, Duration::from_millis(300)).await.expect("try_lock");
        assert!(busy.is_none(), "G16: a native client got the lock kazoo holds");

        script.go_on();
        assert_eq!(script.line("closed").await, "closed");
        let guard = within("the native lock after kazoo released it", DEADLINE, native.lock(LOCK_DIR))
            .await
            .expect("native lock");
        assert_eq!(native.exists(EPHEMERAL).await.expect("exists"), None, "G5: the closed session's ephemeral");
        guard.unlock().await.expect("unlock");
        native.close().await.expect("close");
    })
    .await
}

// G13: every member serves ZooKeeper clients: a node created through each member's
// ZooKeeper port is read, after `sync`, through every other member's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_clients_write_and_read_through_every_member() {
    let Some(kazoo) = Kazoo::find() else { return };
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        ensemble.leader(&[]).await;
        let hosts: Vec<String> = ensemble.ids().into_iter().map(|id| ensemble.zk_addr(id)).collect();
        let out = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = hosts.iter().map(String::as_str).collect();
            kazoo.run(SCRIPTS, "ensemble_members.py", &args)
        })
        .await
        .expect("kazoo script");
        let want = "member 1 reads 1 2 3\nmember 2 reads 1 2 3\nmember 3 reads 1 2 3\ndone\n";
        assert_eq!(out, want, "ensemble_members.py output");
    })
    .await
}

// G15 for ZooKeeper clients: kazoo's own test_with_bad_sessionid against a three-member
// ensemble. A session id the ensemble never had is answered "expired" (a zero timeout) by
// whichever member kazoo reaches, once that member has caught up with the leader, so kazoo
// starts a new session and connects instead of trying members forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_with_a_session_id_the_ensemble_never_had_gets_a_new_session() {
    let Some(kazoo) = Kazoo::find() else { return };
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        ensemble.leader(&[]).await;
        let hosts: Vec<String> = ensemble.ids().into_iter().map(|id| ensemble.zk_addr(id)).collect();
        let out = tokio::task::spawn_blocking(move || kazoo.run(SCRIPTS, "bad_sessionid.py", &[&hosts.join(",")]))
            .await
            .expect("kazoo script");
        assert_eq!(out, "connected: True\nnew session: True\nwrites: True\n", "bad_sessionid.py output");
    })
    .await
}

/// Each member's `Mode:` in `srvr` and `stat` and `zk_server_state` in `mntr`, once all
/// three agree with each other; `None` while they do not (say during an election).
async fn modes(ensemble: &Ensemble, among: &[u64]) -> Option<Vec<(u64, String)>> {
    let mut modes = Vec::new();
    for &id in among {
        let zk = ensemble.zk_addr(id);
        let srvr = four_letters(&zk, b"srvr").await;
        let stat = four_letters(&zk, b"stat").await;
        let mntr = four_letters(&zk, b"mntr").await;
        let mode = |text: &str| text.lines().find_map(|l| l.strip_prefix("Mode: ")).map(str::to_owned);
        let state = mntr.lines().find_map(|l| l.strip_prefix("zk_server_state\t")).map(str::to_owned);
        let mode = mode(&srvr).filter(|m| Some(m) == mode(&stat).as_ref() && Some(m) == state.as_ref())?;
        modes.push((id, mode));
    }
    Some(modes)
}

/// The member that says `leader` when exactly one of `among` does and every other says
/// `follower`, in all three words.
async fn one_leader(ensemble: &Ensemble, among: &[u64]) -> Option<u64> {
    let modes = modes(ensemble, among).await?;
    let leaders: Vec<u64> = modes.iter().filter(|(_, m)| m == "leader").map(|(id, _)| *id).collect();
    let followers = modes.iter().filter(|(_, m)| m == "follower").count();
    (leaders.len() == 1 && followers == among.len() - 1).then(|| leaders[0])
}

/// A numeric `mntr` row of member `id`.
async fn mntr_row(ensemble: &Ensemble, id: u64, key: &str) -> Option<u64> {
    let mntr = four_letters(&ensemble.zk_addr(id), b"mntr").await;
    mntr.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix('\t')?.trim().parse().ok())
}

// docs/zookeeper-compat.md, "Four-letter words": on an ensemble, `srvr`, `stat` and `mntr`
// say `leader` on the leader and `follower` on the others, as ZooKeeper's do (Curator's and
// kazoo's tools read `Mode:`), and the leader's `mntr` counts the followers it hears from.
// After a kill -9 of the leader, one survivor says `leader`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srvr_stat_and_mntr_say_leader_and_follower_and_a_new_leader_after_a_kill() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let ids = ensemble.ids();
        let leader =
            wait_for("one member says leader, the others follower", DEADLINE, || one_leader(&ensemble, &ids)).await;
        let synced = || async { (mntr_row(&ensemble, leader, "zk_synced_followers").await == Some(2)).then_some(()) };
        wait_for("the leader's mntr counts two synced followers", DEADLINE, synced).await;
        assert_eq!(mntr_row(&ensemble, leader, "zk_followers").await, Some(2));
        let follower = ids.iter().copied().find(|&id| id != leader).expect("a follower");
        assert_eq!(mntr_row(&ensemble, follower, "zk_synced_followers").await, None, "only a leader's mntr has it");

        ensemble.member(leader).kill9_now();
        let rest: Vec<u64> = ids.iter().copied().filter(|&id| id != leader).collect();
        let next = wait_for("a survivor says leader", DEADLINE, || one_leader(&ensemble, &rest)).await;
        assert_ne!(next, leader);
        // The killed member was never heard from by the new leader.
        let one = || async { (mntr_row(&ensemble, next, "zk_synced_followers").await == Some(1)).then_some(()) };
        wait_for("the new leader's mntr counts one synced follower", DEADLINE, one).await;
    })
    .await
}

// docs/zookeeper-compat.md, "Four-letter words": a single server with a durable log is a
// Raft group of one that leads, and still says `standalone`, as a standalone ZooKeeper does,
// without the leader's follower counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_server_says_standalone() {
    bounded(async {
        let ward = ServerProcess::builder().zookeeper().start();
        let zk = ward.zk_addr_str();
        for word in [&b"srvr"[..], b"stat"] {
            let answer = four_letters(&zk, word).await;
            assert!(answer.contains("\nMode: standalone\n"), "{answer}");
        }
        let mntr = four_letters(&zk, b"mntr").await;
        assert!(mntr.contains("zk_server_state\tstandalone\n") && !mntr.contains("zk_synced_followers"), "{mntr}");
    })
    .await
}

// docs/zookeeper-compat.md, "Four-letter words": `zk_approximate_data_size` is ZooKeeper's
// DataTree.approximateDataSize, each node's path length plus data length, on every member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mntr_approximate_data_size_grows_and_shrinks_with_a_node() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let follower = ensemble.ids().into_iter().find(|&id| id != leader).expect("a follower");
        // Connected to the follower: it answers a write once it has applied it itself.
        let client = connect(&ensemble.addr(follower)).await;
        let members = &ensemble;
        let size = move |id| async move { mntr_row(members, id, "zk_approximate_data_size").await.expect("the row") };
        let before = size(follower).await;
        let (path, data) = ("/approximate-size", vec![7u8; 100]);
        client.create(path, &data, ward_client::CreateMode::Persistent).await.expect("create");
        let grown = before + (path.len() + data.len()) as u64;
        assert_eq!(size(follower).await, grown, "after the create");
        let everywhere = || async {
            let mut sizes = Vec::new();
            for id in ensemble.ids() {
                sizes.push(size(id).await);
            }
            sizes.iter().all(|&s| s == grown).then_some(())
        };
        wait_for("every member counts the node", DEADLINE, everywhere).await;
        client.delete(path, None).await.expect("delete");
        assert_eq!(size(follower).await, before, "after the delete");
        client.close().await.expect("close");
    })
    .await
}
