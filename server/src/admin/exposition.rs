//! The server's figures as Prometheus text (OpenMetrics), built afresh for every scrape.
//!
//! Every figure is read at scrape time from where it already lives (the state machine, the
//! watch registry, the request, log and lock-handoff metrics, the log's Raft metrics), into
//! a registry made for this one answer: nothing is kept between scrapes, and a lock
//! directory that is gone no longer appears. Names start with `ward_`; counters end in `_total`, durations in
//! `_seconds`. docs/operations.md lists them.

use super::locks::{self, LockSurvey};
use super::traffic;
use crate::Server;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::{AtomicU64, Ordering};

type Labels = Vec<(&'static str, String)>;
type Seconds = Gauge<f64, AtomicU64>;

/// The answer to `GET /metrics`.
pub(crate) fn render(server: &Server) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::with_prefix("ward");
    let (stats, survey) = server
        .core
        .read(|state| (server.local.stats(state), locks::survey(&state.tree, server.config.metrics_max_locks)));
    let gauge = |v: u64| ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
    registry.register("znodes", "Nodes in the tree, the root included", gauge(stats.znodes));
    registry.register("sessions", "Live sessions", gauge(stats.sessions));
    registry.register("watches", "Watches armed on this server", gauge(stats.watches));
    registry.register("last_zxid", "The zxid of the last applied command", gauge(stats.last_zxid));
    registry.register("lock_grants", "Lock attempts granted after waiting", ConstCounter::new(stats.lock_grants));
    registry.register(
        "log_fsyncs",
        "fdatasync calls that made log appends durable",
        ConstCounter::new(stats.log_fsyncs),
    );
    registry.register(
        "connections_refused",
        "Client connections refused at accept, past --max-connections or --max-connections-per-ip",
        ConstCounter::new(server.local.metrics.refused_connections()),
    );
    registry.register(
        "connections_overflowed",
        "Client connections closed for passing --max-outbound-bytes",
        ConstCounter::new(server.local.metrics.outbound_overflows()),
    );
    registry.register(
        "connections_parked",
        "Client connections waiting with nothing in flight, holding no task state of their own (docs/architecture.md)",
        gauge(server.local.metrics.parked.load(std::sync::atomic::Ordering::Relaxed)),
    );
    registry.register(
        "ready",
        "1 while this server can serve clients (see /readyz)",
        gauge(u64::from(server.replication.in_contact())),
    );
    let connections = Family::<Labels, Gauge>::default();
    for (listener, count) in [("ward", &server.connections.ward), ("zookeeper", &server.connections.zookeeper)] {
        let count = i64::try_from(count.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        connections.get_or_create(&vec![("listener", listener.to_string())]).set(count);
    }
    registry.register("connections", "Client connections open, per listener", connections);
    let metrics = &server.local.metrics;
    traffic::register_requests(&mut registry, metrics);
    traffic::register_log(&mut registry, &metrics.log);
    traffic::register_snapshots(&mut registry, &metrics.snapshots);
    traffic::register_lock_handoffs(&mut registry, &metrics.locks);
    register_raft(&mut registry, server);
    register_locks(&mut registry, &survey, crate::now_ms());
    let mut text = String::new();
    encode(&mut text, &registry)?;
    Ok(text)
}

fn register_raft(registry: &mut Registry, server: &Server) {
    let Some(raft) = server.replication.raft_figures() else { return };
    let gauge = |v: u64| ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
    let roles = Family::<Labels, Gauge>::default();
    for role in ["leader", "follower", "candidate", "learner", "shutdown"] {
        roles.get_or_create(&vec![("role", role.to_string())]).set(i64::from(raft.role == role));
    }
    registry.register("raft_role", "1 for this member's Raft role, 0 for the others", roles);
    registry.register("raft_is_leader", "1 while this member leads", gauge(u64::from(raft.role == "leader")));
    registry.register("raft_term", "The current Raft term", gauge(raft.term));
    registry.register(
        "raft_last_log_index",
        "Index of the last entry in this member's log",
        gauge(raft.last_log_index),
    );
    registry.register("raft_applied_index", "Index of the last entry applied here", gauge(raft.applied_index));
    registry.register(
        "raft_fast_elections",
        "Elections this member started at once because its leader's peer port refused connections",
        prometheus_client::metrics::counter::ConstCounter::new(raft.fast_elections),
    );
    registry.register(
        "ensemble_level",
        "The ensemble's release level as this member knows it: the lowest of its members' (only the leader hears every member's)",
        gauge(u64::from(raft.ensemble_level)),
    );
    let levels = Family::<Labels, Gauge>::default();
    for (member, level) in raft.member_levels.iter().filter_map(|(m, l)| Some((m, (*l)?))) {
        levels.get_or_create(&vec![("member", member.to_string())]).set(i64::from(level));
    }
    registry.register("member_level", "Each member's release level, as this member heard it", levels);
    let lag = Family::<Labels, Gauge>::default();
    for (member, entries) in &raft.lag {
        lag.get_or_create(&vec![("member", member.to_string())]).set(i64::try_from(*entries).unwrap_or(i64::MAX));
    }
    registry.register(
        "raft_replication_lag_entries",
        "On the leader: entries each other member lacks of the leader's log",
        lag,
    );
}

fn register_locks(registry: &mut Registry, survey: &LockSurvey, now_ms: i64) {
    let seconds_since = |ms: i64| (now_ms.saturating_sub(ms).max(0) as f64) / 1000.0;
    let waiters = Family::<Labels, Gauge>::default();
    let holding = Family::<Labels, Gauge>::default();
    let holder_age = Family::<Labels, Seconds>::default();
    let waiter_age = Family::<Labels, Seconds>::default();
    let delay_left = Family::<Labels, Seconds>::default();
    for lock in &survey.top {
        if let Some(until) = lock.lock_delay_until_ms {
            let left = (until.saturating_sub(now_ms).max(0) as f64) / 1000.0;
            delay_left.get_or_create(&vec![("lock", lock.dir.clone())]).set(left);
        }
        let labels = vec![("lock", lock.dir.clone())];
        waiters.get_or_create(&labels).set(i64::try_from(lock.waiters).unwrap_or(i64::MAX));
        holding.get_or_create(&labels).set(i64::try_from(lock.holding).unwrap_or(i64::MAX));
        if let Some(ms) = lock.oldest_waiter_ms {
            waiter_age.get_or_create(&labels).set(seconds_since(ms));
        }
        for holder in &lock.holders {
            let labels = vec![("lock", lock.dir.clone()), ("session", format!("{:#x}", holder.session.0))];
            holder_age.get_or_create(&labels).set(seconds_since(holder.ctime_ms));
        }
    }
    let directories = i64::try_from(survey.directories).unwrap_or(i64::MAX);
    registry.register(
        "lock_directories",
        "Lock directories in the tree (all, reported or not)",
        ConstGauge::new(directories),
    );
    registry.register("lock_waiters", "Contenders waiting in each reported lock directory", waiters);
    registry.register("lock_holders", "Contenders holding in each reported lock directory", holding);
    registry.register_with_unit(
        "lock_holder_age",
        "Per holder: time since its contender node was created (includes any wait before the grant)",
        Unit::Seconds,
        holder_age,
    );
    registry.register_with_unit(
        "lock_oldest_waiter_age",
        "Time the longest-waiting contender of each reported lock directory has waited",
        Unit::Seconds,
        waiter_age,
    );
    registry.register_with_unit(
        "lock_delay_remaining",
        "Per lock held over for its lock-delay (its holder's session ended without releasing): time until the next contender may be granted",
        Unit::Seconds,
        delay_left,
    );
}
