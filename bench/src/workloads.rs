//! The workloads, each written once against [`System`].

use crate::stats::{Figures, Samples};
use crate::sys::{Counters, Error, Fired, Result, Session, System};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
async fn timed<S, F, Fut>(sessions: &[S], tasks: usize, duration: Duration, op: F) -> Result<(Duration, Samples)>
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

/// a. One session, one request outstanding: create a persistent node, delete it.
async fn sequential<Y: System>(sys: &Y, dir: &str, n: usize) -> Result<Figures> {
    let s = sys.connect().await?;
    let path = format!("{dir}/node");
    for _ in 0..(n / 10).max(20) {
        s.create(&path, &DATA, false).await?;
        s.delete(&path).await?;
    }
    let (mut creates, mut deletes) = (Samples::with_capacity(n), Samples::with_capacity(n));
    let start = Instant::now();
    for _ in 0..n {
        let t0 = Instant::now();
        s.create(&path, &DATA, false).await?;
        let t1 = Instant::now();
        s.delete(&path).await?;
        creates.push(t1 - t0);
        deletes.push(t1.elapsed());
    }
    let elapsed = start.elapsed();
    s.close().await;
    let mut f = Figures::default();
    f.rate("ops/s", 2 * n, elapsed);
    f.latency("create", &mut creates);
    f.latency("delete", &mut deletes);
    Ok(f)
}

/// b. 64 tasks over 4 sessions create `n` nodes, then delete them.
async fn create_delete<Y: System>(sys: &Y, dir: &str, n: usize) -> Result<Figures> {
    let sessions = connect_many(sys, SESSIONS).await?;
    let per_task = n / OUTSTANDING;
    let d = Arc::new(dir.to_string());
    let name = move |d: &str, t: usize, k: usize| format!("{d}/t{t}-{k}");
    // Warm-up: a few creates and deletes per task.
    let dw = d.clone();
    let warm = move |s: Y::S, t: usize, k: usize| {
        let d = dw.clone();
        async move {
            let p = format!("{d}/warm{t}-{k}");
            s.create(&p, &DATA, false).await?;
            s.delete(&p).await
        }
    };
    pipelined(&sessions, OUTSTANDING, 5, warm).await?;
    let dc = d.clone();
    let create = move |s: Y::S, t: usize, k: usize| {
        let d = dc.clone();
        async move { s.create(&name(&d, t, k), &DATA, false).await }
    };
    let (ct, mut clat) = pipelined(&sessions, OUTSTANDING, per_task, create).await?;
    let dd = d.clone();
    let delete = move |s: Y::S, t: usize, k: usize| {
        let d = dd.clone();
        async move { s.delete(&name(&d, t, k)).await }
    };
    let (dt, mut dlat) = pipelined(&sessions, OUTSTANDING, per_task, delete).await?;
    close_all(sessions).await;
    let mut f = Figures::default();
    f.rate("create/s", clat.len(), ct);
    f.latency("create", &mut clat);
    f.rate("delete/s", dlat.len(), dt);
    f.latency("delete", &mut dlat);
    Ok(f)
}

