//! The watch registry: one-shot watches by path, persistent watches (ZooKeeper's `addWatch`),
//! and the outbound queue of each connection.
//!
//! Watches are local to the server holding the connection and never logged. Apply reports
//! [`Change`]s and [`WatchRegistry::fire`] turns them into events, while apply still holds
//! the state machine's write lock: a reader that sees a change therefore finds its event
//! already queued on the connection, and the connection writes queued events before the
//! reply (guarantee G6).

use crate::command::Change;
use crate::sync::{Mutex, MutexGuard};
use std::collections::{HashMap, HashSet};
use std::sync::PoisonError;
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
    /// This member lost contact with the ensemble's leader: the client should move on.
    OutOfContact,
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

/// A watch that stays armed when it fires (ZooKeeper 3.6+ `addWatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersistentMode {
    /// Every event on the path itself, children changes included.
    Exact,
    /// Events on the path and every descendant, except `NodeChildrenChanged`; the event
    /// names the node that changed.
    Recursive,
}

/// One watch a connection has on a path, as a removal or a check sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Armed {
    OneShot(WatchKind),
    Persistent(PersistentMode),
}

#[derive(Default)]
struct Watches {
    by_kind: HashMap<(WatchKind, String), HashSet<ConnId>>,
    /// Persistent watches by path. Kept apart from one-shot ones: a connection may have both
    /// on one path, and firing must not remove these.
    persistent: HashMap<String, HashMap<ConnId, PersistentMode>>,
    conns: HashMap<ConnId, Watcher>,
}

