//! Semaphores and multi-locks (G12; docs/recipes.md), with contenders in processes
//! of their own.

use crate::harness::*;
use std::time::{Duration, Instant};
use ward_client::{Client, Error};

/// Starts one `ward-contender lock --server ADDR ARGS...` process per entry of `each`, waits
/// until all are connected and lets them go together.
async fn start_contenders(addr: &str, each: &[&[&str]]) -> Vec<Contender> {
    let mut processes: Vec<Contender> =
        each.iter().map(|args| Contender::spawn(&[&["lock", "--server", addr][..], args].concat())).collect();
    for process in &mut processes {
        assert_eq!(process.next_line().await.text, "ready");
    }
    for process in &mut processes {
        process.go();
    }
    processes
}

/// Waits (bounded) for every process to report "done" and exit 0.
async fn finish(processes: &mut [Contender], limit: Duration) {
    for process in processes {
        let line = process.next_line_within(limit).await;
        assert!(line.text.starts_with("done "), "{line:?}");
        assert!(process.wait_exit(DEADLINE).await.success());
    }
}

/// The contenders in `dir` that belong to `client`'s session.
async fn contenders_of(observer: &Client, dir: &str, client: &Client) -> usize {
    let children = observer.get_children(dir).await.expect("ls");
    let mine = |name: &String| ward_proto::lock::parse_contender(name).map(|(s, _)| s) == Some(client.session_id());
    children.iter().filter(|name| mine(name)).count()
}

/// 10 contenders in 3 processes × 20 permits each.
const SEMAPHORE_TASKS: [usize; 3] = [4, 3, 3];
const SEMAPHORE_ITERS: usize = 20;

// G12: a semaphore with 3 permits never has more than 3 holders across 10 contenders
// in 3 processes (an outside record), and does give 3 sessions a permit at once while a
// fourth waits for a release; a contender asking for the
// same semaphore with another number of permits, or for a lock in its directory, gets
// PermitsMismatch and leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_of_three_never_has_a_fourth_holder() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let record = RecordFile::new("semaphore");
        let (file, iters) = (record.path_str(), SEMAPHORE_ITERS.to_string());
        let args = [
            "--dir",
            "/sem",
            "--file",
            &file,
            "--kind",
            "semaphore",
            "--permits",
            "3",
            "--hold-ms",
            "5",
            "--iters",
            &iters,
        ];
        let tasks = SEMAPHORE_TASKS.map(|n| n.to_string());
        let each: Vec<Vec<&str>> = tasks.iter().map(|n| [&args[..], &["--tasks", n]].concat()).collect();
        let each: Vec<&[&str]> = each.iter().map(Vec::as_slice).collect();
        let start = Instant::now();
        let mut processes = start_contenders(&addr, &each).await;

        // While they contend (most likely): another number of permits is refused, by a typed
        // error, once the first acquire has fixed the number.
        let other = connect(&addr).await;
        wait_until("the semaphore's permits are fixed", DEADLINE, || async {
            other
                .get_data("/sem")
                .await
                .is_ok_and(|(data, _)| ward_proto::lock::parse_semaphore_header(&data) == Some(3))
        })
        .await;
        for permits in [4, 2] {
            let refused = within("the mismatched acquire", DEADLINE, other.acquire_permit("/sem", permits)).await;
            assert_eq!(refused.err(), Some(Error::PermitsMismatch), "asked with {permits} permits");
            assert_eq!(contenders_of(&other, "/sem", &other).await, 0, "the refused acquire left a node");
        }
        // A lock is not a permit: taking one in the semaphore's directory is refused too.
        let refused = within("a lock in the semaphore", DEADLINE, other.lock("/sem")).await;
        assert_eq!(refused.err(), Some(Error::PermitsMismatch), "an exclusive lock");
        let refused = within("a read lock in the semaphore", DEADLINE, other.read_lock("/sem")).await;
        assert_eq!(refused.err(), Some(Error::PermitsMismatch), "a read lock");
        assert_eq!(contenders_of(&other, "/sem", &other).await, 0, "a refused lock left a node");

        finish(&mut processes, Duration::from_secs(120)).await;
        let elapsed = start.elapsed();
        let seen = check_at_most(&record.read(), 3);
        println!("semaphore of 3: {} holds in {elapsed:?}, at most {} at once", seen.count, seen.most_at_once);
        assert_eq!(seen.count, SEMAPHORE_TASKS.iter().sum::<usize>() * SEMAPHORE_ITERS, "every hold recorded");
        assert_eq!(other.get_children("/sem").await.expect("ls"), Vec::<String>::new());
        // The contenders above overlap by chance; this does by construction: three sessions
        // hold the 3 permits at once, a fourth waits, and one release lets it in.
        let holders = [connect(&addr).await, connect(&addr).await, other.clone()];
        let mut permits = Vec::new();
        for holder in &holders {
            permits.push(within("a free permit", DEADLINE, holder.acquire_permit("/sem", 3)).await.expect("permit"));
        }
        let fourth = connect(&addr).await;
        let mut waiting = tokio::spawn({
            let fourth = fourth.clone();
            async move { fourth.acquire_permit("/sem", 3).await }
        });
        wait_until("the fourth contender is queued", DEADLINE, || async {
            other.get_children("/sem").await.is_ok_and(|c| c.len() == 4)
        })
        .await;
        // A wrong grant would come within this; a slow machine can only hide one, not invent it.
        let early = tokio::time::timeout(Duration::from_millis(500), &mut waiting).await;
        assert!(early.is_err(), "a fourth holder while 3 permits were held: {early:?}");
        permits.pop().expect("a permit").unlock().await.expect("unlock");
        let last = within("the fourth contender", DEADLINE, waiting).await.expect("task").expect("permit");
        last.unlock().await.expect("unlock");
        for permit in permits {
            permit.unlock().await.expect("unlock");
        }
    })
    .await
}

