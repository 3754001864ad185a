//! The task behind the charts and the "held since" of lock holders: once a second it reads
//! the server's cumulative figures into a [`Sample`], notes which lock contenders hold
//! (and since when, as far as this server can tell), and whether the leader changed.

use super::ensemble::LeaderChange;
use super::samples::{Reading, Sample};
use super::Console;
use crate::metrics::histogram::{Snapshot, NANOS};
use crate::metrics::{Listener, Op};
use crate::Server;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// Nanoseconds per millisecond: histograms kept in ns are charted in ms.
const NS_PER_MS: f64 = NANOS / 1e3;

pub(crate) async fn run(server: Arc<Server>, console: Arc<Console>, cancel: CancellationToken) {
    let mut interval = tokio::time::interval(EVERY);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut previous: Option<Reading> = None;
    let mut first_look = true;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = interval.tick() => {}
        }
        let reading = read(&server);
        if let Some(sample) = previous.as_ref().and_then(|before| Sample::between(before, &reading)) {
            console.push_sample(sample);
        }
        previous = Some(reading);
        note_holders(&server, &console, first_look);
        first_look = false;
        if let Some(raft) = server.replication.raft_figures() {
            console.note_leader(LeaderChange { at_ms: crate::now_ms(), term: raft.term, leader: raft.leader });
        }
    }
}

fn read(server: &Server) -> Reading {
    let mut requests = vec![0u64; Op::ALL.len()];
    let mut latency: Vec<(f64, u64)> = Vec::new();
    for listener in Listener::ALL {
        let figures = server.local.metrics.listener(listener);
        for op in Op::ALL.iter().copied() {
            let histogram = figures.latency(op);
            let count = histogram.count();
            requests[op as usize] += count;
            // A lock wait's "latency" is the wait for the lock: not a request's service time.
            if count == 0 || op == Op::LockWait {
                continue;
            }
            add(&mut latency, &histogram.snapshot(NS_PER_MS));
        }
    }
    let (sessions, znodes) = server.core.read(|s| (s.sessions().count() as u64, s.tree().len() as u64));
    let connections =
        server.connections.ward.load(Ordering::Relaxed) + server.connections.zookeeper.load(Ordering::Relaxed);
    Reading {
        at_ms: crate::now_ms(),
        requests,
        latency,
        fsync: server.local.metrics.log.fsync.snapshot(NS_PER_MS).buckets,
        waits: server.local.metrics.locks.waits.snapshot(1.0).buckets,
        sessions,
        znodes,
        connections,
    }
}

/// Adds a histogram's buckets into `sum` (same bounds).
fn add(sum: &mut Vec<(f64, u64)>, snapshot: &Snapshot) {
    if sum.is_empty() {
        sum.extend(snapshot.buckets.iter().copied());
        return;
    }
    for ((_, total), (_, n)) in sum.iter_mut().zip(&snapshot.buckets) {
        *total += n;
    }
}

/// Records when each holding contender began to hold: now, for one seen holding for the
/// first time that existed at the previous look (it was granted since); its creation, for
/// one created since (it held at once) or at the very first look (nothing better is known).
fn note_holders(server: &Server, console: &Console, first_look: bool) {
    let now = crate::now_ms();
    let since_last = now - i64::try_from(EVERY.as_millis()).unwrap_or(1000);
    let holding: Vec<(String, i64)> = server.core.read(|state| {
        let tree = state.tree();
        let mut holding = Vec::new();
        for dir in super::locks::directories(tree) {
            for (name, holds) in super::locks::queue(tree, dir) {
                if holds {
                    let path = ward_proto::path::join(dir, name);
                    let ctime = tree.get(&path).map_or(now, |n| n.ctime);
                    holding.push((path, ctime));
                }
            }
        }
        holding
    });
    let mut known = console.holding();
    let mut next: HashMap<Box<str>, i64> = HashMap::with_capacity(holding.len());
    for (path, ctime) in holding {
        let since = match known.remove(path.as_str()) {
            Some(since) => since,
            None if first_look || ctime >= since_last => ctime,
            None => now,
        };
        next.insert(path.into_boxed_str(), since);
    }
    *known = next;
    console.set_looked_ms(now);
}
