//! Handing the leadership over: on request (`ward members transfer-leader`), and when a
//! leading member is stopped cleanly, so that a planned restart costs the ensemble no
//! election timeout and its clients no failed write.
//!
//! This member first stops handing new writes to openraft ([`HandingOver`]) and waits until
//! the target's log reaches its own last entry; openraft then stops the leader's heartbeats
//! and asks the target to stand at once (`TransferLeader`, over the peer link), which it
//! does only with the leader's whole log; the others grant it their votes because the old
//! leader gave up its lease. Writes submitted meanwhile wait for the new leader and go to it
//! (the proposer's forward path; followers' batches are refused as "not the leader", certainly
//! not applied, and sent again).

use super::types::{NodeId, Raft};
use crate::peer::ForwardError;
use openraft::async_runtime::WatchReceiver;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Set while this member hands its leadership over. Its proposer then sends nothing to
/// openraft (which would refuse it) and waits for the new leader instead, to forward to it
/// what its clients write meanwhile: no write is refused because the leadership moved.
#[derive(Clone, Default)]
pub(crate) struct HandingOver(Arc<Handing>);

#[derive(Default)]
struct Handing {
    set: AtomicBool,
    /// The member it is handed to, for the member list; written before `set`.
    to: AtomicU64,
}

impl HandingOver {
    pub(crate) fn is_set(&self) -> bool {
        self.0.set.load(Ordering::Acquire)
    }

    /// The member the leadership is being handed to, while it is.
    pub(crate) fn target(&self) -> Option<NodeId> {
        self.is_set().then(|| self.0.to.load(Ordering::Acquire))
    }

    /// Set (handing to `to`) until the returned guard is dropped.
    fn begin(&self, to: NodeId) -> impl Drop + '_ {
        struct Unset<'a>(&'a AtomicBool);
        impl Drop for Unset<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        self.0.to.store(to, Ordering::Release);
        self.0.set.store(true, Ordering::Release);
        Unset(&self.0.set)
    }
}

/// Hands the leadership to `to`, or to the voter whose log is most up to date, and waits
/// until it leads (at most `wait`). This member must lead.
pub(super) async fn hand_over(
    raft: &Raft,
    handing: &HandingOver,
    to: Option<NodeId>,
    wait: Duration,
) -> Result<NodeId, ForwardError> {
    let target = {
        let m = raft.metrics().borrow_watched().clone();
        if m.current_leader != Some(m.id) {
            return Err(ForwardError::NotLeader(m.current_leader));
        }
        let others: Vec<NodeId> = m.membership_config.membership().voter_ids().filter(|id| *id != m.id).collect();
        match to {
            Some(id) if id == m.id => return Ok(id),
            Some(id) if !others.contains(&id) => {
                return Err(ForwardError::Refused(format!("member {id} is not a voter of this ensemble")));
            }
            Some(id) => id,
            None => {
                let matched = |id: &NodeId| m.replication.as_ref().and_then(|r| r.get(id).copied().flatten());
                let best = others.iter().max_by_key(|id| matched(id)).copied();
                best.ok_or_else(|| ForwardError::Refused("no other voter to hand the leadership to".into()))?
            }
        }
    };
    tracing::info!(to = target, "handing the leadership over");
    let _handing = handing.begin(target);
    // openraft's target stands only if its log already reaches the leader's last entry. With
    // nothing new proposed here from now on, that last entry stays put: wait until the
    // target has it, then ask.
    let has_whole_log = |m: &openraft::RaftMetrics<super::types::TypeConfig>| {
        let matched = m.replication.as_ref().and_then(|r| r.get(&target).copied().flatten());
        matched.map(|id| id.index) >= m.last_log_index
    };
    let caught_up = raft.wait(Some(wait)).metrics(has_whole_log, "the target has the leader's whole log").await;
    if let Err(e) = caught_up {
        return Err(ForwardError::Unknown(format!("member {target} did not catch up within {wait:?}: {e}")));
    }
    raft.trigger().transfer_leader(target).await.map_err(|fatal| ForwardError::Unknown(fatal.to_string()))?;
    let led = raft.wait(Some(wait)).metrics(|m| m.current_leader == Some(target), "the new leader leads").await;
    match led {
        Ok(_) => {
            tracing::info!(leader = target, "leadership handed over");
            Ok(target)
        }
        Err(e) => {
            Err(ForwardError::Unknown(format!("member {target} did not take the leadership within {wait:?}: {e}")))
        }
    }
}