struct Watcher {
    tx: OutboundTx,
    /// Reverse index, so a closing connection drops its watches without a scan.
    paths: HashSet<(WatchKind, String)>,
    persistent: HashSet<String>,
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
        self.lock().conns.insert(conn, Watcher { tx, paths: HashSet::new(), persistent: HashSet::new() });
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
            for path in watcher.persistent {
                w.remove_persistent(conn, &path);
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

    /// Arms (or re-arms with another mode) a persistent watch.
    pub fn add_persistent(&self, conn: ConnId, path: &str, mode: PersistentMode) {
        let mut w = self.lock();
        let Some(watcher) = w.conns.get_mut(&conn) else { return };
        watcher.persistent.insert(path.to_string());
        w.persistent.entry(path.to_string()).or_default().insert(conn, mode);
    }

    /// The watches `conn` has on `path`.
    pub fn armed(&self, conn: ConnId, path: &str) -> Vec<Armed> {
        let w = self.lock();
        let Some(watcher) = w.conns.get(&conn) else { return Vec::new() };
        let mut armed: Vec<Armed> = [WatchKind::Data, WatchKind::Exists, WatchKind::Child]
            .into_iter()
            .filter(|kind| watcher.paths.contains(&(*kind, path.to_string())))
            .map(Armed::OneShot)
            .collect();
        if let Some(mode) = w.persistent.get(path).and_then(|conns| conns.get(&conn)) {
            armed.push(Armed::Persistent(*mode));
        }
        armed
    }

    /// Disarms the watches of `conn` on `path` that `which` selects; true if any was.
    pub fn remove(&self, conn: ConnId, path: &str, which: impl Fn(Armed) -> bool) -> bool {
        let mut w = self.lock();
        let mut removed = false;
        for kind in [WatchKind::Data, WatchKind::Exists, WatchKind::Child] {
            let key = (kind, path.to_string());
            let Some(watcher) = w.conns.get_mut(&conn) else { return false };
            if which(Armed::OneShot(kind)) && watcher.paths.remove(&key) {
                removed = true;
                if let Some(set) = w.by_kind.get_mut(&key) {
                    set.remove(&conn);
                    if set.is_empty() {
                        w.by_kind.remove(&key);
                    }
                }
            }
        }
        let mode = w.persistent.get(path).and_then(|conns| conns.get(&conn)).copied();
        if mode.is_some_and(|m| which(Armed::Persistent(m))) {
            w.remove_persistent(conn, path);
            if let Some(watcher) = w.conns.get_mut(&conn) {
                watcher.persistent.remove(path);
            }
            removed = true;
        }
        removed
    }

    /// Number of armed watches (a connection watching one path twice counts once).
    /// Watches `conn` has armed, one-shot and persistent.
    pub fn count_of(&self, conn: ConnId) -> usize {
        self.lock().conns.get(&conn).map_or(0, |w| w.paths.len() + w.persistent.len())
    }

    pub fn len(&self) -> usize {
        self.lock().count()
    }

    /// Connections with at least one watch, distinct watched paths, and watches.
    pub fn summary(&self) -> (usize, usize, usize) {
        let w = self.lock();
        let conns = w.conns.values().filter(|c| !c.paths.is_empty() || !c.persistent.is_empty()).count();
        let paths: HashSet<&str> =
            w.by_kind.keys().map(|(_, p)| p.as_str()).chain(w.persistent.keys().map(String::as_str)).collect();
        (conns, paths.len(), w.count())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fires the watches the changes trigger. Each connection gets at most one event per
    /// change, whichever of its watches on the path triggered.
    pub fn fire(&self, changes: &[Change], zxid: Zxid) {
        let mut w = self.lock();
        if w.by_kind.is_empty() && w.persistent.is_empty() {
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
            if !w.persistent.is_empty() {
                w.fire_persistent(path, kind, zxid, &mut told);
            }
        }
    }
}

impl Watches {
    fn count(&self) -> usize {
        self.by_kind.values().map(HashSet::len).sum::<usize>()
            + self.persistent.values().map(HashMap::len).sum::<usize>()
    }

    fn remove_persistent(&mut self, conn: ConnId, path: &str) {
        if let Some(conns) = self.persistent.get_mut(path) {
            conns.remove(&conn);
            if conns.is_empty() {
                self.persistent.remove(path);
            }
        }
    }

    /// Persistent watches on `path` itself, and recursive ones on its ancestors, fire
    /// without being removed; a connection already told of this change is not told twice.
    fn fire_persistent(&self, path: &str, kind: EventKind, zxid: Zxid, told: &mut HashSet<ConnId>) {
        let mut at = path;
        loop {
            let exact = at == path;
            for (conn, mode) in self.persistent.get(at).into_iter().flatten() {
                let fires = match mode {
                    PersistentMode::Exact => exact,
                    PersistentMode::Recursive => kind != EventKind::NodeChildrenChanged,
                };
                if fires && told.insert(*conn) {
                    if let Some(watcher) = self.conns.get(conn) {
                        let event = WatchEvent { kind, path: path.to_string(), zxid };
                        let _ = watcher.tx.send(Outbound::Event(event));
                    }
                }
            }
            if at == "/" {
                return;
            }
            at = ward_proto::path::parent(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::Outbox;

    fn events(rx: &mut crate::outbox::OutboxRx) -> Vec<(EventKind, String)> {
        let mut out = Vec::new();
        while let Ok(Outbound::Event(e)) = rx.try_recv() {
            out.push((e.kind, e.path));
        }
        out
    }

    #[test]
    fn persistent_watches_stay_armed_and_recursive_ones_skip_children_changes() {
        let reg = WatchRegistry::default();
        let (tx, mut rx) = Outbox::channel();
        reg.add_conn(1, tx);
        reg.add_persistent(1, "/a", PersistentMode::Exact);
        reg.add_persistent(1, "/", PersistentMode::Recursive);
        reg.register(1, WatchKind::Data, "/a");
        let changes = [Change::DataChanged("/a".into()), Change::ChildrenChanged("/a".into())];
        reg.fire(&changes, 5);
        reg.fire(&[Change::Created("/a/b/c".into()), Change::ChildrenChanged("/a/b".into())], 6);
        assert_eq!(
            events(&mut rx),
            [
                // One event per change for the connection, whichever watches matched.
                (EventKind::NodeDataChanged, "/a".to_string()),
                (EventKind::NodeChildrenChanged, "/a".to_string()),
                (EventKind::NodeCreated, "/a/b/c".to_string()),
            ]
        );
        assert_eq!(reg.armed(1, "/a"), [Armed::Persistent(PersistentMode::Exact)], "the one-shot watch fired");
        assert!(reg.remove(1, "/a", |a| matches!(a, Armed::Persistent(_))));
        assert!(!reg.remove(1, "/a", |_| true));
        assert_eq!(reg.summary(), (1, 1, 1));
        reg.remove_conn(1);
        assert_eq!((reg.len(), reg.summary()), (0, (0, 0, 0)));
    }
}