const MULTI_ITERS: usize = 500;

// G12: two processes take {a, b} and {b, a} 500 times each: no deadlock (they finish
// within a bound), no overlap on either path (one outside record per path), and each path's
// tokens increase from holder to holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_locks_in_opposite_orders_neither_deadlock_nor_overlap() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let (record_a, record_b) = (RecordFile::new("multi-a"), RecordFile::new("multi-b"));
        let (file_a, file_b) = (record_a.path_str(), record_b.path_str());
        let iters = MULTI_ITERS.to_string();
        let start = Instant::now();
        let forward = ["--dir", "/ma,/mb", "--file", &format!("{file_a},{file_b}"), "--iters", &iters];
        let backward = ["--dir", "/mb,/ma", "--file", &format!("{file_b},{file_a}"), "--iters", &iters];
        let mut processes = start_contenders(&addr, &[&forward, &backward]).await;
        // No deadlock: both finish, well within the bound.
        finish(&mut processes, Duration::from_secs(120)).await;
        let elapsed = start.elapsed();

        let (a, b) = (check_exclusive(&record_a.read()), check_exclusive(&record_b.read()));
        println!("multi-lock {{a,b}} vs {{b,a}}: {} holds in {elapsed:?}", a.count);
        assert_eq!((a.count, b.count), (2 * MULTI_ITERS, 2 * MULTI_ITERS), "every hold recorded on both paths");
        // Both processes held, and their holds on a and on b came in the same order.
        assert_eq!(a.who, b.who, "holders of a and of b in different orders");
        let pids: std::collections::HashSet<&String> = a.who.iter().collect();
        assert_eq!(pids.len(), 2);
        let c = connect(&addr).await;
        for dir in ["/ma", "/mb"] {
            assert_eq!(c.get_children(dir).await.expect("ls"), Vec::<String>::new());
        }
    })
    .await
}
