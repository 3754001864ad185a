//! The watch registry: one-shot watches by path, persistent watches (ZooKeeper's `addWatch`,
//! Ward's `AddWatches`), the recent changes they can be replayed from ([`history`]), and the
//! outbound queue of each connection.
//!
//! Watches are local to the server holding the connection and never logged. Apply reports
//! [`Change`]s and [`WatchRegistry::fire`] turns them into events, while apply still holds
//! the state machine's write lock: a reader that sees a change therefore finds its event
//! already queued on the connection, and the connection writes queued events before the
//! reply (guarantee G6). Arming a persistent watch with a replay happens under the read
//! lock for the same reason: every change is either in the replay or fires the watch.

mod chunk;
pub(crate) mod history;

use crate::command::Change;
use crate::conn::{ConnId, Delivery, Outbound, OutboundTx};
use crate::sync::{Mutex, MutexGuard};
use history::History;
use std::collections::{HashMap, HashSet};
use std::sync::PoisonError;
use ward_proto::{EventKind, PersistentWatch, Position, StreamEvent, WatchEvent, WatchKind, WatchMode, Zxid};

/// One watch a connection has on a path, as a removal or a check sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Armed {
    OneShot(WatchKind),
    Persistent(WatchMode),
}

/// The persistent modes a connection has on one path: both may be armed at once (as in
/// ZooKeeper 3.9; 3.8 let the later replace the earlier).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Modes {
    exact: bool,
    recursive: bool,
}

impl Modes {
    fn slot(&mut self, mode: WatchMode) -> &mut bool {
        match mode {
            WatchMode::Persistent => &mut self.exact,
            WatchMode::PersistentRecursive => &mut self.recursive,
        }
    }

    fn iter(self) -> impl Iterator<Item = WatchMode> {
        [(self.exact, WatchMode::Persistent), (self.recursive, WatchMode::PersistentRecursive)]
            .into_iter()
            .filter_map(|(on, mode)| on.then_some(mode))
    }

    fn count(self) -> usize {
        usize::from(self.exact) + usize::from(self.recursive)
    }

    /// Whether a change of `kind` to a node that is (`at_node`) or is below the watched
    /// path fires one of these modes (ZooKeeper's `WatchManager.triggerWatch`).
    fn fire(self, at_node: bool, kind: EventKind) -> bool {
        (self.exact && at_node) || (self.recursive && kind != EventKind::NodeChildrenChanged)
    }
}

/// `path`, then each of its ancestors up to the root.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let at = next?;
        next = (at != "/").then(|| ward_proto::path::parent(at));
        Some(at)
    })
}

#[derive(Default)]
struct Watches {
    by_kind: HashMap<(WatchKind, String), HashSet<ConnId>>,
    /// Persistent watches by path. Kept apart from one-shot ones: a connection may have both
    /// on one path, and firing must not remove these.
    persistent: HashMap<String, HashMap<ConnId, Modes>>,
    conns: HashMap<ConnId, Watcher>,
    history: History,
}

struct Watcher {
    tx: OutboundTx,
    delivery: Delivery,
    /// Boxed, and made when the connection first arms a watch: most connections never do,
    /// and the two sets would be most of their entry here (ward-bench f).
    armed: Option<Box<ArmedPaths>>,
}

/// A connection's watches: a reverse index, so that a closing connection drops its watches
/// without a scan.
#[derive(Default)]
struct ArmedPaths {
    paths: HashSet<(WatchKind, String)>,
    persistent: HashSet<String>,
}

impl Watcher {
    fn armed_mut(&mut self) -> &mut ArmedPaths {
        self.armed.get_or_insert_with(Box::default)
    }

    fn has_one_shot(&self, key: &(WatchKind, String)) -> bool {
        self.armed.as_ref().is_some_and(|a| a.paths.contains(key))
    }

    fn count(&self) -> usize {
        self.armed.as_ref().map_or(0, |a| a.paths.len() + a.persistent.len())
    }
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

    pub(crate) fn add_conn(&self, conn: ConnId, tx: OutboundTx, delivery: Delivery) {
        let watcher = Watcher { tx, delivery, armed: None };
        self.lock().conns.insert(conn, watcher);
    }

    /// Wakes every parked connection, to see that its token was cancelled: the server is
    /// shutting down (`conn/park.rs`).
    pub(crate) fn wake_parked(&self) {
        for watcher in self.lock().conns.values() {
            watcher.tx.wake_parked();
        }
    }

    pub(crate) fn remove_conn(&self, conn: ConnId) {
        let mut w = self.lock();
        if let Some(armed) = w.conns.remove(&conn).and_then(|watcher| watcher.armed) {
            for key in armed.paths {
                if let Some(set) = w.by_kind.get_mut(&key) {
                    set.remove(&conn);
                    if set.is_empty() {
                        w.by_kind.remove(&key);
                    }
                }
            }
            for path in armed.persistent {
                w.set_persistent(conn, &path, Modes::default());
            }
        }
    }

