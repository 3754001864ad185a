//! Planned leader restart under a writer with one write outstanding, on a session that lists
//! every member: SIGTERM to the leader (Ward's hands its leadership to a follower before it
//! exits; ZooKeeper's has no such step and its followers elect a new one), then the member
//! started again on its data. Per restart:
//!
//! - the longest time between two acknowledged writes around the stop (from the signal until
//!   [`AFTER`] past the process's exit) and around the restart (from the start until
//!   [`AFTER`] past the member serving and caught up again), measured as [`longest_gap`] does;
//! - failed writes, of any kind (the writer tries each again);
//! - sessions lost: the writer's session expired or closed under it and a new one was opened.

use crate::ensemble::LocalEnsemble;
use crate::gaps::longest_gap;
use crate::procinfo;
use crate::rivals::{host_port, revive_all, wait_leader, Cluster};
use crate::stats::{ms, spread, Figures};
use crate::steady_writer::{Record, SteadyWriter, Tracked};
use crate::sys::{Error, Result, Session, System, Ward};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writes run this long before the signal (and must be acknowledged: the writer works).
const WARM: Duration = Duration::from_millis(300);
/// How long past the stop, and past the member's return, a window lasts.
const AFTER: Duration = Duration::from_secs(1);
/// How long a stopped ZooKeeper server may take to close its port.
const GONE: Duration = Duration::from_secs(60);

/// One planned restart, as measured.
struct Restart {
    leader: String,
    /// Signal → the process exited (Ward's handover happens in this time).
    stopping: Duration,
    stop_gap: Duration,
    restart_gap: Duration,
    record: Record,
}

/// When the windows of one restart began and ended.
struct Windows {
    signalled: Instant,
    stopped: Instant,
    restarting: Instant,
    back: Instant,
}

impl Restart {
    fn new(leader: String, w: &Windows, record: Record) -> Result<Restart> {
        if !record.acks.iter().any(|&a| a < w.signalled) {
            return Err(Error(format!("no write acknowledged in the {WARM:?} before the SIGTERM")));
        }
        let gap = |from, to| longest_gap(&record.acks, from, to).unwrap_or_default();
        Ok(Restart {
            leader,
            stopping: w.stopped - w.signalled,
            stop_gap: gap(w.signalled, w.stopped + AFTER),
            restart_gap: gap(w.restarting, w.back + AFTER),
            record,
        })
    }

    fn print(&self, system: &str, round: usize, of: usize) {
        eprintln!(
            "  {system} planned restart {}/{of}: leader {} exited {:.0} ms after SIGTERM; longest write gap {:.1} ms around the stop, {:.1} ms around the restart; failed writes {:?}; sessions lost {}",
            round + 1,
            self.leader,
            ms(self.stopping),
            ms(self.stop_gap),
            ms(self.restart_gap),
            self.record.failed,
            self.record.sessions_lost
        );
    }
}

/// The figures of these restarts: median, min and max of the gaps, the failures summed.
fn figures(done: &[Restart]) -> Figures {
    let mut f = Figures::default();
    f.add("planned restarts", done.len() as f64);
    spread(&mut f, "SIGTERM → leader exited", done.iter().map(|r| r.stopping));
    spread(&mut f, "longest gap between acked writes around the stop", done.iter().map(|r| r.stop_gap));
    spread(&mut f, "longest gap between acked writes around the restart", done.iter().map(|r| r.restart_gap));
    f.add("failed writes (all restarts)", done.iter().map(|r| r.record.failures()).sum::<u64>() as f64);
    f.add("sessions lost (all restarts)", done.iter().map(|r| r.record.sessions_lost).sum::<u64>() as f64);
    f
}

/// How one system's leader is found, stopped and brought back.
trait Leaders {
    type Y: System<S: Tracked>;
    /// How a member is named: Ward's id, a rival's address.
    type Member: std::fmt::Display;
    /// A session on every member (the writer's and the setup's).
    fn everyone(&self) -> Arc<Self::Y>;
    async fn leader(&mut self) -> Result<Self::Member>;
    /// SIGTERM to `leader`; returns when its process is gone.
    async fn stop(&mut self, leader: &Self::Member) -> Result<Instant>;
    /// Starts `leader` again; returns once the system is whole again.
    async fn start(&mut self, leader: &Self::Member) -> Result<()>;
}

