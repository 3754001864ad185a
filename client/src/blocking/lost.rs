//! Hearing that a guard was lost without a thread of the caller's waiting for it: a std
//! channel that gets a message, or a callback that is run. A task on the client's runtime
//! waits in the caller's place.

use crate::lock::Validity;
use std::sync::mpsc;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// The loss watchers of one blocking guard. They end when the guard goes (dropped,
/// unlocked, resigned): a lock given up on purpose is not lost, and the tasks must not pile
/// up on the runtime for as long as the session lives, one per guard ever watched.
pub(super) struct LostWatch {
    validity: Validity,
    released: CancellationToken,
}

impl LostWatch {
    pub(super) fn new(validity: Validity) -> LostWatch {
        LostWatch { validity, released: CancellationToken::new() }
    }

    /// A receiver that gets one `()` once the guard is lost, and is disconnected without a
    /// message if the guard goes first.
    pub(super) fn signal(&self, rt: &Runtime) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        self.when_lost(rt, move || {
            // The caller may have stopped listening; that is its business.
            let _ = tx.send(());
        });
        rx
    }

    /// Runs `callback` once the guard is lost, never if the guard goes first. It runs on the
    /// runtime's blocking pool, not on its one worker thread, so a callback that blocks (or
    /// calls the blocking client) does not hold up the session's heartbeats.
    pub(super) fn on_lost(&self, rt: &Runtime, callback: impl FnOnce() + Send + 'static) {
        self.when_lost(rt, move || {
            drop(tokio::task::spawn_blocking(callback));
        });
    }

    fn when_lost(&self, rt: &Runtime, then: impl FnOnce() + Send + 'static) {
        let (validity, released) = (self.validity.clone(), self.released.clone());
        rt.spawn(async move {
            tokio::select! {
                // Released first: a loss after that is no news to anyone.
                biased;
                () = released.cancelled() => {}
                () = validity.lost() => then(),
            }
        });
    }
}

impl Drop for LostWatch {
    fn drop(&mut self) {
        self.released.cancel();
    }
}
