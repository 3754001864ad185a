//! f, g and h: many sessions, many znodes, many watches, and what each costs.

use super::{close_all, connect_many, memory, per_item, pipelined, DATA, OUTSTANDING, SESSIONS};
use crate::stats::Figures;
use crate::sys::{Error, Fired, Result, Session, System};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// f. Open sessions, each creating one ephemeral node; 32 connects in flight.
pub(super) async fn sessions<Y: System>(
    sys: &Y,
    ctl: &Y::S,
    dir: &str,
    (small, large): (usize, usize),
) -> Result<Figures> {
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
pub(super) async fn znodes<Y: System>(sys: &Y, dir: &str, n: usize) -> Result<Figures> {
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
pub(super) async fn watches<Y: System>(
    sys: &Y,
    ctl: &Y::S,
    dir: &str,
    sessions: usize,
    nodes: usize,
) -> Result<Figures> {
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
