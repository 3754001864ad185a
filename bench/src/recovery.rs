//! `--recovery N`: what a restart costs a server holding N znodes of 100 bytes.
//!
//! Starts a durable `ward-server` of its own, creates N persistent znodes of 100 bytes under
//! one directory (64 outstanding over 4 sessions, as g1m does), closes the sessions, lets it
//! settle and reads its RSS (VmRSS). Then stops it with SIGTERM (with `--crash`, kill -9: the
//! start then replays the log written since the last snapshot) and starts it again on the
//! same data directory, timing the start until the server prints that it listens (it does
//! so once the snapshot is loaded and the log replayed) and until it answers a read. Its RSS
//! is read once it answers and again after it has settled, with its peak (VmHWM). The
//! restarted server's own log lines about the snapshot and the log are printed as they are:
//! their timestamps give the phases of the start.

use crate::procinfo::{peak_rss_bytes, rss_bytes};
use crate::server;
use crate::sys::{Error, Result, Session, System, Ward};
use crate::workloads::{close_all, connect_many, pipelined, DATA, OUTSTANDING, SESSIONS};
use std::path::Path;
use std::time::{Duration, Instant};

/// Long enough for a snapshot the creates set off to be written (and for the allocator's
/// own trimming), so that the figures compare servers at rest.
const SETTLE: Duration = Duration::from_secs(5);

/// The restarted server's log lines that time its start.
const PHASES: &[&str] = &["snapshot loaded", "log opened", "durable log open", "listening"];

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "?".into(), |b| format!("{:.0} MiB", b as f64 / (1 << 20) as f64))
}

/// Runs the measurement and prints what it found.
pub async fn run(tmp: &Path, n: usize, crash: bool) -> Result<()> {
    let data = tmp.join("ward-recovery");
    let first = server::start(&data)?;
    let ward = Ward { addr: first.addr.clone(), pid: Some(first.pid) };
    eprintln!("ward-bench: ward-server pid {} at {}, data in {}", first.pid, ward.addr, data.display());
    let sessions = connect_many(&ward, SESSIONS).await?;
    Session::ensure(&sessions[0], "/g").await?;
    let per_task = n.div_ceil(OUTSTANDING);
    let create = move |session: <Ward as System>::S, t: usize, k: usize| async move {
        Session::create(&session, &format!("/g/n{t:02}-{k:07}"), &DATA, false).await
    };
    let (took, _) = pipelined(&sessions, OUTSTANDING, per_task, create).await?;
    let created = per_task * OUTSTANDING;
    close_all(sessions).await;
    println!("created {created} znodes of 100 B in {:.1} s", took.as_secs_f64());
    tokio::time::sleep(SETTLE).await;
    let before = rss_bytes(first.pid);
    println!("before the restart: RSS {}", mib(before));

    let stop = move || if crash { first.crash() } else { first.terminate() };
    let stopping = tokio::task::spawn_blocking(stop).await.map_err(|e| Error(e.to_string()))??;
    let how = if crash { "kill -9" } else { "SIGTERM" };
    println!("{how}: exited after {:.0} ms", stopping.as_secs_f64() * 1e3);

    let started = Instant::now();
    let wall = std::time::SystemTime::now();
    let again = tokio::task::spawn_blocking({
        let data = data.clone();
        move || server::start(&data)
    })
    .await
    .map_err(|e| Error(e.to_string()))??;
    let listening = started.elapsed();
    let ward = Ward { addr: again.addr.clone(), pid: Some(again.pid) };
    let session = ward.connect().await?;
    let read = Session::get_data(&session, "/g").await?;
    let answered = started.elapsed();
    let at_answer = rss_bytes(again.pid);
    let peak = peak_rss_bytes(again.pid);
    let children = Session::children(&session, "/g").await?.len();
    Session::close(session).await;
    tokio::time::sleep(SETTLE).await;
    let settled = rss_bytes(again.pid);
    println!(
        "restart: listening after {:.0} ms, first read answered after {:.0} ms ({read} B; /g has {children} children)",
        listening.as_secs_f64() * 1e3,
        answered.as_secs_f64() * 1e3
    );
    println!(
        "after the restart: RSS {} at the first answer, {} after {} s, peak {}",
        mib(at_answer),
        mib(settled),
        SETTLE.as_secs(),
        mib(peak)
    );
    if let (Some(before), Some(after)) = (before, settled) {
        println!("RSS after / before: {:.2}", after as f64 / before as f64);
    }
    let spawned = wall.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() % 86_400.0);
    for line in again.log().lines().filter(|l| PHASES.iter().any(|p| l.contains(p))) {
        let at = seconds_of_day(line).map_or_else(|| "?".into(), |s| format!("{:.0}", (s - spawned) * 1e3));
        println!("  +{at} ms  {line}");
    }
    Ok(())
}

/// The UTC time of day, in seconds, of a log line that starts with an RFC 3339 timestamp
/// (`2026-12-07T19:30:00.123456Z ...`).
fn seconds_of_day(line: &str) -> Option<f64> {
    let (_, time) = line.split_once('T')?;
    let time = time.split('Z').next()?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}
