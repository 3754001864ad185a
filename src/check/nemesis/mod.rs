//! The faults `ward check --ensemble` inflicts on its local ensemble, one at a time so that a
//! majority always remains ([`FaultKind`]: kill -9, SIGSTOP, full, one-way and bridge
//! partitions, a clean restart, and a membership change), each healed and waited out
//! before the next. The schedule (kinds, targets, how long each lasts, the pauses between)
//! is drawn from the run's seed.
//!
//! # Layout
//! * `faults`: starting and ending each kind.
//! * here: the seeded schedule and the loop that follows it.

mod faults;

pub use faults::{heal, inject, FaultKind};

use super::shared::{Shared, SETTLE};
use super::CheckError;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::Client;
use ward_procs::{Ensemble, Rng};

/// One fault as it happened, on the run's clock (nanoseconds).
#[derive(Clone, Debug)]
pub struct FaultEvent {
    pub kind: FaultKind,
    pub member: u64,
    /// The member led when the fault began.
    pub was_leader: bool,
    /// What was done (`kill -9 2`, `[1] and [3] apart, 2 reaches both`).
    pub detail: String,
    pub start: u64,
    /// When it was healed and the member served synced reads again.
    pub end: u64,
}

/// True if a client of member `addr` alone gets a `sync` through: the member is in contact
/// with a leader that has a quorum.
pub async fn syncs_through(addr: &str) -> bool {
    let connecting = Client::builder(addr).connect_timeout(Duration::from_secs(2)).connect();
    let Ok(Ok(client)) = timeout(Duration::from_secs(5), connecting).await else { return false };
    let synced = matches!(timeout(Duration::from_secs(5), client.sync("/")).await, Ok(Ok(())));
    let _ = timeout(Duration::from_secs(5), client.close()).await;
    synced
}

/// Waits (up to `limit`) until member `id` serves synced reads again.
pub async fn rejoined(ensemble: &Ensemble, id: u64, limit: Duration) -> Result<(), CheckError> {
    let addr = ensemble.addr(id);
    let start = Instant::now();
    while start.elapsed() < limit {
        if syncs_through(&addr).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(CheckError::Timeout(format!("member {id} did not serve synced reads within {limit:?} after a fault ended")))
}

/// The next fault of a seeded schedule.
#[derive(Clone, Copy, Debug)]
pub struct Planned {
    pub kind: FaultKind,
    /// On the leader of the moment, or on member `n` of the ensemble (by position).
    pub on_leader: bool,
    pub position: u64,
    /// A choice within the kind (the direction of a one-way partition).
    pub variant: u64,
    pub hold: Duration,
    pub gap: Duration,
}

/// The seeded schedule: the same seed and kinds give the same sequence of plans. Kinds come
/// in rounds, each a shuffle of all of them, so that even a short run sees every kind.
pub struct Schedule {
    rng: Rng,
    kinds: Vec<FaultKind>,
    round: Vec<FaultKind>,
}

impl Schedule {
    /// A schedule of `kinds` (those that mean something in an ensemble of `members`).
    pub fn new(seed: u64, kinds: &[FaultKind], members: usize) -> Schedule {
        let kinds = kinds.iter().copied().filter(|k| k.min_members() <= members).collect();
        // Apart from the workers' streams, which use seed + process.
        Schedule { rng: Rng::new(seed ^ 0x6e65_6d65_7369_7300), kinds, round: Vec::new() }
    }

    /// How many kinds a round holds: each of them at least once.
    pub fn round_len(&self) -> usize {
        self.kinds.len()
    }
}

impl Iterator for Schedule {
    type Item = Planned;

    /// `None` only when no kind was chosen.
    fn next(&mut self) -> Option<Planned> {
        if self.round.is_empty() {
            self.round = self.kinds.clone();
            for i in (1..self.round.len()).rev() {
                self.round.swap(i, self.rng.below(i as u64 + 1) as usize);
            }
        }
        let kind = self.round.pop()?;
        let on_leader = self.rng.below(2) == 0;
        let position = self.rng.next_u64();
        let variant = self.rng.next_u64();
        let hold = Duration::from_millis(800 + self.rng.below(1700));
        let gap = Duration::from_millis(200 + self.rng.below(500));
        Some(Planned { kind, on_leader, position, variant, hold, gap })
    }
}

/// Inflicts faults from `schedule` until `until` (a fault that would end past it is not
/// begun, once the first round is done: every kind chosen happens at least once, even if
/// that runs past `until` on a slow machine), each healed and waited out before the next;
/// `say` hears one line per fault.
pub async fn run(
    ensemble: &mut Ensemble,
    schedule: &mut Schedule,
    until: Instant,
    shared: &Shared,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Vec<FaultEvent>, CheckError> {
    let mut faults = Vec::new();
    let first_round = schedule.round_len();
    for plan in schedule.by_ref() {
        if faults.len() >= first_round && Instant::now() + plan.hold + plan.gap > until {
            break;
        }
        let leader = ensemble.try_leader(&[], SETTLE).await?;
        let ids = ensemble.ids();
        let member = if plan.on_leader { leader } else { ids[(plan.position % ids.len() as u64) as usize] };
        let start = shared.clock.now();
        let began = Instant::now();
        let detail = inject(ensemble, plan.kind, member, plan.variant).await?;
        tokio::time::sleep(plan.hold).await;
        heal(ensemble, plan.kind, member).await?;
        rejoined(ensemble, member, SETTLE).await?;
        let end = shared.clock.now();
        let role = if member == leader { " (the leader)" } else { "" };
        say(&format!("fault: {detail}{role} for {:?}, back after {:.1?}", plan.hold, began.elapsed()));
        faults.push(FaultEvent { kind: plan.kind, member, was_leader: member == leader, detail, start, end });
        tokio::time::sleep(plan.gap).await;
    }
    Ok(faults)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_schedule_and_every_round_has_every_kind() {
        let kinds = FaultKind::ALL;
        let plans = |seed| {
            let mut schedule = Schedule::new(seed, &kinds, 3);
            (0..14).map(|_| schedule.next().map(|p| (p.kind, p.on_leader, p.position, p.hold))).collect::<Vec<_>>()
        };
        assert_eq!(plans(1), plans(1));
        assert_ne!(plans(1), plans(2));
        for round in plans(1).chunks(kinds.len()) {
            for kind in kinds {
                assert!(round.iter().any(|p| p.map(|p| p.0) == Some(kind)), "{round:?}");
            }
        }
        assert!(Schedule::new(1, &[], 3).next().is_none());
    }

    #[test]
    fn kinds_that_need_more_members_are_left_out() {
        let mut one = Schedule::new(1, &FaultKind::ALL, 1);
        let kinds: Vec<FaultKind> = (0..6).filter_map(|_| one.next().map(|p| p.kind)).collect();
        assert!(
            kinds.iter().all(|k| matches!(k, FaultKind::Kill | FaultKind::Pause | FaultKind::Restart)),
            "{kinds:?}"
        );
    }
}
