//! A follower partitioned from the other members for [`PARTITION`], then healed, under a
//! writer with one write outstanding whose session lists only the leader and the members
//! that stay with it. The ensemble's peer links run through proxies ([`Links::Proxied`]);
//! the partition drops every peer message to and from the follower without closing a
//! connection, as a network would. Per partition:
//!
//! - the longest time between two acknowledged writes during the partition, and from the
//!   heal until [`AFTER`] past the follower serving and caught up again ([`longest_gap`]);
//! - every member's Raft term before and after (its admin `/metrics`), and whether the
//!   leader changed: another member leads, or the leader's term moved (it was elected again).
//!
//! [`Links::Proxied`]: crate::ensemble::Links::Proxied

use crate::admin_metrics::raft_term;
use crate::ensemble::LocalEnsemble;
use crate::gaps::longest_gap;
use crate::stats::{ms, spread, Figures};
use crate::steady_writer::{Record, SteadyWriter};
use crate::sys::{Error, Result, Session, System, Ward};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the follower is cut off: long against any election timeout, so that a member
/// that campaigns when cut off does so during it.
const PARTITION: Duration = Duration::from_secs(5);
/// Writes run this long before the partition (and must be acknowledged).
const WARM: Duration = Duration::from_millis(300);
/// How long past the follower's return the window after the heal lasts.
const AFTER: Duration = Duration::from_secs(1);

/// One partition, as measured.
struct Partition {
    leader: u64,
    follower: u64,
    /// Entries the follower was behind when healed, as the leader saw it: that the partition
    /// held (the writer went on without it).
    lag_at_heal: Option<u64>,
    /// Partition → heal: [`PARTITION`] and the question about the lag.
    cut_off: Duration,
    during: Duration,
    after_heal: Duration,
    new_leader: u64,
    terms_before: BTreeMap<u64, u64>,
    terms_after: BTreeMap<u64, u64>,
    record: Record,
}

impl Partition {
    fn leader_changed(&self) -> bool {
        self.new_leader != self.leader || self.terms_before.get(&self.leader) != self.terms_after.get(&self.leader)
    }

    fn print(&self, round: usize, of: usize) {
        let terms = |t: &BTreeMap<u64, u64>| t.iter().map(|(id, t)| format!("{id}:{t}")).collect::<Vec<_>>().join(" ");
        eprintln!(
            "  partition {}/{of}: follower {} cut off {:.1} s, {} entries behind at the heal; longest write gap {:.1} ms during, {:.1} ms after the heal; leader {} → {} ({}); terms {} → {}; failed writes {:?}; sessions lost {}",
            round + 1,
            self.follower,
            self.cut_off.as_secs_f64(),
            self.lag_at_heal.map_or("unknown".into(), |l| l.to_string()),
            ms(self.during),
            ms(self.after_heal),
            self.leader,
            self.new_leader,
            if self.leader_changed() { "changed" } else { "unchanged" },
            terms(&self.terms_before),
            terms(&self.terms_after),
            self.record.failed,
            self.record.sessions_lost
        );
    }
}

/// Every member's current term.
async fn terms(ens: &LocalEnsemble) -> Result<BTreeMap<u64, u64>> {
    let mut terms = BTreeMap::new();
    for id in ens.ids() {
        let admin = ens.admin(id).ok_or_else(|| Error(format!("no member {id}")))?;
        terms.insert(id, raft_term(admin).await?);
    }
    Ok(terms)
}

/// Partitions a follower `partitions` times (the first follower by id each time), each once
/// the ensemble is whole again. `ens` must have been started with proxied links.
pub async fn follower_partitions(ens: &LocalEnsemble, base: &str, partitions: usize) -> Result<Figures> {
    let ctl = Ward { addr: ens.all(), pid: None }.connect().await?;
    ctl.ensure(base).await?;
    let mut done = Vec::with_capacity(partitions);
    for round in 0..partitions {
        let path = format!("{base}/p{round}");
        ctl.ensure(&path).await?;
        done.push(partition_once(ens, path, round, partitions).await?);
    }
    Session::close(ctl).await;
    let mut f = Figures::default();
    f.add("partitions", done.len() as f64);
    spread(&mut f, "longest gap between acked writes during the partition", done.iter().map(|p| p.during));
    spread(&mut f, "longest gap between acked writes after the heal", done.iter().map(|p| p.after_heal));
    f.add("partitions after which the leader changed", done.iter().filter(|p| p.leader_changed()).count() as f64);
    f.add("failed writes (all partitions)", done.iter().map(|p| p.record.failures()).sum::<u64>() as f64);
    f.add("sessions lost (all partitions)", done.iter().map(|p| p.record.sessions_lost).sum::<u64>() as f64);
    Ok(f)
}

async fn partition_once(ens: &LocalEnsemble, path: String, round: usize, of: usize) -> Result<Partition> {
    let leader = ens.leader(&ens.ids()).await?;
    let follower =
        ens.ids().into_iter().find(|&id| id != leader).ok_or_else(|| Error("a partition needs a follower".into()))?;
    let staying: Vec<u64> = ens.ids().into_iter().filter(|&id| id != follower).collect();
    let terms_before = terms(ens).await?;
    let writer = SteadyWriter::start(Arc::new(Ward { addr: ens.connect_string(&staying), pid: None }), path).await?;
    tokio::time::sleep(WARM).await;
    let cut = Instant::now();
    ens.partition(follower)?;
    tokio::time::sleep(PARTITION).await;
    let lag_at_heal = ens.lag(follower, &staying).await;
    let healed = Instant::now();
    ens.heal(follower)?;
    ens.wait_healthy().await?;
    let back = Instant::now();
    tokio::time::sleep(AFTER).await;
    let record = writer.stop().await?;
    if !record.acks.iter().any(|&a| a < cut) {
        return Err(Error(format!("no write acknowledged in the {WARM:?} before the partition")));
    }
    let partition = Partition {
        leader,
        follower,
        lag_at_heal,
        cut_off: healed - cut,
        during: longest_gap(&record.acks, cut, healed).unwrap_or_default(),
        after_heal: longest_gap(&record.acks, healed, back + AFTER).unwrap_or_default(),
        new_leader: ens.leader(&ens.ids()).await?,
        terms_before,
        terms_after: terms(ens).await?,
        record,
    };
    partition.print(round, of);
    Ok(partition)
}
