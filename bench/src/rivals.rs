//! The race's rivals: a ZooKeeper ensemble and an etcd cluster the user started (see
//! bench/peers.sh), run through the same workloads as Ward's ensemble, and their leader
//! failover timed the way [`crate::failover`] times Ward's: kill -9 of the leader's process →
//! the first write acknowledged through a survivor, counting only writes issued after the
//! killed process was gone.

use crate::failover_writes::Writes;
use crate::procinfo;
use crate::replicated::{run_workloads, Options};
use crate::report::Results;
use crate::stats::{median, Figures};
use crate::sys::{Error, Result, Session, System, ZooKeeper};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writer sessions during a failover, one write outstanding each.
const WRITERS: usize = 4;
const RETRY_PAUSE: Duration = Duration::from_millis(2);
/// How long a write may take to go through after the kill, and the cluster to be whole again
/// after the revive command, before the run fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// A cluster of members the benchmark can find the leader of and aim at.
pub trait Cluster: System + Sized {
    /// Every member's address as the system's clients take it.
    fn members(&self) -> Vec<String>;
    /// The same system, its clients given only `members`.
    fn on(&self, members: &[String]) -> Self;
    /// The member that leads, once the members that answer agree on one.
    fn leader(&self) -> impl Future<Output = Option<String>> + Send;
}

impl Cluster for ZooKeeper {
    fn members(&self) -> Vec<String> {
        self.addr.split(',').map(str::to_string).collect()
    }

    fn on(&self, members: &[String]) -> Self {
        ZooKeeper { addr: members.join(","), pid: None, lock_events: self.lock_events.clone() }
    }

    async fn leader(&self) -> Option<String> {
        let members = self.members();
        tokio::task::spawn_blocking(move || {
            let modes: Vec<Option<String>> =
                members.iter().map(|m| procinfo::zk_word(m, "srvr").and_then(|t| srvr_mode(&t))).collect();
            let leaders: Vec<&String> =
                members.iter().zip(&modes).filter(|(_, m)| m.as_deref() == Some("leader")).map(|(a, _)| a).collect();
            match leaders.as_slice() {
                [one] => Some((*one).clone()),
                _ => None,
            }
        })
        .await
        .ok()
        .flatten()
    }
}

/// The `Mode:` line of ZooKeeper's `srvr` reply: leader, follower or standalone.
pub fn srvr_mode(reply: &str) -> Option<String> {
    reply.lines().find_map(|l| l.strip_prefix("Mode:")).map(|m| m.trim().to_string())
}

/// `host:port` of an address that may be a URL (`http://host:port`).
pub(crate) fn host_port(addr: &str) -> &str {
    addr.split_once("://").map_or(addr, |(_, rest)| rest).trim_end_matches('/')
}

/// Runs the ensemble's workloads against `sys` and then its leader kills, recording them in
/// `results` under the same keys as Ward's ensemble; `Ok(false)` if a workload failed.
pub async fn measure<C: Cluster>(sys: &C, o: &Options, revive: Option<&str>, results: &mut Results) -> Result<bool> {
    let label = format!("{} members", sys.members().len());
    eprintln!("ward-bench: {} at {}", sys.name(), sys.members().join(","));
    let ok = run_workloads(sys, &label, o, results, |f| f).await;
    if o.kills > 0 {
        let base = format!("/bench-{}-{}-failover", std::process::id(), sys.name());
        let figures = leader_kills(sys, &base, o.kills, revive).await?;
        results.record(&format!("{label}: leader kill -9"), sys.name(), &figures);
    }
    Ok(ok)
}

/// Kills the leader `kills` times; after each kill runs `revive` (a shell command that starts
/// the killed member again) and waits for every member to be back. Figures: median, min, max.
pub async fn leader_kills<C: Cluster>(sys: &C, base: &str, kills: usize, revive: Option<&str>) -> Result<Figures> {
    if kills > 1 && revive.is_none() {
        return Err(Error("more than one leader kill needs --revive CMD to bring the member back".into()));
    }
    let mut ms = Vec::new();
    for round in 0..kills {
        let (leader, took) = kill_leader(sys, &format!("{base}-k{round}")).await?;
        eprintln!(
            "  {} kill {}/{kills}: leader {leader}, first write {:.2} s",
            sys.name(),
            round + 1,
            took.as_secs_f64()
        );
        ms.push(took.as_secs_f64() * 1e3);
        if let Some(cmd) = revive {
            revive_all(sys, cmd).await?;
        }
    }
    let mut f = Figures::default();
    f.add("leader kills", ms.len() as f64);
    f.add("kill → first write acked via a survivor, median (ms)", median(&ms));
    f.add("kill → first write acked via a survivor, min (ms)", ms.iter().copied().reduce(f64::min).unwrap_or(f64::NAN));
    f.add("kill → first write acked via a survivor, max (ms)", ms.iter().copied().reduce(f64::max).unwrap_or(f64::NAN));
    Ok(f)
}

