//! The expiry sweep: sessions past their deadline are proposed for expiry. The log decides;
//! deleting the ephemerals is the apply of `ExpireSession`, so it replays identically.

use super::SessionTracker;
use crate::command::{Command, CommandOp};
use crate::now_ms;
use crate::replication::Replication;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// Sweeps `owner`'s session table (the server's local registries) every `tick`.
pub(crate) async fn run<L>(owner: Arc<L>, log: Arc<dyn Replication>, tick: Duration, cancel: CancellationToken)
where
    L: AsRef<SessionTracker> + Send + Sync + 'static,
{
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = interval.tick() => {}
        }
        for session in AsRef::<SessionTracker>::as_ref(&*owner).take_due(Instant::now()) {
            tracing::info!(%session, "session expired: heartbeats stopped");
            let cmd = Command { time_ms: now_ms(), session, xid: 0, op: CommandOp::ExpireSession };
            let pending = log.propose_expiry(cmd);
            let owner = owner.clone();
            tokio::spawn(async move {
                if let Err(rejected) = pending.await {
                    tracing::warn!(%session, %rejected, "expiry not ordered; will retry");
                    AsRef::<SessionTracker>::as_ref(&*owner).retry_expiry(session);
                }
            });
        }
    }
}
