//! The request, byte, log and lock-handoff figures for `/metrics`, read from the atomics
//! [`crate::metrics`] keeps. A request series appears once a request of its listener and
//! operation has been answered (an error series: once one failed with that code), so a
//! scrape carries the operations in use, not every pair that could be.

use crate::metrics::histogram::{Series, NANOS};
use crate::metrics::locks::{LockFigures, MILLIS};
use crate::metrics::log::LogFigures;
use crate::metrics::snapshots::SnapshotFigures;
use crate::metrics::{Failure, Listener, Metrics, Op};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::Ordering;

type Labels = Vec<(&'static str, &'static str)>;

pub(crate) fn register_requests(registry: &mut Registry, metrics: &Metrics) {
    let requests = Family::<Labels, Counter>::default();
    let mut durations = Series { series: Vec::new() };
    let errors = Family::<Labels, Counter>::default();
    let pushed = Family::<Labels, Counter>::default();
    let bytes_in = Family::<Labels, Counter>::default();
    let bytes_out = Family::<Labels, Counter>::default();
    for listener in Listener::ALL {
        let figures = metrics.listener(listener);
        let of_listener = vec![("listener", listener.name())];
        for op in Op::ALL.iter().copied() {
            let latency = figures.latency(op);
            if latency.count() == 0 {
                continue;
            }
            let labels = vec![("listener", listener.name()), ("op", op.name())];
            let snapshot = latency.snapshot(NANOS);
            requests.get_or_create(&labels).inc_by(snapshot.count);
            durations.series.push((labels, snapshot));
            for failure in Failure::ALL.iter().copied() {
                let n = figures.errors(op, failure);
                if n > 0 {
                    let labels = vec![("listener", listener.name()), ("op", op.name()), ("code", failure.name())];
                    errors.get_or_create(&labels).inc_by(n);
                }
            }
        }
        pushed.get_or_create(&of_listener).inc_by(figures.pushed.load(Ordering::Relaxed));
        bytes_in.get_or_create(&of_listener).inc_by(figures.bytes_in.load(Ordering::Relaxed));
        bytes_out.get_or_create(&of_listener).inc_by(figures.bytes_out.load(Ordering::Relaxed));
    }
    registry.register("requests", "Requests answered, per listener and operation", requests);
    registry.register_with_unit(
        "request_duration",
        "Time from a request's frame decoded to its reply queued on the connection",
        Unit::Seconds,
        durations,
    );
    registry.register("request_errors", "Requests answered with an error, per error code", errors);
    registry.register(
        "pushed_messages",
        "Messages sent unasked: watch events, lock grants, session-expired notices",
        pushed,
    );
    registry.register_with_unit("received", "Bytes read from clients, per listener", Unit::Bytes, bytes_in);
    registry.register_with_unit("sent", "Bytes written to clients, per listener", Unit::Bytes, bytes_out);
}

pub(crate) fn register_log(registry: &mut Registry, log: &LogFigures) {
    registry.register_with_unit(
        "log_fsync_duration",
        "Time each fdatasync of the log took",
        Unit::Seconds,
        log.fsync.snapshot(NANOS),
    );
    registry.register("log_append_entries", "Raft entries per durable log append", log.append_entries.snapshot(1.0));
    registry.register(
        "log_append_commands",
        "Commands per durable log append (group commit)",
        log.append_commands.snapshot(1.0),
    );
}

pub(crate) fn register_snapshots(registry: &mut Registry, snap: &SnapshotFigures) {
    use std::sync::atomic::Ordering::Relaxed;
    let gauge = |v: &std::sync::atomic::AtomicU64| ConstGauge::new(i64::try_from(v.load(Relaxed)).unwrap_or(i64::MAX));
    let seconds = |v: &std::sync::atomic::AtomicU64| ConstGauge::new(v.load(Relaxed) as f64 / 1e9);
    registry.register(
        "snapshots_begun",
        "Snapshots begun (the state captured)",
        ConstCounter::new(snap.begun.load(Relaxed)),
    );
    registry.register(
        "snapshots_finished",
        "Snapshots written or failed (one is in progress while this is below ward_snapshots_begun_total)",
        ConstCounter::new(snap.finished.load(Relaxed)),
    );
    registry.register_with_unit("snapshot", "Size of the last snapshot", Unit::Bytes, gauge(&snap.snapshot_bytes));
    registry.register_with_unit(
        "snapshot_log",
        "Log written since the last snapshot began",
        Unit::Bytes,
        gauge(&snap.log_bytes),
    );
    registry.register_with_unit(
        "snapshot_threshold",
        "Log size at which the next snapshot is due",
        Unit::Bytes,
        gauge(&snap.threshold_bytes),
    );
    registry.register_with_unit(
        "snapshot_capture",
        "How long the last snapshot held the state's lock (writes waited)",
        Unit::Seconds,
        seconds(&snap.capture_ns),
    );
    registry.register_with_unit(
        "snapshot_build",
        "How long the last snapshot took from capture to its file in place (writes went on)",
        Unit::Seconds,
        seconds(&snap.build_ns),
    );
}

pub(crate) fn register_lock_handoffs(registry: &mut Registry, locks: &LockFigures) {
    registry.register_with_unit(
        "lock_wait",
        "Per grant after waiting: time from the waiter's contender creation to its grant",
        Unit::Seconds,
        locks.waits.snapshot(MILLIS),
    );
    registry.register(
        "lock_involuntary_releases",
        "Locks released because the holder's session expired",
        ConstCounter::new(locks.involuntary_releases()),
    );
}