async fn kill_leader<C: Cluster>(sys: &C, dir: &str) -> Result<(String, Duration)> {
    let leader = wait_leader(sys).await?;
    let survivors: Vec<String> = sys.members().into_iter().filter(|m| *m != leader).collect();
    let pid = procinfo::pid_listening_on(host_port(&leader))
        .ok_or_else(|| Error(format!("no process found listening at the leader {leader}")))?;
    let on_survivors = sys.on(&survivors);
    let ctl = on_survivors.connect().await?;
    ctl.ensure(dir).await?;
    let writes = Writes::new();
    let mut tasks = Vec::new();
    for t in 0..WRITERS {
        let path = format!("{dir}/w{t}");
        ctl.ensure(&path).await?;
        let session = on_survivors.connect().await?;
        session.set_data(&path, b"warm").await?;
        tasks.push(tokio::spawn(write_loop(session, path, writes.clone())));
    }

    let killed_at = Instant::now();
    let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status()?;
    if !status.success() {
        return Err(Error(format!("kill -9 {pid} failed")));
    }
    // Gone once nothing listens on its port any more (its sockets close with the process).
    let gone_by = Instant::now() + PATIENCE;
    while procinfo::pid_listening_on(host_port(&leader)).is_some() {
        if Instant::now() > gone_by {
            return Err(Error(format!("pid {pid} still listens after kill -9")));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    writes.leader_gone();
    let acked = writes.first_ack(PATIENCE).await?;
    writes.stop();
    for t in tasks {
        if let Ok(Ok(session)) = tokio::time::timeout(PATIENCE, t).await {
            session.close().await;
        }
    }
    ctl.close().await;
    eprintln!("  failed writes during the failover: {:?}", writes.failures());
    Ok((leader, acked - killed_at))
}

/// Overwrites `path` until told to stop; failures are counted and the write tried again.
async fn write_loop<S: Session>(s: S, path: String, w: Arc<Writes>) -> S {
    while !w.stopped() {
        let issued = Instant::now();
        match s.set_data(&path, b"failover").await {
            Ok(()) => w.acknowledged(issued),
            Err(e) => {
                if w.is_after_kill() {
                    w.failed(e.0.chars().take(80).collect());
                }
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
    }
    s
}

pub(crate) async fn wait_leader<C: Cluster>(sys: &C) -> Result<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(leader) = sys.leader().await {
            return Ok(leader);
        }
        if Instant::now() > deadline {
            return Err(Error(format!("{}: no leader within {PATIENCE:?}", sys.name())));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `cmd`, then waits until every member listens again and a leader is agreed on.
pub(crate) async fn revive_all<C: Cluster>(sys: &C, cmd: &str) -> Result<()> {
    let status =
        tokio::process::Command::new("sh").args(["-c", cmd]).stdout(std::process::Stdio::null()).status().await?;
    if !status.success() {
        return Err(Error(format!("--revive {cmd:?} failed: {status}")));
    }
    let deadline = Instant::now() + PATIENCE;
    loop {
        let all = sys.members().iter().all(|m| procinfo::pid_listening_on(host_port(m)).is_some());
        if all && sys.leader().await.is_some() && sys.connect().await.is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error(format!("{}: not whole again within {PATIENCE:?} of {cmd:?}", sys.name())));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srvr_names_the_mode() {
        let reply =
            "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nZxid: 0x100000000\nMode: leader\nNode count: 5\n";
        assert_eq!(srvr_mode(reply).as_deref(), Some("leader"));
        assert_eq!(srvr_mode("This ZooKeeper instance is not currently serving requests\n"), None);
    }

    #[test]
    fn urls_become_host_and_port() {
        assert_eq!(host_port("http://127.0.0.1:32481"), "127.0.0.1:32481");
        assert_eq!(host_port("127.0.0.1:32181"), "127.0.0.1:32181");
    }
}
