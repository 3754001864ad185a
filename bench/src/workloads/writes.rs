//! a, b, c and w: writes one at a time, many outstanding, reads, and many writers.

use super::{close_all, connect_many, pipelined, timed, DATA, OUTSTANDING, SESSIONS};
use crate::stats::{Figures, Samples};
use crate::sys::{Error, Result, Session, System};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// a. One session, one request outstanding: create a persistent node, delete it.
pub(super) async fn sequential<Y: System>(sys: &Y, dir: &str, n: usize) -> Result<Figures> {
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
pub(super) async fn create_delete<Y: System>(sys: &Y, dir: &str, n: usize) -> Result<Figures> {
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
pub(super) async fn reads<Y: System>(sys: &Y, dir: &str, duration: Duration) -> Result<Figures> {
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

/// Durable writes: 64 sessions each overwrite their own node, one write outstanding each;
/// group commit shows as many acknowledged writes per log fsync.
pub(super) async fn durable<Y: System>(sys: &Y, ctl: &Y::S, dir: &str, duration: Duration) -> Result<Figures> {
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
