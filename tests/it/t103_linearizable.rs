//! Linearizable registers on an ensemble: clients on every member read (after `sync`), write
//! and compare-and-set a few keys while the leader is killed and members are cut off, and
//! `ward-linearizability` finds a linearization of everything they saw. The clients and the
//! faults are `ward check`'s own (`ward::check`), driven here on a fixed schedule.

use crate::harness::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use ward::check::nemesis::{self, FaultKind};
use ward::check::registers::{self, RegisterOp, Worker, INITIAL};
use ward::check::Shared;
use ward_linearizability::{check, History, Node, Op, Outcome};
use ward_testkit::{seed, serial, Ensemble, Rng};

const KEYS: [&str; 3] = ["/g17-a", "/g17-b", "/g17-c"];
const WORKERS: u64 = 6;
/// The clients run at least this long, and on until the nemesis is done.
const MIN_RUN: Duration = Duration::from_secs(20);
/// Steps the search may take per key: a linearizable key of a few thousand operations at
/// this concurrency takes a few times its size.
const BUDGET: u64 = 50_000_000;

fn keys() -> Arc<[String]> {
    KEYS.iter().map(|k| k.to_string()).collect()
}

/// Creates [`KEYS`] holding [`INITIAL`] (version 0) and returns a history that starts there.
async fn prepare_keys(addrs: &str) -> History {
    let client = connect(addrs).await;
    let history = registers::prepare_keys(&client, &keys()).await.expect("create the keys");
    client.close().await.expect("close");
    history
}

/// Starts [`WORKERS`] clients (`ward check`'s register workload), each given every
/// member's address, their choices drawn from `run_seed`.
async fn start_workers(addrs: &str, shared: &Shared, run_seed: u64) -> Vec<tokio::task::JoinHandle<Worker>> {
    let mut tasks = Vec::new();
    for process in 1..=WORKERS {
        let worker =
            Worker::new(process, addrs, keys(), run_seed.wrapping_add(process)).await.expect("a worker connects");
        tasks.push(tokio::spawn(worker.run(shared.clone())));
    }
    tasks
}

/// Stops the workers and records what they saw.
async fn finish(tasks: Vec<tokio::task::JoinHandle<Worker>>, shared: &Shared, history: &mut History) -> Vec<Worker> {
    shared.stop.store(true, Ordering::Relaxed);
    let mut workers = Vec::new();
    for task in tasks {
        // Each is at most one call or one reconnect from stopping.
        let worker = within("a worker stops", DEADLINE * 2, task).await.expect("worker task");
        registers::record(history, &keys(), &worker.done);
        workers.push(worker);
    }
    workers
}

fn all_ops(workers: &[Worker]) -> Vec<RegisterOp> {
    workers.iter().flat_map(|w| w.done.iter().cloned()).collect()
}

/// Figures of a run, printed with the checker's report.
fn summary(workers: &[Worker]) -> String {
    registers::summary(&all_ops(workers), workers.iter().map(|w| w.sessions_lost).sum())
}

/// Waits until the clients have completed `n` more operations: the ensemble serves.
async fn progressed(shared: &Shared, n: u64, while_what: &str) {
    assert!(shared.progressed(n, DEADLINE).await, "{n} operations did not complete within {DEADLINE:?} {while_what}");
}

async fn rejoined(ensemble: &Ensemble, id: u64) {
    nemesis::rejoined(ensemble, id, DEADLINE).await.expect("the member rejoins");
}

/// Kills the leader with kill -9, waits for another and for the clients to go on, then
/// restarts it and waits until it serves again (so the next fault leaves a majority).
async fn kill_leader(ensemble: &mut Ensemble, shared: &Shared) -> String {
    let leader = ensemble.leader(&[]).await;
    let at = Instant::now();
    nemesis::inject(ensemble, FaultKind::Kill, leader, 0).await.expect("kill -9");
    let rest: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
    let next = ensemble.leader(&rest).await;
    let elected = at.elapsed();
    progressed(shared, 20, &format!("with leader {leader} killed")).await;
    nemesis::heal(ensemble, FaultKind::Kill, leader).await.expect("restart");
    rejoined(ensemble, leader).await;
    format!(
        "kill -9 leader {leader}: {next} answers as leader after {elected:?}; {leader} back after {:?}",
        at.elapsed()
    )
}

/// Cuts member `id` off from its peers (its clients still reach it), waits for a leader
/// among the others and for the clients to go on, then heals.
async fn isolate(ensemble: &mut Ensemble, id: u64, shared: &Shared) -> String {
    let at = Instant::now();
    nemesis::inject(ensemble, FaultKind::Partition, id, 0).await.expect("partition");
    let rest: Vec<u64> = ensemble.ids().into_iter().filter(|&m| m != id).collect();
    let leader = ensemble.leader(&rest).await;
    let elected = at.elapsed();
    progressed(shared, 20, &format!("with member {id} cut off")).await;
    nemesis::heal(ensemble, FaultKind::Partition, id).await.expect("heal");
    rejoined(ensemble, id).await;
    format!(
        "isolate {id}: {leader} answers as leader of the rest after {elected:?}; healed, {id} back after {:?}",
        at.elapsed()
    )
}

/// The faults: three rounds of a leader kill and an isolation (of the leader, then a
/// follower, then the leader again).
async fn faults(ensemble: &mut Ensemble, shared: &Shared, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut log = Vec::new();
    for round in 0..3 {
        log.push(kill_leader(ensemble, shared).await);
        let leader = ensemble.leader(&[]).await;
        let victim = match round % 2 {
            0 => leader,
            _ => {
                let followers: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != leader).collect();
                followers[rng.below(followers.len() as u64) as usize]
            }
        };
        log.push(isolate(ensemble, victim, shared).await);
    }
    log
}

