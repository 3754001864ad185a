//! The cleanup of containers and TTL nodes: every `container_check_interval`, the leader
//! lists the unused ones (from the tree's index of them, not the whole tree) and proposes
//! a [`CommandOp::DeleteIfUnused`] for each. The log decides: apply checks the rule again
//! in log order by the command's clock, so a node that gained a child meanwhile stays, and
//! every replica, and every replay, deletes the same nodes. Like session expiry, only the
//! ready leader proposes ([`propose_expiry`](crate::replication::Replication::propose_expiry)), so
//! the members do not all propose the same deletions, and one clock judges a TTL.

use crate::command::{Command, CommandOp, Outcome};
use crate::{now_ms, Server};
use std::sync::Arc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use ward_proto::SessionId;

/// Deletions proposed at once. A check that finds more goes on with the next batch once
/// these are applied, so the log sees a bounded burst, not one of the tree's size.
const BATCH: usize = 1000;

pub(crate) async fn run(server: Arc<Server>, cancel: CancellationToken) {
    // The first check one interval after the start, as ZooKeeper's: a restarted server's
    // first moments are its replay's, not a fresh round of deletions.
    let every = server.config.container_check_interval;
    let mut interval = tokio::time::interval_at(Instant::now() + every, every);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = interval.tick() => {}
        }
        if !server.local.ready.is_ready() {
            continue;
        }
        // Bounded: each round deletes a full batch or ends the check.
        while deleted_a_full_batch(&server).await {
            if cancel.is_cancelled() {
                return;
            }
        }
    }
}

/// Proposes the deletion of up to [`BATCH`] unused nodes and waits for them; true when
/// the batch was full and every deletion was applied (so more may be due).
async fn deleted_a_full_batch(server: &Server) -> bool {
    let never_used_ms = u64::try_from(server.config.container_max_never_used.as_millis()).unwrap_or(u64::MAX);
    let now = now_ms();
    let due = server.core.read(|state| state.tree().unused_nodes(now, never_used_ms, BATCH));
    if due.is_empty() {
        return false;
    }
    let full = due.len() == BATCH;
    let (deleted, all_applied) = propose_deletions(server, due, now, never_used_ms).await;
    if deleted > 0 {
        tracing::info!(deleted, "deleted unused containers and TTL nodes");
    }
    full && all_applied
}

/// Proposes a [`CommandOp::DeleteIfUnused`] of each of `paths`, stamped `now`, and waits for
/// them: how many were deleted, and whether every one was ordered (one that was not is
/// tried again by the next check).
pub(crate) async fn propose_deletions(
    server: &Server,
    paths: Vec<String>,
    now: i64,
    never_used_ms: u64,
) -> (usize, bool) {
    let pending: Vec<_> = paths
        .into_iter()
        .map(|path| {
            let op = CommandOp::DeleteIfUnused { path: path.clone(), never_used_ms };
            let cmd = Command { time_ms: now, session: SessionId(0), xid: 0, op };
            (path, server.replication.propose_expiry(cmd))
        })
        .collect();
    let (mut deleted, mut all_applied) = (0, true);
    for (path, pending) in pending {
        match pending.await {
            Ok(applied) => match applied.outcome {
                Outcome::Reply(Ok(_)) => {
                    deleted += 1;
                    tracing::debug!(%path, zxid = applied.zxid, "deleted an unused node");
                }
                outcome => tracing::debug!(%path, ?outcome, "in use again by the time its deletion applied"),
            },
            Err(rejected) => {
                all_applied = false;
                tracing::debug!(%path, %rejected, "deletion not ordered; the next check tries again");
            }
        }
    }
    (deleted, all_applied)
}
