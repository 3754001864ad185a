//! ZooKeeper clients of an ensemble: a kazoo session, its ephemeral node and its kazoo Lock
//! through a kill -9 of the member serving it, the leader.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use ward_client::SessionId;
use ward_testkit::zk::{Kazoo, SCRIPT_LIMIT};
use ward_testkit::{bounded, connect, serial, within, Ensemble, DEADLINE};

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
