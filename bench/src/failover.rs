//! Leader failover of a local ensemble, timed in this process around a kill -9 of the leader:
//!
//! - (a) kill → the first write acknowledged through a surviving member: writer tasks on a
//!   client given only the survivors' addresses; only writes issued after the killed process
//!   was reaped count, so no write the old leader could still commit is taken for the new
//!   leader's.
//! - (b) kill → the next grant of a lock to a waiter on the survivors, while the holder's
//!   client was connected only to the killed member. The holder's session is not closed by
//!   anyone: the new leader expires it one session timeout after it took over, so this is
//!   election + the holder's (minimum) session timeout + the grant, and the timeout is
//!   reported next to it. Also: kill → the holder's `LockGuard::lost()`, which the client
//!   signals once it cannot prove its session alive (4/5 of the timeout after the last pong).
//! - Also kill → the new leader is ready to serve (elected, earlier terms applied), from the
//!   time stamp of its log line, which splits (a) into the server's part and the client's.
//!
//! After each kill the member is restarted on its data directory and the next kill waits
//! until it serves again and has caught up.

use crate::ensemble::LocalEnsemble;
use crate::failover_writes::Writes;
use crate::stats::{spread, Figures};
use crate::sys::{Error, Result, SESSION_TIMEOUT};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use ward_client::{Client, LockGuard};

/// Writer tasks, one write outstanding each: several, so that a write is issued right after
/// the kill even while another one is stuck in the old leader's hands.
const WRITERS: usize = 4;
/// After a failed write, before the next: short against a failover, enough not to spin.
const RETRY_PAUSE: Duration = Duration::from_millis(2);
/// Writes run this long before the kill (and must be acknowledged: the writers work).
const WARM: Duration = Duration::from_millis(300);
/// How long after the kill a write may take to go through, and (beyond the holder's session
/// timeout) the waiter to be granted the lock, before the run fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// One leader kill, as measured.
struct Kill {
    leader: u64,
    new_leader: u64,
    /// Until the new leader logged that it leads and is ready; `None` if that line was not
    /// found.
    elected: Option<Duration>,
    write: Duration,
    grant: Duration,
    /// `None` if the holder's guard did not report the loss by the grant (+ 5 s).
    lost: Option<Duration>,
    /// The restart, until the member serves and has caught up.
    back: Duration,
    /// Failed write attempts by error (each retried after [`RETRY_PAUSE`]).
    failed_writes: BTreeMap<String, u64>,
}

/// Kills the leader `kills` times (restarting it each time) and reports the failover times:
/// median, min and max over the kills.
pub async fn leader_kills(ens: &mut LocalEnsemble, base: &str, kills: usize) -> Result<Figures> {
    let ctl = connect(&ens.all(), SESSION_TIMEOUT).await?;
    ensure(&ctl, base).await?;
    ctl.close().await?;
    let mut done = Vec::with_capacity(kills);
    let mut session_timeout = Duration::ZERO;
    for round in 0..kills {
        let (kill, timeout) = kill_leader(ens, &format!("{base}/k{round}")).await?;
        session_timeout = timeout;
        eprintln!(
            "  kill {}/{kills}: leader {} → new leader {} ready {}, first write {:.2} s, lock granted {:.2} s, holder lost {}; failed writes {:?}; member back after {:.2} s",
            round + 1,
            kill.leader,
            kill.new_leader,
            seconds(kill.elected),
            kill.write.as_secs_f64(),
            kill.grant.as_secs_f64(),
            seconds(kill.lost),
            kill.failed_writes,
            kill.back.as_secs_f64()
        );
        done.push(kill);
    }
    let mut f = Figures::default();
    f.add("leader kills", done.len() as f64);
    spread(&mut f, "kill → new leader ready (its log)", done.iter().filter_map(|k| k.elected));
    spread(&mut f, "kill → first write acked via a survivor", done.iter().map(|k| k.write));
    spread(&mut f, "kill → lock granted to a waiter", done.iter().map(|k| k.grant));
    spread(&mut f, "kill → holder's guard lost", done.iter().filter_map(|k| k.lost));
    f.add("holder's session timeout (ms)", session_timeout.as_secs_f64() * 1e3);
    spread(&mut f, "restart → member caught up", done.iter().map(|k| k.back));
    Ok(f)
}

fn seconds(d: Option<Duration>) -> String {
    d.map_or("unknown".into(), |d| format!("{:.2} s", d.as_secs_f64()))
}

async fn connect(addrs: &str, session_timeout: Duration) -> Result<Client> {
    Ok(Client::builder(addrs).session_timeout(session_timeout).connect().await?)
}

