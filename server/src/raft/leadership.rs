//! Leader-only duties, switched on and off as leadership moves, and the followers' half of
//! session liveness.
//!
//! * A new leader expires nobody until it has applied every entry of earlier terms (so it
//!   knows every session that exists and every expiry already decided) and has given every
//!   session a fresh timeout plus `grace`: heartbeats are not logged, so it cannot know when
//!   another member last heard from a client. `grace` covers the time a deposed leader may
//!   have gone on accepting that client's heartbeats.
//! * A member that does not lead passes the sessions its clients were heard from to the
//!   leader every [`TOUCH_EVERY`] (ZooKeeper's followers do the same in their pings).

use super::types::Raft;
use crate::core::Core;
use crate::peer::{Channel, PeerRequest, PeerResponse, Peers};
use openraft::ServerState;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often a follower passes touches on. A small fraction of the shortest session
/// timeout, so a lost round or two costs nothing.
pub const TOUCH_EVERY: Duration = Duration::from_millis(300);

/// Runs until `cancel`: switches the expiry sweep with readiness as leader.
pub async fn run_duties(raft: Raft, core: Arc<Core>, grace: Duration, cancel: CancellationToken) {
    let mut metrics = raft.metrics();
    let mut led_term = None;
    loop {
        let (leading, term) = {
            let m = metrics.borrow_and_update();
            (m.state == ServerState::Leader, m.current_term)
        };
        if !leading && led_term.take().is_some() {
            core.sessions.set_sweeping(false);
            tracing::info!(term, "no longer the leader: session expiry off");
        }
        if leading && led_term != Some(term) {
            // Every entry of earlier terms is applied once a read index of this term is.
            match raft.ensure_linearizable().await {
                Ok(_) => {
                    core.sessions.restart_deadlines(grace);
                    core.sessions.set_sweeping(true);
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
                        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
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

/// Runs until `cancel`: passes this member's touched sessions to the leader.
pub async fn pass_touches(raft: Raft, core: Arc<Core>, peers: Arc<Peers>, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(TOUCH_EVERY);
    // Touches of a round that did not reach the leader go with the next one.
    let mut carried: Vec<ward_proto::SessionId> = Vec::new();
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        let mut touched = core.sessions.take_touched();
        touched.append(&mut carried);
        let target = {
            let m = raft.metrics().borrow().clone();
            match m.current_leader {
                Some(leader) if leader != m.id => {
                    m.membership_config.membership().get_node(&leader).map(|n| (leader, n.addr.clone()))
                }
                // Leading: its own tracker is the one that counts.
                _ => None,
            }
        };
        let Some((leader, addr)) = target else { continue };
        if touched.is_empty() {
            continue;
        }
        let n = touched.len();
        let request = PeerRequest::Touch(touched.clone());
        match peers.call(leader, &addr, Channel::Client, request, TOUCH_EVERY * 3).await {
            Ok(PeerResponse::Touch(Ok(gone))) if !gone.is_empty() => {
                tracing::debug!(leader, sessions = n, gone = gone.len(), "touches passed; some sessions are gone");
            }
            Ok(PeerResponse::Touch(Ok(_))) => {}
            answer => {
                tracing::debug!(leader, ?answer, "touches not passed; carried to the next round");
                touched.sort_unstable();
                touched.dedup();
                carried = touched;
            }
        }
    }
}