/// Ward's local ensemble: the member leaves after handing its leadership over.
struct WardLeaders<'a> {
    ens: &'a mut LocalEnsemble,
}

impl Leaders for WardLeaders<'_> {
    type Y = Ward;
    type Member = u64;

    fn everyone(&self) -> Arc<Ward> {
        Arc::new(Ward { addr: self.ens.all(), pid: None })
    }

    async fn leader(&mut self) -> Result<u64> {
        self.ens.leader(&self.ens.ids()).await
    }

    async fn stop(&mut self, leader: &u64) -> Result<Instant> {
        self.ens.terminate(*leader).await
    }

    async fn start(&mut self, leader: &u64) -> Result<()> {
        self.ens.restart(*leader)?;
        self.ens.wait_healthy().await
    }
}

/// A rival's cluster: the process listening at the leader's address, and a shell command
/// that starts whatever is not running.
struct RivalLeaders<'a, C> {
    sys: &'a C,
    revive: &'a str,
}

impl<C> Leaders for RivalLeaders<'_, C>
where
    C: Cluster<S: Tracked>,
{
    type Y = C;
    type Member = String;

    fn everyone(&self) -> Arc<C> {
        Arc::new(self.sys.on(&self.sys.members()))
    }

    async fn leader(&mut self) -> Result<String> {
        wait_leader(self.sys).await
    }

    async fn stop(&mut self, leader: &String) -> Result<Instant> {
        let pid = procinfo::pid_listening_on(host_port(leader))
            .ok_or_else(|| Error(format!("no process found listening at the leader {leader}")))?;
        let signalled = Instant::now();
        let status = tokio::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().await?;
        if !status.success() {
            return Err(Error(format!("kill -TERM {pid} failed")));
        }
        // Gone once nothing listens on its port any more.
        while procinfo::pid_listening_on(host_port(leader)).is_some() {
            if signalled.elapsed() > GONE {
                return Err(Error(format!("pid {pid} still listens {GONE:?} after SIGTERM")));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(Instant::now())
    }

    async fn start(&mut self, _: &String) -> Result<()> {
        revive_all(self.sys, self.revive).await
    }
}

/// Restarts Ward's leader `restarts` times, each once the ensemble is whole again.
pub async fn ward_leader_restarts(ens: &mut LocalEnsemble, base: &str, restarts: usize) -> Result<Figures> {
    measure(WardLeaders { ens }, "ward", base, restarts).await
}

/// The same for a rival's cluster: SIGTERM to the process listening at its leader's address,
/// then `revive` (a shell command that starts it again, e.g. `bench/peers.sh start zk`).
pub async fn rival_leader_restarts<C>(sys: &C, base: &str, restarts: usize, revive: &str) -> Result<Figures>
where
    C: Cluster<S: Tracked>,
{
    measure(RivalLeaders { sys, revive }, sys.name(), base, restarts).await
}

async fn measure<L: Leaders>(mut leaders: L, name: &str, base: &str, restarts: usize) -> Result<Figures> {
    let everyone = leaders.everyone();
    let ctl = everyone.connect().await?;
    ctl.ensure(base).await?;
    let mut done = Vec::with_capacity(restarts);
    for round in 0..restarts {
        let path = format!("{base}/r{round}");
        ctl.ensure(&path).await?;
        let leader = leaders.leader().await?;
        let writer = SteadyWriter::start(everyone.clone(), path).await?;
        tokio::time::sleep(WARM).await;
        let signalled = Instant::now();
        let stopped = leaders.stop(&leader).await?;
        tokio::time::sleep(AFTER).await;
        let restarting = Instant::now();
        leaders.start(&leader).await?;
        let back = Instant::now();
        tokio::time::sleep(AFTER).await;
        let record = writer.stop().await?;
        let restart = Restart::new(leader.to_string(), &Windows { signalled, stopped, restarting, back }, record)?;
        restart.print(name, round, restarts);
        done.push(restart);
    }
    ctl.close().await;
    Ok(figures(&done))
}