async fn ensure(client: &Client, path: &str) -> Result<()> {
    match client.create(path, b"", ward_client::CreateMode::Persistent).await {
        Ok(_) | Err(ward_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// One kill of the current leader, measured; returns it with the holder's session timeout.
async fn kill_leader(ens: &mut LocalEnsemble, dir: &str) -> Result<(Kill, Duration)> {
    let leader = ens.leader(&ens.ids()).await?;
    let survivors: Vec<u64> = ens.ids().into_iter().filter(|&id| id != leader).collect();
    let on_survivors = ens.connect_string(&survivors);
    let ctl = connect(&on_survivors, SESSION_TIMEOUT).await?;
    let lock = format!("{dir}/lock");
    ensure(&ctl, dir).await?;
    ensure(&ctl, &lock).await?;

    // (b) The holder asks for the shortest timeout there is; the server grants its minimum.
    let holder = connect(&ens.connect_string(&[leader]), Duration::from_millis(1)).await?;
    let session_timeout = holder.session_timeout();
    let held = holder.lock(&lock).await?;
    let waiter = connect(&on_survivors, SESSION_TIMEOUT).await?;
    let waiting = {
        let (waiter, lock) = (waiter.clone(), lock.clone());
        tokio::spawn(async move {
            let guard = waiter.lock(&lock).await;
            (Instant::now(), guard)
        })
    };
    let queued_by = Instant::now() + PATIENCE;
    while ctl.get_children(&lock).await?.len() < 2 {
        if Instant::now() > queued_by {
            return Err(Error("the lock waiter did not queue".into()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let losing = tokio::spawn(async move {
        held.lost().await;
        (Instant::now(), held)
    });

    // (a) Writers on the survivors, each on its own node.
    let writer = connect(&on_survivors, SESSION_TIMEOUT).await?;
    let writes = Writes::new();
    let mut tasks = Vec::with_capacity(WRITERS);
    for t in 0..WRITERS {
        let path = format!("{dir}/w{t}");
        ensure(&ctl, &path).await?;
        tasks.push(tokio::spawn(write_loop(writer.clone(), path, writes.clone())));
    }
    tokio::time::sleep(WARM).await;
    if writes.acked() == 0 {
        return Err(Error(format!("no write acknowledged in the {WARM:?} before the kill")));
    }

    let (killed_at, killed_wall) = (Instant::now(), SystemTime::now());
    ens.kill9(leader)?;
    writes.leader_gone();

    let first_ack = writes.first_ack(PATIENCE).await?;
    writes.stop();
    for t in tasks {
        tokio::time::timeout(PATIENCE, t)
            .await
            .map_err(|_| Error("a writer did not stop".into()))?
            .map_err(|e| Error(format!("writer task: {e}")))?
            .map_err(|e| Error(format!("a writer on the survivors: {e}")))?;
    }

    let (granted_at, granted) = tokio::time::timeout(session_timeout + PATIENCE, waiting)
        .await
        .map_err(|_| Error(format!("the waiter was not granted the lock within {:?}", session_timeout + PATIENCE)))?
        .map_err(|e| Error(format!("waiter task: {e}")))?;
    let granted: LockGuard = granted.map_err(|e| Error(format!("the lock waiter on the survivors: {e}")))?;
    let lost = match tokio::time::timeout(Duration::from_secs(5), losing).await {
        Ok(Ok((lost_at, guard))) => {
            drop(guard);
            Some(lost_at - killed_at)
        }
        _ => None,
    };
    let new_leader = ens.leader(&survivors).await?;
    let elected = ens.ready_since(new_leader, killed_wall).and_then(|t| t.duration_since(killed_wall).ok());
    granted.unlock().await.map_err(|e| Error(format!("the waiter's unlock: {e}")))?;
    for c in [writer, waiter, ctl] {
        let _ = tokio::time::timeout(Duration::from_secs(5), c.close()).await;
    }
    // Its member is gone: closing can only fail, and should not wait long for that.
    let _ = tokio::time::timeout(Duration::from_millis(100), holder.close()).await;
    drop(holder);

    let restarting = Instant::now();
    ens.restart(leader)?;
    ens.wait_healthy().await?;
    let kill = Kill {
        leader,
        new_leader,
        elected,
        write: first_ack - killed_at,
        grant: granted_at - killed_at,
        lost,
        back: restarting.elapsed(),
        failed_writes: writes.failures(),
    };
    Ok((kill, session_timeout))
}

/// Overwrites `path` until told to stop, one write outstanding; failures (connection loss,
/// a member out of contact) are counted and the write tried again.
async fn write_loop(client: Client, path: String, w: Arc<Writes>) -> Result<()> {
    while !w.stopped() {
        let issued = Instant::now();
        match client.set_data(&path, b"failover", None).await {
            Ok(_) => w.acknowledged(issued),
            Err(e @ (ward_client::Error::SessionExpired | ward_client::Error::Closed)) => return Err(e.into()),
            Err(e) => {
                w.failed(e.to_string());
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
    Ok(())
}
