//! The watch registry: one-shot watches by path, and the outbound queue of each connection.
//!
//! Watches are local to the server holding the connection and never logged. Apply reports
//! [`Change`]s and [`WatchRegistry::fire`] turns them into events, while apply still holds
//! the state machine's write lock: a reader that sees a change therefore finds its event
//! already queued on the connection, and the connection writes queued events before the
//! reply (guarantee G6).

use crate::command::Change;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use ward_proto::{EventKind, WatchEvent, WatchKind, Zxid};

/// Identifies one client connection on this server.
pub type ConnId = u64;

/// Why the server is closing a connection on its own initiative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The session ended (expired, or closed by another connection).
    SessionEnded,
    /// The session was resumed on a newer connection.
    SessionMoved,
}

/// What the rest of the server can push onto a connection besides replies.
#[derive(Debug)]
pub enum Outbound {
    Event(WatchEvent),
    /// A lock contender of the connection's session now holds its lock.
    LockGranted {
        path: String,
        token: Zxid,
    },
    Close(CloseReason),
}

pub use crate::outbox::OutboundTx;

#[derive(Default)]
struct Watches {
    by_kind: HashMap<(WatchKind, String), HashSet<ConnId>>,
    conns: HashMap<ConnId, Watcher>,
}

struct Watcher {
    tx: OutboundTx,
    /// Reverse index, so a closing connection drops its watches without a scan.
    paths: HashSet<(WatchKind, String)>,
}

/// Watches of every connection on this server.
#[derive(Default)]
pub struct WatchRegistry {
    // A std mutex: critical sections are short map updates and never await.
    inner: Mutex<Watches>,
}

impl WatchRegistry {
    fn lock(&self) -> MutexGuard<'_, Watches> {
        // A panic elsewhere while holding the lock leaves the maps consistent (every update
        // is a single insert/remove), so keep serving rather than poison every connection.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn add_conn(&self, conn: ConnId, tx: OutboundTx) {
        self.lock().conns.insert(conn, Watcher { tx, paths: HashSet::new() });
    }

    pub fn remove_conn(&self, conn: ConnId) {
        let mut w = self.lock();
        if let Some(watcher) = w.conns.remove(&conn) {
            for key in watcher.paths {
                if let Some(set) = w.by_kind.get_mut(&key) {
                    set.remove(&conn);
                    if set.is_empty() {
                        w.by_kind.remove(&key);
                    }
                }
            }
        }
    }

    /// Arms a one-shot watch. Call it under the state machine's read lock, together with the
    /// read that decides the watch kind, so no change can slip between the two.
    pub fn register(&self, conn: ConnId, kind: WatchKind, path: &str) {
        let mut w = self.lock();
        let Some(watcher) = w.conns.get_mut(&conn) else { return };
        watcher.paths.insert((kind, path.to_string()));
        w.by_kind.entry((kind, path.to_string())).or_default().insert(conn);
    }

    /// Number of armed watches (a connection watching one path twice counts once).
    pub fn len(&self) -> usize {
        self.lock().by_kind.values().map(HashSet::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fires the watches the changes trigger. Each connection gets at most one event per
    /// change, whichever of its watches on the path triggered.
    pub fn fire(&self, changes: &[Change], zxid: Zxid) {
        let mut w = self.lock();
        if w.by_kind.is_empty() {
            return;
        }
        for change in changes {
            let (path, kind, kinds): (&str, EventKind, &[WatchKind]) = match change {
                Change::Created(p) => (p, EventKind::NodeCreated, &[WatchKind::Exists, WatchKind::Data]),
                Change::DataChanged(p) => (p, EventKind::NodeDataChanged, &[WatchKind::Data, WatchKind::Exists]),
                Change::Deleted(p) => {
                    (p, EventKind::NodeDeleted, &[WatchKind::Data, WatchKind::Exists, WatchKind::Child])
                }
                Change::ChildrenChanged(p) => (p, EventKind::NodeChildrenChanged, &[WatchKind::Child]),
                Change::SessionCreated { .. } | Change::SessionEnded(_) => continue,
            };
            let mut told = HashSet::new();
            for &watch_kind in kinds {
                let key = (watch_kind, path.to_string());
                let Some(conns) = w.by_kind.remove(&key) else { continue };
                for conn in conns {
                    let Some(watcher) = w.conns.get_mut(&conn) else { continue };
                    watcher.paths.remove(&key);
                    if told.insert(conn) {
                        let event = WatchEvent { kind, path: path.to_string(), zxid };
                        // A closed receiver means the connection is going away; its
                        // watches are dropped by `remove_conn`.
                        let _ = watcher.tx.send(Outbound::Event(event));
                    }
                }
            }
        }
    }
}
