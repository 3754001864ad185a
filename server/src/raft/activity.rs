//! What the log's disk is doing: appends handed to the I/O thread and appends made durable,
//! counted since the log opened. The proposer watches it to hand openraft its next batch the
//! moment the disk is free, with everything that queued while it synced ([`super::proposer`]).

use tokio::sync::watch;

/// The two counts. The disk is idle when they are equal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub started: u64,
    pub flushed: u64,
}

impl Counts {
    /// No append is being written or synced.
    pub fn idle(self) -> bool {
        self.started == self.flushed
    }
}

/// The log store's side. Updated from openraft's core (a start) and from the I/O thread (a
/// flush): a `watch` channel can be sent to from any thread.
pub struct Activity(watch::Sender<Counts>);

impl Default for Activity {
    fn default() -> Self {
        Activity(watch::Sender::new(Counts::default()))
    }
}

impl Activity {
    pub fn started(&self) {
        self.0.send_modify(|c| c.started += 1);
    }

    pub fn flushed(&self) {
        self.0.send_modify(|c| c.flushed += 1);
    }

    pub fn watch(&self) -> watch::Receiver<Counts> {
        self.0.subscribe()
    }
}