    /// Arms a one-shot watch. Call it under the state machine's read lock, together with the
    /// read that decides the watch kind, so no change can slip between the two.
    pub fn register(&self, conn: ConnId, kind: WatchKind, path: &str) {
        let mut w = self.lock();
        let Some(watcher) = w.conns.get_mut(&conn) else { return };
        watcher.armed_mut().paths.insert((kind, path.to_string()));
        w.by_kind.entry((kind, path.to_string())).or_default().insert(conn);
    }

    /// Arms a persistent watch (a connection may have both modes on one path).
    pub(crate) fn add_persistent(&self, conn: ConnId, path: &str, mode: WatchMode) {
        self.lock().add_persistent(conn, path, mode);
    }

    /// Arms Ward's persistent watches, and returns what those armed again (`since`) missed
    /// while their client was away: the changes after their `since` that they match, in
    /// position order and each once, and the indices of the watches for which the history
    /// does not reach back to `since`. Call it under the state machine's read lock: every
    /// change is then either in the replay or fires the armed watch later.
    pub(crate) fn add_streams(&self, conn: ConnId, watches: &[PersistentWatch]) -> (Vec<StreamEvent>, Vec<u32>) {
        let mut w = self.lock();
        let mut wanted: HashMap<&str, Vec<(WatchMode, Position)>> = HashMap::new();
        let mut missed = Vec::new();
        let mut from: Option<Position> = None;
        for (i, watch) in watches.iter().enumerate() {
            w.add_persistent(conn, &watch.path, watch.mode);
            let Some(since) = watch.since else { continue };
            // Past the horizon the history has the rest: replay that, and say what is lost.
            let since = if !w.history.reaches(since) {
                missed.push(history::index(i));
                w.history.horizon()
            } else {
                since
            };
            wanted.entry(&watch.path).or_default().push((watch.mode, since));
            from = Some(from.map_or(since, |f| f.min(since)));
        }
        let Some(entries) = from.and_then(|from| w.history.after(from)) else { return (Vec::new(), missed) };
        let replay = entries
            .filter(|entry| {
                ancestors(&entry.path).any(|at| {
                    let modes = wanted.get(at).into_iter().flatten();
                    modes.filter(|(_, since)| entry.position > *since).any(|(mode, _)| {
                        let mut one = Modes::default();
                        *one.slot(*mode) = true;
                        one.fire(at == &*entry.path, entry.kind)
                    })
                })
            })
            .map(history::Entry::event)
            .collect();
        (replay, missed)
    }

    /// The history of changes replayed to re-armed persistent watches holds at most `bytes`
    /// from now on (`--watch-history-bytes`).
    pub fn set_history_limit(&self, bytes: usize) {
        self.lock().history.set_limit(bytes);
    }

    /// The state was replaced at `zxid` (a snapshot): the history starts again there.
    pub(crate) fn reset_history(&self, zxid: Zxid) {
        self.lock().history.reset(zxid);
    }

    /// The watches `conn` has on `path`.
    pub fn armed(&self, conn: ConnId, path: &str) -> Vec<Armed> {
        let w = self.lock();
        let Some(watcher) = w.conns.get(&conn) else { return Vec::new() };
        let mut armed: Vec<Armed> = [WatchKind::Data, WatchKind::Exists, WatchKind::Child]
            .into_iter()
            .filter(|kind| watcher.has_one_shot(&(*kind, path.to_string())))
            .map(Armed::OneShot)
            .collect();
        let modes = w.persistent.get(path).and_then(|conns| conns.get(&conn)).copied().unwrap_or_default();
        armed.extend(modes.iter().map(Armed::Persistent));
        armed
    }

    /// Disarms the watches of `conn` on `path` that `which` selects; true if any was.
    pub fn remove(&self, conn: ConnId, path: &str, which: impl Fn(Armed) -> bool) -> bool {
        let mut w = self.lock();
        let mut removed = false;
        for kind in [WatchKind::Data, WatchKind::Exists, WatchKind::Child] {
            let key = (kind, path.to_string());
            let Some(watcher) = w.conns.get_mut(&conn) else { return false };
            if which(Armed::OneShot(kind)) && watcher.armed.as_mut().is_some_and(|a| a.paths.remove(&key)) {
                removed = true;
                if let Some(set) = w.by_kind.get_mut(&key) {
                    set.remove(&conn);
                    if set.is_empty() {
                        w.by_kind.remove(&key);
                    }
                }
            }
        }
        let mut modes = w.persistent.get(path).and_then(|conns| conns.get(&conn)).copied().unwrap_or_default();
        for mode in modes.iter() {
            if which(Armed::Persistent(mode)) {
                *modes.slot(mode) = false;
                removed = true;
            }
        }
        w.set_persistent(conn, path, modes);
        removed
    }

