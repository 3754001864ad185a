//! d and e: one lock nobody else wants, and one that N sessions contend for.

use super::{close_all, connect_many, memory, per_item};
use crate::stats::{Figures, Samples};
use crate::sys::{Counters, Error, Result, Session, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// d. One client takes and releases one lock nobody else wants: first awaiting each release,
/// then releasing without waiting (a dropped guard), which lets the release and the next
/// acquire travel, and be made durable, together.
pub(super) async fn uncontended<Y: System>(sys: &Y, ctl: &Y::S, dir: &str, duration: Duration) -> Result<Figures> {
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
pub(super) async fn contended_both<Y: System>(
    sys: &Y,
    ctl: &Y::S,
    dir: &str,
    n: usize,
    d: Duration,
) -> Result<Figures> {
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