/// c. 64 tasks over 4 sessions read one 100-byte node.
async fn reads<Y: System>(sys: &Y, dir: &str, duration: Duration) -> Result<Figures> {
    let sessions = connect_many(sys, SESSIONS).await?;
    let path = Arc::new(format!("{dir}/data"));
    sessions[0].create(&path, &DATA, false).await?;
    // On an ensemble a session may sit on a member that has not applied the create yet
    // (members serve reads from their own state): wait until every session sees the node.
    for s in &sessions {
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.get_data(&path).await.is_err() {
            if Instant::now() > deadline {
                return Err(Error(format!("{path} not visible to every session within 10 s")));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let read = move |s: Y::S, _t: usize| {
        let p = path.clone();
        async move {
            let n = s.get_data(&p).await?;
            if n != DATA.len() {
                return Err(Error(format!("read {n} bytes")));
            }
            Ok(())
        }
    };
    timed(&sessions, OUTSTANDING, duration / 5, read.clone()).await?;
    let (elapsed, mut lat) = timed(&sessions, OUTSTANDING, duration, read).await?;
    close_all(sessions).await;
    let mut f = Figures::default();
    f.rate("get_data/s", lat.len(), elapsed);
    f.latency("get_data", &mut lat);
    Ok(f)
}

/// d. One client takes and releases one lock nobody else wants: first awaiting each release,
/// then releasing without waiting (a dropped guard), which lets the release and the next
/// acquire travel, and be made durable, together.
async fn uncontended<Y: System>(sys: &Y, ctl: &Y::S, dir: &str, duration: Duration) -> Result<Figures> {
    let s = sys.connect().await?;
    let lock = format!("{dir}/lock");
    s.ensure(&lock).await?;
    let run = |d: Duration, pipelined: bool| {
        let (s, lock) = (s.clone(), lock.clone());
        async move {
            let (mut cycle, mut acquire, mut release) = (Samples::default(), Samples::default(), Samples::default());
            let start = Instant::now();
            while start.elapsed() < d {
                let t0 = Instant::now();
                let g = s.lock(&lock).await?;
                let t1 = Instant::now();
                if pipelined {
                    s.release(g);
                } else {
                    s.unlock(g).await?;
                }
                acquire.push(t1 - t0);
                release.push(t1.elapsed());
                cycle.push(t0.elapsed());
            }
            Ok::<_, Error>((start.elapsed(), cycle, acquire, release))
        }
    };
    let mut f = Figures::default();
    for pipelined in [false, true] {
        run(duration / 5, pipelined).await?;
        let before = sys.counters(ctl).await?;
        let (elapsed, mut lat, mut acquire, mut release) = run(duration, pipelined).await?;
        let after = sys.counters(ctl).await?;
        if pipelined {
            f.rate("cycles/s, release not awaited", lat.len(), elapsed);
            f.latency("acquire, release not awaited", &mut acquire);
            fsyncs_per(&mut f, "cycle, release not awaited", before, after, lat.len());
        } else {
            f.rate("cycles/s", lat.len(), elapsed);
            f.latency("acquire+release", &mut lat);
            f.latency("acquire", &mut acquire);
            f.latency("release", &mut release);
            fsyncs_per(&mut f, "cycle", before, after, lat.len());
        }
    }
    s.close().await;
    Ok(f)
}

/// One grant of the contended lock, in grant order.
#[derive(Clone, Copy)]
struct Grant {
    acquired: Option<Instant>,
    released: Option<Instant>,
}

#[derive(Default)]
struct Ledger {
    grants: Vec<Grant>,
    last_order: u64,
    fifo_violations: u64,
}

/// e, twice: releases awaited (the handoff runs from the acknowledged release), then releases
/// not awaited (a dropped guard: the release and the holder's next request travel together).
async fn contended_both<Y: System>(sys: &Y, ctl: &Y::S, dir: &str, n: usize, d: Duration) -> Result<Figures> {
    let mut f = contended(sys, ctl, &format!("{dir}/awaited"), n, d, false).await?;
    let pipelined = contended(sys, ctl, &format!("{dir}/pipelined"), n, d, true).await?;
    for (metric, value) in pipelined.rows {
        f.add(format!("{metric}, release not awaited"), value);
    }
    Ok(f)
}

/// Listings of a contended lock's queue timed while every contender waits.
const LISTINGS: usize = 200;

/// e. `n` sessions contend for one lock; each releases as soon as it holds and queues again.
/// With `pipelined`, the release is not awaited and the handoff runs from the release call.
///
/// A gate session holds the lock until all `n` contenders are queued, so every grant after the
/// gate's release is a handoff from a predecessor; the last release of the run is the only one
/// with nobody behind it.
async fn contended<Y: System>(
    sys: &Y,
    ctl: &Y::S,
    dir: &str,
    n: usize,
    duration: Duration,
    pipelined: bool,
) -> Result<Figures> {
    let lock = format!("{dir}/lock");
    ctl.ensure(dir).await?;
    ctl.ensure(&lock).await?;
    // With many waiters, what each costs the server (its session, contender node and watch).
    let measure_waiters = n >= 1000;
    let unqueued = if measure_waiters { memory(sys) } else { (None, None) };
    let contenders = connect_many(sys, n).await?;
    let gate = sys.connect().await?;
    let gate_guard = gate.lock(&lock).await?;
    let ledger = Arc::new(Mutex::new(Ledger {
        grants: vec![Grant { acquired: None, released: None }],
        last_order: Y::S::order(&gate_guard),
        fifo_violations: 0,
    }));
    let holders = Arc::new(AtomicU64::new(0));
    let exclusion_violations = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::with_capacity(n);
    for s in &contenders {
        let s = s.clone();
        let (lock, ledger, holders, violations, stop) =
            (lock.clone(), ledger.clone(), holders.clone(), exclusion_violations.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let guard = s.lock(&lock).await?;
                let acquired = Instant::now();
                if holders.fetch_add(1, Ordering::SeqCst) != 0 {
                    violations.fetch_add(1, Ordering::Relaxed);
                }
                let index = {
                    let mut l = ledger.lock().map_err(|_| Error("ledger poisoned".into()))?;
                    let order = Y::S::order(&guard);
                    if order <= l.last_order {
                        l.fifo_violations += 1;
                    }
                    l.last_order = order;
                    l.grants.push(Grant { acquired: Some(acquired), released: None });
                    l.grants.len() - 1
                };
                holders.fetch_sub(1, Ordering::SeqCst);
                let released = if pipelined {
                    let sent = Instant::now();
                    s.release(guard);
                    sent
                } else {
                    s.unlock(guard).await?;
                    Instant::now()
                };
                if let Ok(mut l) = ledger.lock() {
                    l.grants[index].released = Some(released);
                }
            }
            Ok::<_, Error>(())
        }));
    }
    // Wait until every contender is queued behind the gate.
    let queued_by = Instant::now() + Duration::from_secs(60);
    loop {
        let queued = ctl.children(&lock).await?.len();
        if queued > n {
            break;
        }
        if Instant::now() > queued_by {
            return Err(Error(format!("only {queued} of {} contenders queued", n + 1)));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let queued = if measure_waiters { memory(sys) } else { (None, None) };
    // The floor of a recipe's handoff that lists the queue (ZooKeeper's): one listing of all
    // n + 1 contenders, each waiter's first step after its predecessor goes.
    let mut listing = Samples::with_capacity(LISTINGS);
    for _ in 0..LISTINGS {
        let asked = Instant::now();
        ctl.children(&lock).await?;
        listing.push(asked.elapsed());
    }
    let before = sys.counters(ctl).await?;
    let start = Instant::now();
    gate.unlock(gate_guard).await?;
    let gate_released = Instant::now();
    if let Ok(mut l) = ledger.lock() {
        l.grants[0].released = Some(gate_released);
    }
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let end = Instant::now();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .map_err(|_| Error("a contender did not finish".into()))?
            .map_err(|e| Error(format!("task: {e}")))??;
    }
    let after = sys.counters(ctl).await?;
    close_all(contenders).await;
    gate.close().await;

    let l = ledger.lock().map_err(|_| Error("ledger poisoned".into()))?;
    let handoffs = l.grants.len() - 1; // every contender grant follows a release
    let in_window = l.grants.iter().filter(|g| g.acquired.is_some_and(|a| a >= start && a <= end)).count();
    let mut handoff = Samples::with_capacity(handoffs);
    for pair in l.grants.windows(2) {
        if let (Some(released), Some(acquired)) = (pair[0].released, pair[1].acquired) {
            if acquired <= end {
                handoff.push(acquired.saturating_duration_since(released));
            }
        }
    }
    let mut f = Figures::default();
    f.rate("acquisitions/s", in_window, end - start);
    f.latency("handoff", &mut handoff);
    f.latency("listing the queue", &mut listing);
    if let (Some(a), Some(b)) = (after.lock_notifications, before.lock_notifications) {
        f.add("notifications/release", (a - b) as f64 / handoffs.max(1) as f64);
    }
    fsyncs_per(&mut f, "acquisition", before, after, handoffs);
    f.add("mutual-exclusion violations", exclusion_violations.load(Ordering::Relaxed) as f64);
    f.add("FIFO violations", l.fifo_violations as f64);
    if measure_waiters {
        per_item(&mut f, "waiter", unqueued, queued, n);
    }
    Ok(f)
}

/// "log fsyncs per <what>" from the counters around a window of `n` operations.
fn fsyncs_per(f: &mut Figures, what: &str, before: Counters, after: Counters, n: usize) {
    if let (Some(a), Some(b)) = (after.log_fsyncs, before.log_fsyncs) {
        f.add(format!("log fsyncs per {what}"), a.saturating_sub(b) as f64 / n.max(1) as f64);
    }
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

async fn wait_sessions<Y: System>(sys: &Y, ctl: &Y::S, at_most: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match sys.live_sessions(ctl).await {
            Some(live) if live > at_most => tokio::time::sleep(Duration::from_millis(100)).await,
            _ => return,
        }
    }
}

/// Connects in flight while opening sessions: below ZooKeeper's accept backlog (50), whose
/// overflow costs a 1 s SYN retransmission rather than anything the server does.
const CONNECTING: usize = 32;

/// f. Open sessions, each creating one ephemeral node; 32 connects in flight.
async fn sessions<Y: System>(sys: &Y, ctl: &Y::S, dir: &str, (small, large): (usize, usize)) -> Result<Figures> {
    let baseline_sessions = sys.live_sessions(ctl).await.unwrap_or(0);
    let before = memory(sys);
    let mut open = Vec::with_capacity(large);
    let start = Instant::now();
    let mut small_time = Duration::ZERO;
    let mut pending = FuturesUnordered::new();
    let mut next = 0;
    while open.len() < large {
        while next < large && pending.len() < CONNECTING {
            let path = format!("{dir}/s{next}");
            pending.push(async move {
                let s = sys.connect().await?;
                s.create(&path, b"", true).await?;
                Ok::<_, Error>(s)
            });
            next += 1;
        }
        match pending.next().await {
            Some(s) => open.push(s?),
            None => break,
        }
        if open.len() == small {
            small_time = start.elapsed();
        }
    }
    let large_time = start.elapsed();
    let after = memory(sys);
    close_all(open).await;
    wait_sessions(sys, ctl, baseline_sessions).await;
    let mut f = Figures::default();
    f.add(format!("open {small} sessions (s)"), small_time.as_secs_f64());
    f.add(format!("open {large} sessions (s)"), large_time.as_secs_f64());
    f.rate("sessions/s", large, large_time);
    per_item(&mut f, "session", before, after, large);
    Ok(f)
}

/// g. Create `n` persistent nodes with 100 bytes each (64 outstanding over 4 sessions),
/// measure the server's memory, delete them.
async fn znodes<Y: System>(sys: &Y, dir: &str, n: usize) -> Result<Figures> {
    let sessions = connect_many(sys, SESSIONS).await?;
    let per_task = n / OUTSTANDING;
    let total = per_task * OUTSTANDING;
    let before = memory(sys);
    let d = Arc::new(dir.to_string());
    let dc = d.clone();
    let create = move |s: Y::S, t: usize, k: usize| {
        let d = dc.clone();
        async move { s.create(&format!("{d}/n{t:02}-{k:06}"), &DATA, false).await }
    };
    let (ct, mut lat) = pipelined(&sessions, OUTSTANDING, per_task, create).await?;
    let after = memory(sys);
    let delete = move |s: Y::S, t: usize, k: usize| {
        let d = d.clone();
        async move { s.delete(&format!("{d}/n{t:02}-{k:06}")).await }
    };
    let (dt, _) = pipelined(&sessions, OUTSTANDING, per_task, delete).await?;
    close_all(sessions).await;
    let mut f = Figures::default();
    f.rate("create/s", total, ct);
    f.latency("create", &mut lat);
    f.rate("delete/s", total, dt);
    per_item(&mut f, "znode", before, after, total);
    Ok(f)
}

/// h. `sessions` sessions each set a one-shot data watch on each of `nodes` nodes; then one
/// multi changes every node and the benchmark waits until every event has arrived.
async fn watches<Y: System>(sys: &Y, ctl: &Y::S, dir: &str, sessions: usize, nodes: usize) -> Result<Figures> {
    let paths: Arc<Vec<String>> = Arc::new((0..nodes).map(|i| format!("{dir}/n{i:05}")).collect());
    for chunk in paths.chunks(OUTSTANDING) {
        let creating: FuturesUnordered<_> = chunk.iter().map(|p| ctl.create(p, &DATA, false)).collect();
        creating.collect::<Vec<_>>().await.into_iter().collect::<Result<Vec<()>>>()?;
    }
    let watchers = connect_many(sys, sessions).await?;
    let before = memory(sys);
    let start = Instant::now();
    let mut setting = Vec::with_capacity(sessions);
    for s in &watchers {
        let s = s.clone();
        let paths = paths.clone();
        setting.push(tokio::spawn(async move {
            let set: FuturesUnordered<_> = paths.iter().map(|p| s.watch_data(p)).collect();
            set.collect::<Vec<_>>().await.into_iter().collect::<Result<Vec<Fired>>>()
        }));
    }
    let mut armed = Vec::with_capacity(sessions);
    for h in setting {
        armed.push(h.await.map_err(|e| Error(format!("task: {e}")))??);
    }
    let set_time = start.elapsed();
    let after = memory(sys);
    let total = sessions * nodes;
    // One task per session waits for its events.
    let mut waiting = Vec::with_capacity(sessions);
    for fired in armed {
        waiting.push(tokio::spawn(async move {
            let mut fired: FuturesUnordered<Fired> = fired.into_iter().collect();
            while let Some(r) = fired.next().await {
                r?;
            }
            Ok::<_, Error>(Instant::now())
        }));
    }
    let fire = Instant::now();
    ctl.set_all(&paths, &DATA[..50]).await?;
    let acked = fire.elapsed();
    let mut last = fire;
    for h in waiting {
        let done = tokio::time::timeout(Duration::from_secs(120), h)
            .await
            .map_err(|_| Error("watch events did not all arrive in 120 s".into()))?
            .map_err(|e| Error(format!("task: {e}")))??;
        last = last.max(done);
    }
    let delivered = last - fire;
    close_all(watchers).await;
    let mut f = Figures::default();
    f.rate("watches set/s", total, set_time);
    per_item(&mut f, "watch", before, after, total);
    f.add("fire: write acked (ms)", acked.as_secs_f64() * 1e3);
    f.add("fire: all events delivered (ms)", delivered.as_secs_f64() * 1e3);
    f.rate("events delivered/s", total, delivered);
    Ok(f)
}

/// Durable writes: 64 sessions each overwrite their own node, one write outstanding each;
/// group commit shows as many acknowledged writes per log fsync.
async fn durable<Y: System>(sys: &Y, ctl: &Y::S, dir: &str, duration: Duration) -> Result<Figures> {
    let writers = connect_many(sys, OUTSTANDING).await?;
    for (i, s) in writers.iter().enumerate() {
        s.create(&format!("{dir}/w{i}"), &DATA, false).await?;
    }
    let d = Arc::new(dir.to_string());
    let write = move |s: Y::S, t: usize| {
        let d = d.clone();
        async move { s.set_data(&format!("{d}/w{t}"), &DATA).await }
    };
    timed(&writers, OUTSTANDING, duration / 5, write.clone()).await?;
    let before = sys.counters(ctl).await?;
    let (elapsed, mut lat) = timed(&writers, OUTSTANDING, duration, write).await?;
    let after = sys.counters(ctl).await?;
    close_all(writers).await;
    let mut f = Figures::default();
    f.rate("acked writes/s", lat.len(), elapsed);
    f.latency("write", &mut lat);
    if let (Some(a), Some(b)) = (after.log_fsyncs, before.log_fsyncs) {
        let fsyncs = a.saturating_sub(b);
        f.rate("log fsyncs/s", fsyncs as usize, elapsed);
        f.add("writes per fsync", lat.len() as f64 / fsyncs.max(1) as f64);
    }
    Ok(f)
}