    /// Watches `conn` has armed, one-shot and persistent.
    pub(crate) fn count_of(&self, conn: ConnId) -> usize {
        self.lock().conns.get(&conn).map_or(0, Watcher::count)
    }

    /// Number of armed watches (a connection watching one path twice counts once).
    pub fn len(&self) -> usize {
        self.lock().count()
    }

    /// Connections with at least one watch, distinct watched paths, and watches.
    pub fn summary(&self) -> (usize, usize, usize) {
        let w = self.lock();
        let conns = w.conns.values().filter(|c| c.count() > 0).count();
        let paths: HashSet<&str> =
            w.by_kind.keys().map(|(_, p)| p.as_str()).chain(w.persistent.keys().map(String::as_str)).collect();
        (conns, paths.len(), w.count())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records the changes of command `zxid` and fires the watches they trigger. A
    /// connection gets at most one event per change and delivery channel
    /// ([`Delivery`]), whichever of its watches on the path triggered.
    pub fn fire(&self, changes: &[Change], zxid: Zxid) {
        let mut w = self.lock();
        w.history.record(zxid, changes);
        if w.by_kind.is_empty() && w.persistent.is_empty() {
            return;
        }
        for (i, change) in changes.iter().enumerate() {
            let Some((kind, path)) = history::event_of(change) else { continue };
            let kinds: &[WatchKind] = match kind {
                EventKind::NodeCreated => &[WatchKind::Exists, WatchKind::Data],
                EventKind::NodeDataChanged => &[WatchKind::Data, WatchKind::Exists],
                EventKind::NodeDeleted => &[WatchKind::Data, WatchKind::Exists, WatchKind::Child],
                EventKind::NodeChildrenChanged => &[WatchKind::Child],
            };
            let event = WatchEvent { kind, path: path.to_string(), zxid };
            let mut told = HashSet::new();
            for &watch_kind in kinds {
                let key = (watch_kind, path.to_string());
                let Some(conns) = w.by_kind.remove(&key) else { continue };
                for conn in conns {
                    let Some(watcher) = w.conns.get_mut(&conn) else { continue };
                    if let Some(armed) = watcher.armed.as_mut() {
                        armed.paths.remove(&key);
                    }
                    if told.insert(conn) {
                        // A closed receiver means the connection is going away; its
                        // watches are dropped by `remove_conn`.
                        let _ = watcher.tx.send(Outbound::Event(event.clone()));
                    }
                }
            }
            if !w.persistent.is_empty() {
                w.fire_persistent(&event, history::index(i), &mut told);
            }
        }
    }
}

impl Watches {
    fn count(&self) -> usize {
        self.by_kind.values().map(HashSet::len).sum::<usize>()
            + self.persistent.values().flat_map(HashMap::values).map(|m| m.count()).sum::<usize>()
    }

    fn add_persistent(&mut self, conn: ConnId, path: &str, mode: WatchMode) {
        let Some(watcher) = self.conns.get_mut(&conn) else { return };
        watcher.armed_mut().persistent.insert(path.to_string());
        *self.persistent.entry(path.to_string()).or_default().entry(conn).or_default().slot(mode) = true;
    }

    /// Sets the modes `conn` has on `path`, forgetting the path when none is left.
    fn set_persistent(&mut self, conn: ConnId, path: &str, modes: Modes) {
        if modes.count() > 0 {
            self.persistent.entry(path.to_string()).or_default().insert(conn, modes);
            return;
        }
        if let Some(conns) = self.persistent.get_mut(path) {
            conns.remove(&conn);
            if conns.is_empty() {
                self.persistent.remove(path);
            }
        }
        if let Some(armed) = self.conns.get_mut(&conn).and_then(|watcher| watcher.armed.as_mut()) {
            armed.persistent.remove(path);
        }
    }

