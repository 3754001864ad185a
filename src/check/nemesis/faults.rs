//! The faults themselves: what starting and ending each kind does to a local ensemble.

use crate::check::shared::{OP_LIMIT, SETTLE};
use crate::check::CheckError;
use std::fmt;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::{Client, Error};
use ward_procs::Ensemble;

/// How long adding a member back may take: it is caught up (from a snapshot, perhaps)
/// before it votes.
const ADD_LIMIT: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// SIGKILL, and a restart on the same data directory when the fault ends.
    Kill,
    /// SIGSTOP, and SIGCONT when the fault ends.
    Pause,
    /// Every peer link to and from the member drops everything, until healed.
    Partition,
    /// The member's peer links drop everything in one direction only: what it sends, or
    /// what it is sent.
    OneWay,
    /// The other members split in two halves that cannot reach each other; the member
    /// reaches both (a bridge between two minorities).
    Bridge,
    /// SIGTERM (a clean stop), and a start on the same data directory when the fault ends.
    Restart,
    /// The member is removed from the ensemble (`members remove`) and stopped; when the fault
    /// ends it comes back as a newcomer with an empty data directory and is added again
    /// (`members add`), caught up before it votes.
    Member,
}

impl FaultKind {
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Partition,
        FaultKind::OneWay,
        FaultKind::Bridge,
        FaultKind::Restart,
        FaultKind::Member,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::OneWay => "one-way",
            FaultKind::Bridge => "bridge",
            FaultKind::Restart => "restart",
            FaultKind::Member => "member",
        }
    }

    /// The smallest ensemble the fault means anything in (a bridge needs two others to
    /// separate; removing one of two members would leave no majority to add it back).
    pub fn min_members(self) -> usize {
        match self {
            FaultKind::Bridge | FaultKind::Member => 3,
            FaultKind::Partition | FaultKind::OneWay => 2,
            FaultKind::Kill | FaultKind::Pause | FaultKind::Restart => 1,
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Starts `kind` on `member` (`variant`: a seeded choice within the kind, the direction of a
/// one-way partition). Returns what was done, for the report. Blocking steps (kill, stop
/// and reap) run off the async workers.
pub async fn inject(ensemble: &mut Ensemble, kind: FaultKind, member: u64, variant: u64) -> Result<String, CheckError> {
    let others: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != member).collect();
    Ok(match kind {
        FaultKind::Kill => {
            tokio::task::block_in_place(|| ensemble.member(member).kill9());
            format!("kill -9 {member}")
        }
        FaultKind::Pause => {
            ensemble.member(member).try_pause()?;
            format!("SIGSTOP {member}")
        }
        FaultKind::Partition => {
            ensemble.isolate(member);
            format!("{member} cut off from {others:?}")
        }
        FaultKind::OneWay if variant.is_multiple_of(2) => {
            others.iter().for_each(|&to| ensemble.cut_one_way(member, to));
            format!("{member} -> {others:?} dropped")
        }
        FaultKind::OneWay => {
            others.iter().for_each(|&from| ensemble.cut_one_way(from, member));
            format!("{others:?} -> {member} dropped")
        }
        FaultKind::Bridge => {
            // Alternate members to each side.
            let left: Vec<u64> = others.iter().copied().step_by(2).collect();
            let right: Vec<u64> = others.iter().copied().skip(1).step_by(2).collect();
            for &a in &left {
                for &b in &right {
                    ensemble.cut_one_way(a, b);
                    ensemble.cut_one_way(b, a);
                }
            }
            format!("{left:?} and {right:?} apart, {member} reaches both")
        }
        FaultKind::Restart => {
            tokio::task::block_in_place(|| ensemble.member(member).try_stop())?;
            format!("SIGTERM {member}")
        }
        FaultKind::Member => {
            remove(ensemble, member, &others).await?;
            format!("{member} removed from the ensemble")
        }
    })
}

/// Ends `kind` on `member` (restart, SIGCONT, heal, add back), without waiting for it to
/// catch up.
pub async fn heal(ensemble: &mut Ensemble, kind: FaultKind, member: u64) -> Result<(), CheckError> {
    match kind {
        FaultKind::Kill | FaultKind::Restart => tokio::task::block_in_place(|| ensemble.member(member).try_restart())?,
        FaultKind::Pause => ensemble.member(member).try_resume()?,
        FaultKind::Partition | FaultKind::OneWay | FaultKind::Bridge => ensemble.heal(),
        FaultKind::Member => add_back(ensemble, member).await?,
    }
    Ok(())
}

/// A client of the members in `ids` only.
async fn client_of(ensemble: &Ensemble, ids: &[u64]) -> Result<Client, CheckError> {
    let addrs: Vec<String> = ids.iter().map(|&id| ensemble.addr(id)).collect();
    crate::check::connect(&addrs.join(",")).await
}

/// Removes `member` through the `others`, waits until they no longer list it, and stops it.
async fn remove(ensemble: &mut Ensemble, member: u64, others: &[u64]) -> Result<(), CheckError> {
    let admin = client_of(ensemble, others).await?;
    match timeout(SETTLE, admin.remove_member(member)).await {
        // The leader removing itself may drop the connection before it answers.
        Ok(Ok(()) | Err(Error::ConnectionLoss)) => {}
        Ok(Err(e)) => return Err(CheckError::Client { what: format!("remove member {member}"), source: e }),
        Err(_) => return Err(CheckError::Timeout(format!("removing member {member} took over {SETTLE:?}"))),
    }
    let start = Instant::now();
    loop {
        let listed = timeout(OP_LIMIT, admin.members()).await;
        if let Ok(Ok(members)) = listed {
            if members.iter().all(|m| m.id != member) {
                break;
            }
        }
        if start.elapsed() > SETTLE {
            return Err(CheckError::Timeout(format!("member {member} still listed {SETTLE:?} after its removal")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = timeout(OP_LIMIT, admin.close()).await;
    // No longer a member: its clients move on to the others.
    tokio::task::block_in_place(|| ensemble.member(member).kill9());
    Ok(())
}

/// Starts `member` again as a newcomer and adds it through the others.
async fn add_back(ensemble: &mut Ensemble, member: u64) -> Result<(), CheckError> {
    tokio::task::block_in_place(|| ensemble.try_rejoin(member))?;
    let others: Vec<u64> = ensemble.ids().into_iter().filter(|&id| id != member).collect();
    let admin = client_of(ensemble, &others).await?;
    let peer = ensemble.peer_addr(member).to_string();
    let added = timeout(ADD_LIMIT, admin.add_member(member, &peer)).await;
    let _ = timeout(OP_LIMIT, admin.close()).await;
    match added {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(CheckError::Client { what: format!("add member {member} back"), source: e }),
        Err(_) => Err(CheckError::Timeout(format!("adding member {member} back took over {ADD_LIMIT:?}"))),
    }
}
