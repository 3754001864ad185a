//! The workloads, each written once against [`System`].
//!
//! * this file: their sizes, their list, [`run`], and the helpers they share (sessions,
//!   pipelined and timed tasks, memory figures);
//! * [`writes`]: a (sequential creates), b (64 outstanding), c (reads), w (64 writers);
//! * [`locks`]: d (an uncontended lock), e (a contended one, N waiters);
//! * [`fencing`]: i (a holder's writes plain and fenced, and its check that it holds);
//! * [`population`]: f (sessions), g (znodes), h (watches).

mod fencing;
mod locks;
mod population;
mod writes;

use fencing::fencing;
use locks::{contended_both, uncontended};
use population::{sessions, watches, znodes};
use writes::{create_delete, durable, reads, sequential};

use crate::stats::{Figures, Samples};
use crate::sys::{Error, Result, Session, System};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::time::{Duration, Instant};

/// How big each workload is.
#[derive(Clone, Debug)]
pub struct Sizes {
    pub seq_ops: usize,
    pub creates: usize,
    pub reads: Duration,
    pub lock_cycles: Duration,
    pub contended: Duration,
    pub sessions: (usize, usize),
    pub znodes: usize,
    pub watch_sessions: usize,
    pub watch_nodes: usize,
    pub durable: Duration,
    /// g1m: znodes created in ten equal steps.
    pub million: usize,
}

impl Sizes {
    pub fn full() -> Self {
        Sizes {
            seq_ops: 3_000,
            creates: 51_200,
            reads: Duration::from_secs(5),
            lock_cycles: Duration::from_secs(5),
            contended: Duration::from_secs(5),
            sessions: (1_000, 10_000),
            znodes: 100_000,
            watch_sessions: 100,
            watch_nodes: 1_000,
            durable: Duration::from_secs(5),
            million: 1_000_000,
        }
    }

    pub fn quick() -> Self {
        Sizes {
            seq_ops: 200,
            creates: 2_048,
            reads: Duration::from_millis(500),
            lock_cycles: Duration::from_millis(500),
            contended: Duration::from_millis(500),
            sessions: (50, 200),
            znodes: 5_000,
            watch_sessions: 10,
            watch_nodes: 100,
            durable: Duration::from_millis(500),
            million: 20_000,
        }
    }
}

/// Sessions × tasks used for the "64 outstanding over 4 sessions" workloads.
pub(crate) const SESSIONS: usize = 4;
pub(crate) const OUTSTANDING: usize = 64;
pub(crate) const DATA: [u8; 100] = [b'w'; 100];

/// The workloads in the order they run: (id, title).
pub const WORKLOADS: &[(&str, &str)] = &[
    ("a", "a. sequential create+delete"),
    ("b", "b. create, delete (64 outstanding)"),
    ("c", "c. get_data (64 outstanding)"),
    ("d", "d. uncontended lock"),
    ("e10", "e. contended lock N=10"),
    ("e100", "e. contended lock N=100"),
    ("f", "f. sessions"),
    ("g", "g. 100k znodes"),
    ("h", "h. watches"),
    ("w", "durable writes (64 writers)"),
    ("i", "i. fenced writes and checks"),
    ("g1m", "g. 1M znodes"),
    ("e1000", "e. contended lock N=1000"),
];

pub async fn run<Y: System>(sys: &Y, id: &str, base: &str, sizes: &Sizes) -> Result<Figures> {
    let ctl = sys.connect().await?;
    ctl.ensure(base).await?;
    let dir = format!("{base}/{id}");
    ctl.ensure(&dir).await?;
    let result = match id {
        "a" => sequential(sys, &dir, sizes.seq_ops).await,
        "b" => create_delete(sys, &dir, sizes.creates).await,
        "c" => reads(sys, &dir, sizes.reads).await,
        "d" => uncontended(sys, &ctl, &dir, sizes.lock_cycles).await,
        "e10" => contended_both(sys, &ctl, &dir, 10, sizes.contended).await,
        "e100" => contended_both(sys, &ctl, &dir, 100, sizes.contended).await,
        "f" => sessions(sys, &ctl, &dir, sizes.sessions).await,
        "g" => znodes(sys, &dir, sizes.znodes).await,
        "h" => watches(sys, &ctl, &dir, sizes.watch_sessions, sizes.watch_nodes).await,
        "w" => durable(sys, &ctl, &dir, sizes.durable).await,
        "i" => fencing(sys, &dir, sizes.lock_cycles).await,
        "g1m" => crate::scale::million(sys, &dir, sizes.million).await,
        "e1000" => contended_both(sys, &ctl, &dir, 1000, sizes.contended).await,
        other => Err(Error(format!("no workload {other:?}"))),
    };
    remove_tree(&ctl, &dir).await;
    ctl.close().await;
    result
}

