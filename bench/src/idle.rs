//! `--idle-sessions N`: the server's memory per idle connected session on each protocol.
//!
//! Per protocol, starts a `ward-server` of its own with the ZooKeeper listener on, opens `N`
//! sessions that send nothing after the handshake, reads the server's RSS before and after
//! (VmRSS), closes them and waits until the server counts none. Each protocol has a fresh
//! server, so neither reuses memory the other freed. The figure is RSS growth / N: it
//! includes the kernel-independent part of each socket only (the socket buffers are the
//! kernel's, not in RSS).
//!
//! With `--zk ADDR`, Apache ZooKeeper at ADDR too: the growth of its live heap (after full
//! collections, as workload f reads it) per idle session, the figure the memory target is
//! set against.

use crate::procinfo::rss_bytes;
use crate::server;
use crate::sys::{Error, Result, Session, System, Ward, ZooKeeper};
use crate::workloads::close_all;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections being opened at once.
const CONNECTING: usize = 64;

/// Bound on the wait for the server to count its sessions as expected.
const SETTLE: Duration = Duration::from_secs(120);

/// Runs the measurement and prints one line per protocol, then one for `zk` if given.
pub async fn run(tmp: &Path, n: usize, zk: Option<ZooKeeper>) -> Result<()> {
    for zookeeper in [false, true] {
        let data = tmp.join(if zookeeper { "ward-data-zk" } else { "ward-data" });
        let owned = server::start_with(&data, &["--zk-listen", "127.0.0.1:0"])?;
        let zk_addr = owned.zk_addr.clone().ok_or_else(|| Error("ward-server printed no ZooKeeper address".into()))?;
        let ward = Ward { addr: owned.addr.clone(), pid: Some(owned.pid) };
        eprintln!("ward-bench: ward-server pid {} (native {}, zookeeper {zk_addr})", owned.pid, ward.addr);
        let ctl = ward.connect().await?;
        if zookeeper {
            let zk = ZooKeeper { addr: zk_addr, pid: Some(owned.pid), lock_events: Arc::new(AtomicU64::new(0)) };
            let per_zk = per_session(&zk, &ward, &ctl, n, || async { rss(owned.pid) }).await?;
            println!("zookeeper protocol: {n} idle sessions, {per_zk:.0} bytes per session");
        } else {
            let per_ward = per_session(&ward, &ward, &ctl, n, || async { rss(owned.pid) }).await?;
            println!("native protocol:    {n} idle sessions, {per_ward:.0} bytes per session");
        }
    }
    if let Some(zk) = zk {
        let heap = zookeeper_heap(&zk, n).await?;
        println!("apache zookeeper:   {n} idle sessions, {heap:.0} bytes of live heap per session");
    }
    Ok(())
}

/// Apache ZooKeeper's live heap growth per idle session.
async fn zookeeper_heap(zk: &ZooKeeper, n: usize) -> Result<f64> {
    let ctl = zk.connect().await?;
    let pid = zk.server_pid();
    let heap = || async move {
        tokio::task::spawn_blocking(move || pid.and_then(crate::procinfo::jvm_live_heap))
            .await
            .ok()
            .flatten()
            .ok_or_else(|| Error("no live heap from jcmd (is ZooKeeper's pid known? --zk-pid)".into()))
    };
    let per = per_session(zk, zk, &ctl, n, heap).await;
    ctl.close().await;
    per
}

/// Opens `n` sessions on `sys` and returns the growth of `measure` per session; `counter`
/// and its session `ctl` count the server's sessions.
async fn per_session<Y, C, F, Fut>(sys: &Y, counter: &C, ctl: &C::S, n: usize, measure: F) -> Result<f64>
where
    Y: System,
    C: System,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<u64>>,
{
    let baseline = counter.live_sessions(ctl).await.unwrap_or(0);
    // Warm up: the first sessions grow the allocator's arenas and the session table once.
    let warm = open(sys, n / 10).await?;
    close_all(warm).await;
    settle(counter, ctl, baseline).await?;
    let before = measure().await?;
    let open = open(sys, n).await?;
    settle(counter, ctl, baseline + n as u64).await?;
    let after = measure().await?;
    close_all(open).await;
    settle(counter, ctl, baseline).await?;
    Ok(after.saturating_sub(before) as f64 / n as f64)
}

async fn open<Y: System>(sys: &Y, n: usize) -> Result<Vec<Y::S>> {
    let mut open = Vec::with_capacity(n);
    let mut pending = FuturesUnordered::new();
    let mut next = 0;
    while open.len() < n {
        while next < n && pending.len() < CONNECTING {
            pending.push(sys.connect());
            next += 1;
        }
        match pending.next().await {
            Some(s) => open.push(s?),
            None => break,
        }
    }
    Ok(open)
}

/// Waits until the server counts `want` sessions (closing is asynchronous on both sides).
async fn settle<Y: System>(sys: &Y, ctl: &Y::S, want: u64) -> Result<()> {
    let start = Instant::now();
    loop {
        let live = sys.live_sessions(ctl).await;
        if live == Some(want) {
            // The RSS read right after: let the server's tasks finish their last polls.
            tokio::time::sleep(Duration::from_millis(500)).await;
            return Ok(());
        }
        if start.elapsed() > SETTLE {
            return Err(Error(format!("server counts {live:?} sessions, expected {want}")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn rss(pid: u32) -> Result<u64> {
    rss_bytes(pid).ok_or_else(|| Error(format!("cannot read /proc/{pid}/status")))
}