// G17: reads preceded by `sync`, writes and compare-and-sets on three keys, from six
// clients spread over a three-member ensemble, stay linearizable while the leader is killed
// with kill -9 (and restarted) and members, the leader among them, are cut off from their
// peers and healed, three times each. Writes whose outcome is unknown are left open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synced_reads_writes_and_cas_stay_linearizable_through_kills_and_partitions() {
    linearizable_through_faults(&[]).await;
}

// G17 with lease reads (docs/guarantees.md, "Lease reads"): the same run on an ensemble
// whose leaders name read indexes from their lease (`--lease-read`), where a leader cut off
// from its peers keeps answering `sync` from its lease until it runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lease_reads_synced_reads_stay_linearizable_through_kills_and_partitions() {
    linearizable_through_faults(&["--lease-read"]).await;
}

/// Six clients' synced reads, writes and compare-and-sets through kills and partitions of an
/// ensemble started with `flags`, checked linearizable.
async fn linearizable_through_faults(flags: &[&str]) {
    let _serial = serial().await;
    bounded(async {
        let mut ensemble = Ensemble::start(3, flags).await;
        ensemble.leader(&[]).await;
        let addrs = ensemble.connect_string();
        let mut history = prepare_keys(&addrs).await;
        let shared = Shared::new();
        let run_seed = seed();
        eprintln!("clients and faults: WARD_TEST_SEED={run_seed}");
        let started = Instant::now();
        let tasks = start_workers(&addrs, &shared, run_seed).await;
        let faults = faults(&mut ensemble, &shared, run_seed).await;
        let more = MIN_RUN.saturating_sub(started.elapsed());
        // The faults are over; clients keep going until the minimum run is done, on a
        // healthy ensemble, so that every key is also read after the last fault.
        progressed(&shared, 20, "after the faults").await;
        tokio::time::sleep(more).await;
        let workers = finish(tasks, &shared, &mut history).await;
        let ran = started.elapsed();

        let checking = Instant::now();
        let report = check(&history, BUDGET);
        println!("{}", faults.join("\n"));
        println!("{ran:?} of clients: {}", summary(&workers));
        println!("checked in {:?}:\n{report}", checking.elapsed());
        assert_eq!(report.violations().count(), 0, "G17 violated:\n{report}");
        assert!(report.is_linearizable(), "the checker could not decide within its budget:\n{report}");
        let synced_reads = all_ops(&workers).iter().filter(|d| d.op == Op::Read).count();
        assert!(synced_reads > 0 && report.keys.iter().all(|k| k.completed > 0), "{report}");
    })
    .await
}

/// The read that a stale member would serve: `key` as it was before its last completed
/// write (at an older completed write, or its initial value), read after every operation of
/// the history has returned.
fn stale_read(history: &History, key: &str) -> (Node, u64) {
    let mut written: Vec<Node> = history
        .records()
        .iter()
        .filter(|r| r.key == key)
        .filter_map(|r| match (&r.op, &r.completion) {
            (Op::Write { value } | Op::Cas { value, .. }, Some(c)) => match c.outcome {
                Outcome::Written { version } => Some(Node { value: value.clone(), version }),
                _ => None,
            },
            _ => None,
        })
        .collect();
    written.sort_by_key(|n| n.version);
    assert!(!written.is_empty(), "no completed write on {key}");
    written.pop();
    let stale = written.pop().unwrap_or(Node { value: INITIAL.to_vec(), version: 0 });
    let end = history.records().iter().filter_map(|r| r.completion.as_ref().map(|c| c.at)).max().unwrap_or(0);
    (stale, end)
}

// G17, the checker's side: the history of a real run (three members, no faults) is
// linearizable, and the same history with one stale read added (after every write has
// returned, a read of the value before the last write) is rejected, naming that read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_rejects_a_real_history_with_one_stale_read() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        ensemble.leader(&[]).await;
        let addrs = ensemble.connect_string();
        let mut history = prepare_keys(&addrs).await;
        let shared = Shared::new();
        let run_seed = seed();
        eprintln!("clients: WARD_TEST_SEED={run_seed}");
        let tasks = start_workers(&addrs, &shared, run_seed).await;
        progressed(&shared, 300, "on a healthy ensemble").await;
        let workers = finish(tasks, &shared, &mut history).await;
        println!("real run: {}", summary(&workers));
        let real = check(&history, BUDGET);
        println!("real history:\n{real}");
        assert!(real.is_linearizable(), "G17 violated by the real run:\n{real}");

        let key = KEYS[0];
        let (stale, end) = stale_read(&history, key);
        let read = history.invoke(99, key, Op::Read, end + 1);
        history.complete(read, Outcome::Value(stale.clone()), end + 2).expect("a well-formed read");
        let doctored = check(&history, BUDGET);
        println!("with a stale read of {stale:?}:\n{doctored}");
        assert!(!doctored.is_linearizable(), "the stale read went unnoticed");
        let violation = doctored.violations().next().expect("a violation, not an unknown verdict");
        assert_eq!(violation.blocked, Some(read), "the violation names the stale read:\n{}", violation.explanation);
        for other in KEYS.iter().filter(|k| **k != key) {
            assert_eq!(doctored.get(other).map(|k| &k.verdict), Some(&ward_linearizability::Verdict::Linearizable));
        }
    })
    .await
}
