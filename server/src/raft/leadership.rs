//! Leader-only duties, switched on and off as leadership moves, and the followers' half of
//! session liveness.
//!
//! * A new leader expires nobody until it has applied every entry of earlier terms (so it
//!   knows every session that exists and every expiry already decided) and has given every
//!   session a fresh timeout plus `grace`: heartbeats are not logged, so it cannot know when
//!   another member last heard from a client. `grace` covers the time a deposed leader may
//!   have gone on accepting that client's heartbeats.
//! * The followers' half, passing touched sessions to the leader, is in [`super::contact`].

use super::types::Raft;
use crate::local::Local;
use openraft::async_runtime::WatchReceiver;
use openraft::raft::ReadPolicy;
use openraft::ServerState;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Runs until `cancel`: switches the expiry sweep with readiness as leader.
pub(crate) async fn run_duties(raft: Raft, local: Arc<Local>, grace: Duration, cancel: CancellationToken) {
    let mut metrics = raft.metrics();
    let mut led_term = None;
    loop {
        let (leading, term) = {
            let m = metrics.borrow_watched();
            (m.state == ServerState::Leader, m.current_term)
        };
        // Also when it leads again in a later term without this task having seen it follow
        // in between: deadlines from the earlier term must not be swept meanwhile.
        if (!leading || led_term != Some(term)) && led_term.take().is_some() {
            local.sessions.not_leading();
            tracing::info!(term, "no longer the leader of the term it got ready in: session expiry off");
        }
        if leading && led_term != Some(term) {
            // Every entry of earlier terms is applied once a read index of this term is.
            match raft.ensure_linearizable(ReadPolicy::ReadIndex).await {
                Ok(_) => {
                    local.sessions.ready_to_lead(grace);
                    led_term = Some(term);
                    tracing::info!(
                        term,
                        grace_ms = grace.as_millis() as u64,
                        "leading: sessions get a fresh timeout, expiry on"
                    );
                }
                Err(error) => {
                    tracing::debug!(%error, "not ready to lead yet");
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        // Soon: writes and resuming clients wait for this leader to be ready.
                        _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                    }
                    continue;
                }
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            changed = metrics.changed() => if changed.is_err() { return },
        }
    }
}
