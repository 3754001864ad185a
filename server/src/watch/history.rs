//! The recent changes this server applied, by [`Position`], so that a persistent watch armed
//! again after a reconnect is sent what it missed meanwhile (`Request::AddWatches` with
//! `since`), on this member or any other: every member applies the same commands to the
//! same state, so its changes and their positions are the same.
//!
//! Bounded by bytes ([`HISTORY_BYTES`]): the oldest changes go first, and the horizon
//! moves past them. A watch whose client has seen less than the horizon is told it may have
//! missed events. The history starts empty at the state a server starts from or installs (a
//! snapshot): the log replayed after a snapshot fills it again, so after a restart it covers
//! what came after the newest snapshot.

use crate::command::Change;
use std::collections::VecDeque;
use ward_proto::{EventKind, Position, StreamEvent, WatchEvent, Zxid};

/// What the history may hold by default (`--watch-history-bytes`), counting each change's
/// path and a fixed overhead: about 100,000 changes of 40-byte paths, the last few seconds
/// of a busy server.
pub const HISTORY_BYTES: usize = 8 << 20;

/// What one entry costs besides its path.
const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>();

/// One change, as a watch event would report it.
#[derive(Debug)]
pub struct Entry {
    pub position: Position,
    pub kind: EventKind,
    pub path: Box<str>,
}

impl Entry {
    pub fn event(&self) -> StreamEvent {
        let event = WatchEvent { kind: self.kind, path: self.path.to_string(), zxid: self.position.zxid };
        StreamEvent { event, index: self.position.index }
    }
}

/// The event kind and path of a change that watches see (sessions' changes have none).
pub fn event_of(change: &Change) -> Option<(EventKind, &str)> {
    match change {
        Change::Created(p) => Some((EventKind::NodeCreated, p)),
        Change::DataChanged(p) => Some((EventKind::NodeDataChanged, p)),
        Change::Deleted(p) => Some((EventKind::NodeDeleted, p)),
        Change::ChildrenChanged(p) => Some((EventKind::NodeChildrenChanged, p)),
        Change::SessionCreated { .. } | Change::SessionEnded(_) => None,
    }
}

/// The index of a command's `i`-th change in its position (a command never has 2^32).
pub fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

pub struct History {
    entries: VecDeque<Entry>,
    bytes: usize,
    limit: usize,
    /// Every change after this position is in `entries`.
    horizon: Position,
}

impl Default for History {
    fn default() -> Self {
        History::with_limit(HISTORY_BYTES)
    }
}

impl History {
    pub fn with_limit(limit: usize) -> History {
        History { entries: VecDeque::new(), bytes: 0, limit, horizon: Position::default() }
    }

    /// Keeps the changes of command `zxid`, dropping the oldest past the limit.
    pub fn record(&mut self, zxid: Zxid, changes: &[Change]) {
        for (i, change) in changes.iter().enumerate() {
            let Some((kind, path)) = event_of(change) else { continue };
            let position = Position { zxid, index: index(i) };
            self.bytes += path.len() + ENTRY_OVERHEAD;
            self.entries.push_back(Entry { position, kind, path: path.into() });
        }
        self.trim();
    }

    /// Holds at most `limit` bytes from now on (`--watch-history-bytes`), dropping the
    /// oldest changes past it.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        self.trim();
    }

    fn trim(&mut self) {
        while self.bytes > self.limit {
            let Some(oldest) = self.entries.pop_front() else { break };
            self.bytes -= oldest.path.len() + ENTRY_OVERHEAD;
            self.horizon = oldest.position;
        }
    }

    /// The state was replaced (a snapshot installed or loaded) at `zxid`: what came before
    /// is unknown here.
    pub fn reset(&mut self, zxid: Zxid) {
        self.entries.clear();
        self.bytes = 0;
        self.horizon = Position::after(zxid);
    }

    /// Every change after this position is kept.
    pub fn horizon(&self) -> Position {
        self.horizon
    }

    /// The changes after `since`, oldest first; `None` if some of them are no longer kept.
    pub fn after(&self, since: Position) -> Option<impl Iterator<Item = &Entry>> {
        if since < self.horizon {
            return None;
        }
        let start = self.entries.partition_point(|e| e.position <= since);
        Some(self.entries.range(start..))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions<'a>(entries: impl Iterator<Item = &'a Entry>) -> Vec<(Zxid, u32)> {
        entries.map(|e| (e.position.zxid, e.position.index)).collect()
    }

    #[test]
    fn keeps_changes_by_position_and_says_when_it_no_longer_reaches_back() {
        let mut history = History::with_limit(3 * (ENTRY_OVERHEAD + 2));
        history.record(1, &[Change::SessionEnded(ward_proto::SessionId(1)), Change::Created("/a".into())]);
        history.record(2, &[Change::DataChanged("/a".into()), Change::Deleted("/b".into())]);
        let all = history.after(Position::default()).map(positions);
        assert_eq!(all, Some(vec![(1, 1), (2, 0), (2, 1)]), "sessions' changes are no events");
        assert_eq!(history.after(Position { zxid: 2, index: 0 }).map(positions), Some(vec![(2, 1)]));
        assert_eq!(history.after(Position::after(2)).map(positions), Some(vec![]));

        history.record(3, &[Change::ChildrenChanged("/c".into())]);
        assert!(history.after(Position::default()).is_none(), "(1, 1) was dropped");
        assert!(history.after(Position { zxid: 1, index: 0 }).is_none());
        assert_eq!(history.after(Position { zxid: 1, index: 1 }).map(positions), Some(vec![(2, 0), (2, 1), (3, 0)]));
        let last = history.after(Position { zxid: 2, index: 1 }).and_then(|mut e| e.next().map(Entry::event));
        let last = last.map(|e| (e.position(), e.event.kind, e.event.path));
        assert_eq!(last, Some((Position { zxid: 3, index: 0 }, EventKind::NodeChildrenChanged, "/c".to_string())));

        history.reset(7);
        assert!(history.after(Position { zxid: 6, index: 0 }).is_none(), "before the installed state");
        assert_eq!(history.after(Position::after(7)).map(positions), Some(vec![]));
    }

    /// `--watch-history-bytes`: a smaller limit drops the oldest changes at once and moves
    /// the horizon past them; 0 keeps nothing, so every re-armed watch is told it may have
    /// missed events.
    #[test]
    fn a_new_limit_drops_the_oldest_changes_past_it() {
        let mut history = History::default();
        for zxid in 1..=4 {
            history.record(zxid, &[Change::DataChanged("/a".into())]);
        }
        assert_eq!(history.after(Position::default()).map(positions), Some(vec![(1, 0), (2, 0), (3, 0), (4, 0)]));
        history.set_limit(2 * (ENTRY_OVERHEAD + 2));
        assert!(history.after(Position::default()).is_none(), "the two oldest are gone");
        assert_eq!(history.after(Position { zxid: 2, index: 0 }).map(positions), Some(vec![(3, 0), (4, 0)]));
        history.set_limit(0);
        assert!(history.after(Position { zxid: 3, index: 0 }).is_none());
        assert_eq!(history.after(Position { zxid: 4, index: 0 }).map(positions), Some(vec![]), "seen everything");
        history.record(5, &[Change::Created("/b".into())]);
        assert!(history.after(Position { zxid: 4, index: 0 }).is_none(), "nothing is kept");
    }
}