/// Deletes `path` and everything under it, best effort (ephemerals of sessions still closing
/// may be in the way).
async fn remove_tree<S: Session>(s: &S, path: &str) {
    let mut stack = vec![(path.to_string(), false)];
    while let Some((p, expanded)) = stack.pop() {
        if expanded {
            let _ = s.delete(&p).await;
            continue;
        }
        let children = s.children(&p).await.unwrap_or_default();
        stack.push((p.clone(), true));
        let leaves: Vec<String> = children.iter().map(|c| format!("{p}/{c}")).collect();
        // Leaves first, many at a time; whatever has children is handled on the stack.
        for chunk in leaves.chunks(OUTSTANDING) {
            let deleting: FuturesUnordered<_> = chunk.iter().map(|c| async move { (c, s.delete(c).await) }).collect();
            for (c, r) in deleting.collect::<Vec<_>>().await {
                if r.is_err() {
                    stack.push((c.clone(), false));
                }
            }
        }
    }
}

pub(crate) async fn connect_many<Y: System>(sys: &Y, n: usize) -> Result<Vec<Y::S>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(sys.connect().await?);
    }
    Ok(out)
}

pub(crate) async fn close_all<S: Session>(sessions: Vec<S>) {
    let mut closing = FuturesUnordered::new();
    for s in sessions {
        closing.push(s.close());
        if closing.len() >= OUTSTANDING {
            closing.next().await;
        }
    }
    while closing.next().await.is_some() {}
}

/// Runs `op(session, task, k)` for k in 0..per_task in each of `tasks` tasks (task i uses
/// session i % sessions.len()); returns the wall time and every op's latency.
pub(crate) async fn pipelined<S, F, Fut>(
    sessions: &[S],
    tasks: usize,
    per_task: usize,
    op: F,
) -> Result<(Duration, Samples)>
where
    S: Session,
    F: Fn(S, usize, usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let start = Instant::now();
    let mut handles = Vec::with_capacity(tasks);
    for t in 0..tasks {
        let s = sessions[t % sessions.len()].clone();
        let op = op.clone();
        handles.push(tokio::spawn(async move {
            let mut lat = Samples::with_capacity(per_task);
            for k in 0..per_task {
                let t0 = Instant::now();
                op(s.clone(), t, k).await?;
                lat.push(t0.elapsed());
            }
            Ok::<_, Error>(lat)
        }));
    }
    let mut all = Samples::with_capacity(tasks * per_task);
    for h in handles {
        all.extend(h.await.map_err(|e| Error(format!("task: {e}")))??);
    }
    Ok((start.elapsed(), all))
}

/// Like [`pipelined`], but each task repeats `op` until `duration` has passed.
pub(crate) async fn timed<S, F, Fut>(
    sessions: &[S],
    tasks: usize,
    duration: Duration,
    op: F,
) -> Result<(Duration, Samples)>
where
    S: Session,
    F: Fn(S, usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let start = Instant::now();
    let deadline = start + duration;
    let mut handles = Vec::with_capacity(tasks);
    for t in 0..tasks {
        let s = sessions[t % sessions.len()].clone();
        let op = op.clone();
        handles.push(tokio::spawn(async move {
            let mut lat = Samples::default();
            while Instant::now() < deadline {
                let t0 = Instant::now();
                op(s.clone(), t).await?;
                lat.push(t0.elapsed());
            }
            Ok::<_, Error>(lat)
        }));
    }
    let mut all = Samples::default();
    for h in handles {
        all.extend(h.await.map_err(|e| Error(format!("task: {e}")))??);
    }
    Ok((start.elapsed(), all))
}

/// The server's resident memory and (ZooKeeper) live heap, now.
/// Blocks this worker (jcmd takes a while), leaving the runtime's other threads running.
pub(crate) fn memory<Y: System>(sys: &Y) -> (Option<u64>, Option<u64>) {
    tokio::task::block_in_place(|| {
        let rss = sys.server_pid().and_then(crate::procinfo::rss_bytes);
        (rss, sys.live_heap())
    })
}

pub(crate) fn per_item(
    f: &mut Figures,
    what: &str,
    before: (Option<u64>, Option<u64>),
    after: (Option<u64>, Option<u64>),
    n: usize,
) {
    if let (Some(a), Some(b)) = (after.0, before.0) {
        f.add(format!("RSS per {what} (B)"), (a as f64 - b as f64) / n as f64);
    }
    if let (Some(a), Some(b)) = (after.1, before.1) {
        f.add(format!("live heap per {what} (B)"), (a as f64 - b as f64) / n as f64);
    }
}
