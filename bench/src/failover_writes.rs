//! What the writer tasks of a failover measurement share, for Ward's ensemble
//! (`failover.rs`) and the rivals' (`rivals.rs`) alike: which writes count (those issued once
//! the killed leader is gone), the earliest acknowledgement of one, and the failures meanwhile.

use crate::sys::{Error, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub struct Writes {
    /// Set once the killed leader is reaped: a write issued after it can only be committed
    /// by a new leader.
    eligible_after: OnceLock<Instant>,
    /// The earliest acknowledgement of an eligible write.
    first_ack: watch::Sender<Option<Instant>>,
    acked: AtomicU64,
    /// Failures, by error.
    failed: Mutex<BTreeMap<String, u64>>,
    stop: AtomicBool,
}

impl Writes {
    pub fn new() -> Arc<Writes> {
        Arc::new(Writes {
            eligible_after: OnceLock::new(),
            first_ack: watch::channel(None).0,
            acked: AtomicU64::new(0),
            failed: Mutex::new(BTreeMap::new()),
            stop: AtomicBool::new(false),
        })
    }

    /// Writes issued from now on count; failures counted before are forgotten.
    pub fn leader_gone(&self) {
        let _ = self.eligible_after.set(Instant::now());
        if let Ok(mut failed) = self.failed.lock() {
            failed.clear();
        }
    }

    pub fn is_after_kill(&self) -> bool {
        self.eligible_after.get().is_some()
    }

    /// A write issued at `issued` was acknowledged now.
    pub fn acknowledged(&self, issued: Instant) {
        let acked = Instant::now();
        self.acked.fetch_add(1, Ordering::Relaxed);
        if self.eligible_after.get().is_some_and(|e| issued >= *e) {
            self.first_ack.send_if_modified(|first| {
                let earlier = first.is_none_or(|f| acked < f);
                if earlier {
                    *first = Some(acked);
                }
                earlier
            });
        }
    }

    pub fn acked(&self) -> u64 {
        self.acked.load(Ordering::Relaxed)
    }

    pub fn failed(&self, why: String) {
        if let Ok(mut failed) = self.failed.lock() {
            *failed.entry(why).or_default() += 1;
        }
    }

    pub fn failures(&self) -> BTreeMap<String, u64> {
        self.failed.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// The first acknowledgement of a write that counts, waiting at most `patience`.
    pub async fn first_ack(&self, patience: Duration) -> Result<Instant> {
        let mut first = self.first_ack.subscribe();
        let waited = tokio::time::timeout(patience, first.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(ack)) => ack.ok_or_else(|| Error("no first ack".into())),
            _ => Err(Error(format!("no write acknowledged within {patience:?} of the kill"))),
        }
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}
