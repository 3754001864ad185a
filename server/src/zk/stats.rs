//! Per-connection counters of the ZooKeeper listener, for the four-letter words (`stat`,
//! `cons`). Kept beside the connections, never in the replicated state. The listener's
//! totals are its request metrics ([`crate::metrics::requests`]), as `/metrics` shows them.

use crate::conn::ConnId;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// One connection's counters (ZooKeeper's `cons` line).
pub(crate) struct ConnStats {
    pub peer: SocketAddr,
    pub(crate) established_ms: i64,
    pub session: AtomicU64,
    pub timeout_ms: AtomicU32,
    pub received: AtomicU64,
    pub sent: AtomicU64,
    pub(crate) last_cxid: AtomicI64,
    pub last_zxid: AtomicU64,
}

impl ConnStats {
    pub(crate) fn received(&self, xid: i32) {
        self.received.fetch_add(1, Ordering::Relaxed);
        if xid > 0 {
            self.last_cxid.store(i64::from(xid), Ordering::Relaxed);
        }
    }

    pub(crate) fn sent(&self, _xid: i32, zxid: u64) {
        self.sent_event();
        self.last_zxid.store(zxid, Ordering::Relaxed);
    }

    pub(crate) fn sent_event(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }
}

/// What every ZooKeeper connection of one listener shares.
pub(crate) struct Shared {
    pub addr: SocketAddr,
    pub started: Instant,
    conns: Mutex<BTreeMap<ConnId, Arc<ConnStats>>>,
}

impl Shared {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        Shared { addr, started: Instant::now(), conns: Mutex::default() }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<ConnId, Arc<ConnStats>>> {
        // Counters only: a panic elsewhere cannot leave them inconsistent in a way that matters.
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn open(&self, conn: ConnId, peer: SocketAddr) -> Arc<ConnStats> {
        let stats = Arc::new(ConnStats {
            peer,
            established_ms: crate::now_ms(),
            session: AtomicU64::new(0),
            timeout_ms: AtomicU32::new(0),
            received: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            last_cxid: AtomicI64::new(0),
            last_zxid: AtomicU64::new(0),
        });
        self.lock().insert(conn, stats.clone());
        stats
    }

    pub(crate) fn close(&self, conn: ConnId) {
        self.lock().remove(&conn);
    }

    pub(crate) fn connections(&self) -> Vec<Arc<ConnStats>> {
        self.lock().values().cloned().collect()
    }
}
