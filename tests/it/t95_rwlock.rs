//! Read/write locks (G12; docs/recipes.md): readers share, a writer is alone, across
//! processes; a writer's release to a run of readers tells each of them once.

use crate::harness::*;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use ward_client::Client;

/// 12 contenders in 3 processes × 84 = 1,008 acquisitions, every 4th a write.
const PROCESS_TASKS: [usize; 3] = [4, 4, 4];
const ITERS: usize = 84;

// G12: across 3 processes and 1,008 acquisitions, an outside record in which no
// writer's section overlaps any other section while readers' sections do overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_overlap_and_writers_are_alone_across_three_processes() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let record = RecordFile::new("rwlock");
        let file = record.path_str();
        let (iters, write_every) = (ITERS.to_string(), "4");
        let mut processes: Vec<Contender> = PROCESS_TASKS
            .iter()
            .map(|tasks| {
                let tasks = tasks.to_string();
                Contender::spawn(&[
                    "lock",
                    "--server",
                    &addr,
                    "--dir",
                    "/rw",
                    "--file",
                    &file,
                    "--kind",
                    "rw",
                    "--write-every",
                    write_every,
                    "--hold-ms",
                    "1",
                    "--tasks",
                    &tasks,
                    "--iters",
                    &iters,
                ])
            })
            .collect();
        for process in &mut processes {
            assert_eq!(process.next_line().await.text, "ready");
        }
        let start = Instant::now();
        for process in &mut processes {
            process.go();
        }
        for process in &mut processes {
            let line = process.next_line_within(Duration::from_secs(120)).await;
            assert!(line.text.starts_with("done "), "{line:?}");
            assert!(process.wait_exit(DEADLINE).await.success());
        }
        let elapsed = start.elapsed();

        let seen = check_read_write(&record.read());
        let total = PROCESS_TASKS.iter().sum::<usize>() * ITERS;
        println!(
            "read/write lock: {} reads and {} writes in {elapsed:?}, at most {} readers at once (of {} processes)",
            seen.reads, seen.writes, seen.most_readers, seen.most_reader_processes
        );
        assert_eq!(seen.reads + seen.writes, total, "every acquisition recorded once");
        assert_eq!(seen.writes, total / 4);
        assert!(seen.most_readers >= 2, "readers never held together");
        assert!(seen.most_reader_processes >= 2, "readers of different processes never held together");
        let c = connect(&addr).await;
        assert_eq!(c.get_children("/rw").await.expect("ls /rw"), Vec::<String>::new());
    })
    .await
}

/// A client of its own and a task waiting for the read side of `dir`; the guard is sent on
/// `granted` with the reader's number once held.
fn queue_reader(
    c: Client,
    n: usize,
    dir: &'static str,
    granted: mpsc::UnboundedSender<(usize, ward_client::LockGuard)>,
) {
    tokio::spawn(async move {
        let guard = c.read_lock(dir).await.expect("read lock");
        let _ = granted.send((n, guard));
    });
}

// G12: a writer's release in front of 20 waiting readers sends 20 grant
// notifications (the server's lock_grants counter), one to each reader, not 20 × 20; a writer
// queued behind them is told nothing until the last reader leaves, and then once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writer_release_to_twenty_readers_tells_each_reader_once() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let observer = connect(&addr).await;
        let queued = |n: usize| {
            let observer = observer.clone();
            move || {
                let observer = observer.clone();
                async move { observer.get_children("/rw-herd").await.expect("ls").len() == n }
            }
        };
        let writer = connect(&addr).await;
        let held = writer.lock("/rw-herd").await.expect("writer lock");
        let (granted, mut grants) = mpsc::unbounded_channel();
        let mut readers = Vec::new();
        for n in 0..20 {
            let c = connect(&addr).await;
            readers.push(c.clone());
            queue_reader(c, n, "/rw-herd", granted.clone());
        }
        wait_until("20 readers are queued", DEADLINE, queued(21)).await;
        let late_writer = connect(&addr).await;
        let late = {
            let late_writer = late_writer.clone();
            tokio::spawn(async move { late_writer.lock("/rw-herd").await.expect("late writer lock") })
        };
        wait_until("a second writer is queued behind them", DEADLINE, queued(22)).await;
        let queue = observer.lock_holders("/rw-herd").await.expect("holders");
        let reader_sessions: HashSet<_> = readers.iter().map(Client::session_id).collect();
        assert!(queue[1..21].iter().all(|c| reader_sessions.contains(&c.session.expect("ephemeral"))), "{queue:?}");

        let before = observer.server_stats().await.expect("stats").lock_grants;
        held.unlock().await.expect("writer unlock");
        let mut holding = Vec::new();
        for _ in 0..20 {
            holding.push(within("every reader is granted", DEADLINE, grants.recv()).await.expect("a grant"));
        }
        let numbers: HashSet<usize> = holding.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers.len(), 20, "20 different readers hold");
        for (_, guard) in &holding {
            assert!(guard.fencing_token() > 0);
        }
        // A grant the server wrongly pushed to the late writer would reach it before this reply.
        late_writer.exists("/").await.expect("round trip on the late writer's session");
        assert!(!late.is_finished(), "the writer behind the readers was granted with them");
        let sent = observer.server_stats().await.expect("stats").lock_grants - before;
        println!("a writer's release to 20 readers: {sent} grant notifications");
        assert_eq!(sent, 20, "one notification per reader");

        let last = holding.pop().expect("a reader");
        for (n, guard) in holding {
            guard.unlock().await.expect("reader unlock");
            late_writer.exists("/").await.expect("round trip");
            assert!(!late.is_finished(), "the writer was granted while reader {} still holds", last.0);
            assert_eq!(observer.server_stats().await.expect("stats").lock_grants - before, 20, "after reader {n} left");
        }
        last.1.unlock().await.expect("last reader unlock");
        let writing = within("the late writer holds", DEADLINE, late).await.expect("late writer task");
        assert_eq!(observer.server_stats().await.expect("stats").lock_grants - before, 21, "one more: the writer");
        writing.unlock().await.expect("unlock");
        assert_eq!(observer.get_children("/rw-herd").await.expect("ls"), Vec::<String>::new());
    })
    .await
}