    /// Persistent watches on the event's path itself, and recursive ones on its ancestors,
    /// fire without being removed. `told`: the connections given this change's one
    /// notification already (ZooKeeper's delivery); a Ward connection gets its streamed event
    /// once besides.
    fn fire_persistent(&self, event: &WatchEvent, index: u32, told: &mut HashSet<ConnId>) {
        let mut streamed = HashSet::new();
        for at in ancestors(&event.path) {
            for (conn, modes) in self.persistent.get(at).into_iter().flatten() {
                if !modes.fire(at == event.path, event.kind) {
                    continue;
                }
                let Some(watcher) = self.conns.get(conn) else { continue };
                let msg = match watcher.delivery {
                    Delivery::OneEvent if told.insert(*conn) => Outbound::Event(event.clone()),
                    Delivery::Streams if streamed.insert(*conn) => {
                        Outbound::Streamed(StreamEvent { event: event.clone(), index })
                    }
                    _ => continue,
                };
                let _ = watcher.tx.send(msg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::outbox::Outbox;

    fn events(rx: &mut crate::conn::outbox::OutboxRx) -> Vec<(EventKind, String)> {
        let mut out = Vec::new();
        while let Some(Outbound::Event(e)) = rx.try_next() {
            out.push((e.kind, e.path));
        }
        out
    }

    #[test]
    fn persistent_watches_stay_armed_and_recursive_ones_skip_children_changes() {
        let reg = WatchRegistry::default();
        let (tx, mut rx) = Outbox::channel();
        reg.add_conn(1, tx, Delivery::OneEvent);
        reg.add_persistent(1, "/a", WatchMode::Persistent);
        reg.add_persistent(1, "/", WatchMode::PersistentRecursive);
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
        assert_eq!(reg.armed(1, "/a"), [Armed::Persistent(WatchMode::Persistent)], "the one-shot watch fired");
        assert!(reg.remove(1, "/a", |a| matches!(a, Armed::Persistent(_))));
        assert!(!reg.remove(1, "/a", |_| true));
        assert_eq!(reg.summary(), (1, 1, 1));
        reg.remove_conn(1);
        assert_eq!((reg.len(), reg.summary()), (0, (0, 0, 0)));
    }

    /// One-shot events, and streamed ones with their positions.
    type Split = (Vec<(EventKind, String)>, Vec<(Zxid, u32, EventKind, String)>);

    fn streamed(rx: &mut crate::conn::outbox::OutboxRx) -> Split {
        let (mut events, mut streamed) = (Vec::new(), Vec::new());
        while let Some(msg) = rx.try_next() {
            match msg {
                Outbound::Event(e) => events.push((e.kind, e.path)),
                Outbound::Streamed(s) => streamed.push((s.event.zxid, s.index, s.event.kind, s.event.path)),
                other => panic!("{other:?}"),
            }
        }
        (events, streamed)
    }

    fn watch(path: &str, mode: WatchMode, since: Option<Position>) -> PersistentWatch {
        PersistentWatch { path: path.into(), mode, since }
    }

    #[test]
    fn a_ward_connection_gets_one_shot_and_streamed_events_apart_and_what_its_streams_missed() {
        let reg = WatchRegistry::default();
        let (tx, mut rx) = Outbox::channel();
        reg.add_conn(1, tx, Delivery::Streams);
        reg.fire(&[Change::Created("/s/a".into()), Change::ChildrenChanged("/s".into())], 3);
        reg.fire(&[Change::DataChanged("/s/a".into())], 4);
        reg.fire(&[Change::DataChanged("/other".into())], 5);
        let watches = [
            watch("/s", WatchMode::PersistentRecursive, Some(Position::after(2))),
            watch("/s/a", WatchMode::Persistent, Some(Position { zxid: 3, index: 0 })),
            watch("/fresh", WatchMode::Persistent, None),
        ];
        let (replay, missed) = reg.add_streams(1, &watches);
        let replay: Vec<(Zxid, u32, EventKind)> =
            replay.iter().map(|s| (s.event.zxid, s.index, s.event.kind)).collect();
        // The create for the recursive watch (no children change: ZooKeeper's rule), the data
        // change once though both watches match it, nothing outside /s.
        assert_eq!(replay, [(3, 0, EventKind::NodeCreated), (4, 0, EventKind::NodeDataChanged)]);
        assert!(missed.is_empty());

        reg.register(1, WatchKind::Data, "/s/a");
        reg.fire(&[Change::DataChanged("/s/a".into()), Change::ChildrenChanged("/s/a".into())], 6);
        let (events, streamed) = streamed(&mut rx);
        assert_eq!(events, [(EventKind::NodeDataChanged, "/s/a".to_string())], "the one-shot watch, apart");
        assert_eq!(
            streamed,
            [
                (6, 0, EventKind::NodeDataChanged, "/s/a".to_string()),
                (6, 1, EventKind::NodeChildrenChanged, "/s/a".to_string()),
            ],
            "each change streamed once, though two persistent watches match the first"
        );
        assert!(reg.remove(1, "/s/a", |a| a == Armed::Persistent(WatchMode::Persistent)));
        assert_eq!(reg.len(), 2, "/s and /fresh");

        reg.reset_history(10);
        let (replay, missed) =
            reg.add_streams(1, &[watch("/s", WatchMode::PersistentRecursive, Some(Position::after(6)))]);
        assert_eq!((replay.len(), missed), (0, vec![0]), "the history starts again at the installed state");
        reg.remove_conn(1);
        assert!(reg.is_empty());
    }
}
