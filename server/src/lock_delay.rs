//! The end of lock-delays: the ready leader deletes each lock contender held over for its
//! lock-delay ([`NodeKind::LockDelay`]) once the delay has passed, by a
//! [`DeleteIfUnused`](crate::command::CommandOp::DeleteIfUnused) command; its apply grants
//! the lock to the next contender, as any release does.
//!
//! The delay runs from the session's end, the `mtime` the expiry command stamped, and the
//! log decides: apply deletes the node only if the deleting command's own time is past
//! `mtime + delay`. The two times may come from different clocks: the deletion's from a
//! leader, the session's end from the leader that expired it, or from whichever member took
//! the command that ended it (a named owner's new session, an expiry from the console), and
//! an expiry may wait in a queue before it is stamped into the log. So the leader also keeps a
//! clock of its own: it proposes a node's deletion only once the whole delay has passed,
//! on its monotonic clock, since it first saw the node while leading. A leader that takes
//! over a running delay thus waits it out again in full (later, never sooner: a lower
//! bound is what the delay promises), as a new leader gives every session a fresh timeout.

use crate::tree::cleanup::unused;
use crate::tree::NodeKind;
use crate::{now_ms, Server};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// How often the leader looks: the most a delay runs over, besides the proposal's way
/// through the log.
const TICK: Duration = Duration::from_millis(50);

/// Deletions proposed at once.
const BATCH: usize = 1000;

pub(crate) async fn run(server: Arc<Server>, cancel: CancellationToken) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // When this member, leading, first saw each held-over node.
    let mut seen: HashMap<String, Instant> = HashMap::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = interval.tick() => {}
        }
        if !server.local.ready.is_ready() {
            seen.clear();
            continue;
        }
        let due = due(&server, &mut seen);
        if due.is_empty() {
            continue;
        }
        let (deleted, _) = crate::cleanup::propose_deletions(&server, due, now_ms(), 0).await;
        if deleted > 0 {
            tracing::info!(deleted, "lock-delays over: the next contenders may be granted");
        }
    }
}

/// The held-over nodes whose delay has passed both by the wall clock (as apply will judge)
/// and since this leader first saw them; forgets nodes that are gone.
fn due(server: &Server, seen: &mut HashMap<String, Instant>) -> Vec<String> {
    let (now, wall) = (Instant::now(), now_ms());
    server.core.read(|state| {
        let mut kept = HashMap::with_capacity(seen.len());
        let mut due = Vec::new();
        for (path, node) in state.tree().lock_delayed() {
            let NodeKind::LockDelay(delay_ms) = node.kind() else { continue };
            let first = seen.get(path).copied().unwrap_or(now);
            kept.insert(path.to_string(), first);
            let waited = now.saturating_duration_since(first) >= Duration::from_millis(delay_ms);
            if waited && unused(node, wall, 0) && due.len() < BATCH {
                due.push(path.to_string());
            }
        }
        *seen = kept;
        due
    })
}
