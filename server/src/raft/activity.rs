//! What the log's disk is doing: appends handed to the I/O thread and appends made durable,
//! counted since the log opened. The proposer watches it to hand openraft its next batch the
//! moment the disk is free, with everything that queued while it synced ([`super::proposer`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// The two counts. The disk is idle when they are equal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub started: u64,
    pub flushed: u64,
}

impl Counts {
    /// No append is being written or synced.
    pub(crate) fn idle(self) -> bool {
        self.started == self.flushed
    }
}

/// The log store's side. A start is counted from openraft's core, a flush from the I/O
/// thread. Only flushes wake the watcher: a start never makes the disk free.
#[derive(Default)]
pub(crate) struct Activity {
    started: Arc<AtomicU64>,
    flushed: watch::Sender<u64>,
}

impl Activity {
    pub(crate) fn started(&self) {
        self.started.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn flushed(&self) {
        self.flushed.send_modify(|n| *n += 1);
    }

    pub(crate) fn watch(&self) -> Watch {
        Watch { started: self.started.clone(), flushed: self.flushed.subscribe() }
    }
}

/// The proposer's side.
pub(crate) struct Watch {
    started: Arc<AtomicU64>,
    flushed: watch::Receiver<u64>,
}

impl Watch {
    /// The counts now; a later [`Watch::flushed`] waits for a flush after this.
    pub(crate) fn now(&mut self) -> Counts {
        let flushed = *self.flushed.borrow_and_update();
        Counts { started: self.started.load(Ordering::Acquire), flushed }
    }

    /// Resolves at the next flush (or at once if the log is gone).
    pub(crate) async fn flushed(&mut self) {
        let _ = self.flushed.changed().await;
    }
}
