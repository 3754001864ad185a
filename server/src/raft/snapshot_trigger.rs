//! When to take a snapshot: once the log written since the last one has outgrown a share of
//! that snapshot's size (`--snapshot-log-percent`, 100 % by default), and at least one log
//! segment. A fixed count of entries would re-serialize a large tree every few seconds under
//! write load, and let a small tree's log grow for nothing; by size, the work of a snapshot
//! stays in proportion to the log it lets the server purge, and a restart never replays more
//! log than about that share of the state.
//!
//! The log store counts the bytes of every append ([`SnapshotTrigger::logged`]); the state
//! machine reports each snapshot it begins and writes. [`run`] asks openraft for a snapshot
//! when one is due and none is being built. A clean stop takes one too when the log since
//! the last would take a restart long to replay ([`SnapshotTrigger::worth_at_stop`]).

use super::types::Raft;
use crate::metrics::snapshots::SnapshotFigures;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The least log since the last snapshot that a clean stop takes a snapshot for: less
/// replays in a fraction of a second.
pub(crate) const AT_STOP_FLOOR: u64 = 4 << 20;

/// See the module's doc.
pub(crate) struct SnapshotTrigger {
    /// The least log worth a snapshot: one segment.
    floor: u64,
    /// Of the last snapshot's size; 0 turns the trigger off.
    percent: u64,
    log_bytes: AtomicU64,
    snapshot_bytes: AtomicU64,
    building: AtomicBool,
    due: Notify,
    /// Where the server's snapshot figures are published.
    figures: Arc<SnapshotFigures>,
}

impl SnapshotTrigger {
    /// `snapshot_bytes`: the size of the snapshot the server started from (0 if none);
    /// `log_bytes`: the log it found.
    pub(crate) fn new(
        (floor, percent): (u64, u64),
        snapshot_bytes: u64,
        log_bytes: u64,
        figures: Arc<SnapshotFigures>,
    ) -> Arc<SnapshotTrigger> {
        let trigger = SnapshotTrigger {
            floor,
            percent,
            log_bytes: AtomicU64::new(log_bytes),
            snapshot_bytes: AtomicU64::new(snapshot_bytes),
            building: AtomicBool::new(false),
            due: Notify::new(),
            figures,
        };
        trigger.publish();
        Arc::new(trigger)
    }

    /// How much log makes a snapshot due.
    pub(crate) fn threshold(&self) -> u64 {
        let share = self.snapshot_bytes.load(Ordering::Relaxed).saturating_mul(self.percent) / 100;
        self.floor.max(share)
    }

    /// Whether a snapshot is due now (and none is being built).
    pub(crate) fn is_due(&self) -> bool {
        self.percent > 0
            && !self.building.load(Ordering::Relaxed)
            && self.log_bytes.load(Ordering::Relaxed) >= self.threshold()
    }

    /// Whether a clean stop should take a snapshot first: the log since the last one is at
    /// least a quarter of that snapshot's size and [`AT_STOP_FLOOR`], and none is being
    /// built. Replaying a log costs a restart more per byte than a snapshot costs to write
    /// (every command decoded and applied, against a tree decoded whole), so a restart after
    /// a clean stop mostly loads the snapshot (docs/operations.md, "The data directory").
    pub(crate) fn worth_at_stop(&self) -> bool {
        let share = self.snapshot_bytes.load(Ordering::Relaxed) / 4;
        !self.building.load(Ordering::Relaxed) && self.log_bytes.load(Ordering::Relaxed) >= share.max(AT_STOP_FLOOR)
    }

    /// `bytes` more were written to the log.
    pub(crate) fn logged(&self, bytes: u64) {
        let total = self.log_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.figures.log_bytes.store(total, Ordering::Relaxed);
        if self.is_due() {
            self.due.notify_one();
        }
    }

    /// A snapshot of the state as applied so far begins (capturing it held the state's lock
    /// for `held`): the log is counted from here.
    pub(crate) fn began(&self, held: Duration) {
        self.building.store(true, Ordering::Relaxed);
        self.log_bytes.store(0, Ordering::Relaxed);
        self.figures.log_bytes.store(0, Ordering::Relaxed);
        self.figures.begun(held);
    }

    /// The snapshot begun last is written, `bytes` long (`None`: it failed or was dropped).
    /// A failed build leaves the log counted from when it began: the next try waits for a
    /// threshold more of log, not hammering a failing disk with one build after another.
    pub(crate) fn finished(&self, bytes: Option<u64>, took: Duration) {
        self.figures.finished(took);
        if let Some(bytes) = bytes {
            self.snapshot_bytes.store(bytes, Ordering::Relaxed);
        }
        self.building.store(false, Ordering::Relaxed);
        self.publish();
        // The log may have grown past the threshold while it was built.
        if self.is_due() {
            self.due.notify_one();
        }
    }

    /// A snapshot `bytes` long was installed from the leader, in place of the log.
    pub(crate) fn installed(&self, bytes: u64) {
        self.log_bytes.store(0, Ordering::Relaxed);
        self.snapshot_bytes.store(bytes, Ordering::Relaxed);
        self.publish();
    }

    fn publish(&self) {
        self.figures.log_bytes.store(self.log_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        self.figures.snapshot_bytes.store(self.snapshot_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        self.figures.threshold_bytes.store(self.threshold(), Ordering::Relaxed);
    }
}

/// Asks openraft for a snapshot whenever `trigger` says one is due, until `cancel`.
pub(crate) async fn run(raft: Raft, trigger: Arc<SnapshotTrigger>, cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            () = trigger.due.notified() => {}
        }
        if !trigger.is_due() {
            continue;
        }
        tracing::debug!(threshold = trigger.threshold(), "log outgrew its share of the last snapshot: snapshot due");
        if let Err(error) = raft.trigger().snapshot().await {
            tracing::warn!(%error, "cannot ask for a snapshot");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_once_the_log_outgrows_its_share_of_the_snapshot_and_a_segment() {
        let trigger = SnapshotTrigger::new((1000, 50), 0, 0, Arc::default());
        trigger.logged(999);
        assert!(!trigger.is_due(), "below one segment");
        trigger.logged(1);
        assert!(trigger.is_due());
        trigger.began(Duration::ZERO);
        assert!(!trigger.is_due(), "being built, and the log is counted afresh");
        trigger.logged(5000);
        assert!(!trigger.is_due(), "one at a time");
        trigger.finished(Some(10_000), Duration::ZERO);
        assert_eq!(trigger.threshold(), 5000, "half the snapshot's size");
        assert!(trigger.is_due(), "the log grew past it while the snapshot was built");
        trigger.began(Duration::ZERO);
        trigger.finished(None, Duration::ZERO);
        assert_eq!(trigger.threshold(), 5000, "a failed snapshot changes no size");
        assert!(!SnapshotTrigger::new((1, 0), 0, u64::MAX, Arc::default()).is_due(), "0 % turns it off");
    }
}
