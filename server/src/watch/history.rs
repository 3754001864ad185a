//! The recent changes this server applied, by [`Position`], so that a persistent watch armed
//! again after a reconnect is sent what it missed meanwhile (`Request::AddWatches` with
//! `since`), on this member or any other: every member applies the same commands to the
//! same state, so its changes and their positions are the same.
//!
//! Bounded by the memory it takes ([`HISTORY_BYTES`]): changes are packed into chunks
//! (`watch/chunk.rs`: about 11 bytes for a create), and the oldest chunk goes first, the
//! horizon moving past it. A watch whose client has seen less than the horizon is told it may have
//! missed events. The history starts empty at the state a server starts from or installs (a
//! snapshot): the log replayed after a snapshot fills it again, so after a restart it covers
//! what came after the newest snapshot.

use super::chunk::Chunk;
pub(crate) use super::chunk::Entry;
use crate::command::Change;
use std::collections::VecDeque;
use ward_proto::{EventKind, Position, StreamEvent, WatchEvent, Zxid};

/// What the history may hold by default (`--watch-history-bytes`), counted as the memory it
/// takes: about 180,000 creates of nodes numbered in sequence (two changes each), or 60,000
/// changes of random 30-byte paths (both measured by the tests below); the last seconds of a
/// busy server.
pub(crate) const HISTORY_BYTES: usize = 2 << 20;

/// The largest and smallest chunks: a limit is held in about 32 chunks, so dropping the
/// oldest gives up about a thirty-second of the history at a time.
const CHUNK_BYTES: std::ops::RangeInclusive<usize> = 256..=(64 << 10);

/// The most a change's numbers take in a chunk besides its path (four varints and a byte).
const HEADER_BYTES: usize = 10 + 5 + 1 + 10 + 10;

impl Entry {
    pub(crate) fn event(self) -> StreamEvent {
        let event = WatchEvent { kind: self.kind, path: self.path, zxid: self.position.zxid };
        StreamEvent { event, index: self.position.index }
    }
}

/// The event kind and path of a change that watches see (sessions' changes have none).
pub(crate) fn event_of(change: &Change) -> Option<(EventKind, &str)> {
    match change {
        Change::Created(p) => Some((EventKind::NodeCreated, p)),
        Change::DataChanged(p) => Some((EventKind::NodeDataChanged, p)),
        Change::Deleted(p) => Some((EventKind::NodeDeleted, p)),
        Change::ChildrenChanged(p) => Some((EventKind::NodeChildrenChanged, p)),
        Change::SessionCreated { .. } | Change::SessionEnded(_) => None,
    }
}

/// The index of a command's `i`-th change in its position (a command never has 2^32).
pub(crate) fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

pub(crate) struct History {
    /// Oldest first; none is empty.
    chunks: VecDeque<Chunk>,
    /// What the chunks hold ([`Chunk::size`]).
    bytes: usize,
    limit: usize,
    /// Every change after this position is in `chunks`.
    horizon: Position,
}

impl Default for History {
    fn default() -> Self {
        History::with_limit(HISTORY_BYTES)
    }
}

impl History {
    pub(crate) fn with_limit(limit: usize) -> History {
        History { chunks: VecDeque::new(), bytes: 0, limit, horizon: Position::default() }
    }

    /// Keeps the changes of command `zxid`, dropping the oldest past the limit.
    pub(crate) fn record(&mut self, zxid: Zxid, changes: &[Change]) {
        for (i, change) in changes.iter().enumerate() {
            let Some((kind, path)) = event_of(change) else { continue };
            self.push(Position { zxid, index: index(i) }, kind, path);
        }
        self.trim();
    }

    fn push(&mut self, position: Position, kind: EventKind, path: &str) {
        let room = path.len() + HEADER_BYTES;
        if self.chunks.back().is_none_or(|last| last.spare() < room) {
            let capacity = (self.limit / 32).clamp(*CHUNK_BYTES.start(), *CHUNK_BYTES.end()).max(room);
            if capacity + std::mem::size_of::<Chunk>() > self.limit {
                // No chunk fits the limit (`--watch-history-bytes` 0, say): `trim` would drop
                // it, and every older one, at once. Keep nothing, allocate nothing, and let
                // the horizon pass the change.
                self.horizon = self.horizon.max(position);
                self.chunks.clear();
                self.bytes = 0;
                return;
            }
            let chunk = Chunk::new(capacity);
            self.bytes += chunk.size();
            self.chunks.push_back(chunk);
        }
        let Some(last) = self.chunks.back_mut() else { return };
        let before = last.size();
        if last.push(position, kind, path).is_none() {
            // Positions only grow between resets; if they did not, nothing kept can be
            // trusted to be in order, and every watch from before is told it may have missed.
            tracing::warn!(?position, last = ?last.last, "a change recorded out of order: the watch history starts again");
            self.horizon = self.horizon.max(last.last);
            self.chunks.clear();
            self.bytes = 0;
            return;
        }
        self.bytes = self.bytes - before + last.size();
    }

    /// Holds at most `limit` bytes from now on (`--watch-history-bytes`), dropping the
    /// oldest changes past it.
    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        self.trim();
    }

    fn trim(&mut self) {
        while self.bytes > self.limit {
            let Some(oldest) = self.chunks.pop_front() else { break };
            self.bytes -= oldest.size();
            self.horizon = oldest.last;
        }
    }

    /// The state was replaced (a snapshot installed or loaded) at `zxid`: what came before
    /// is unknown here.
    pub(crate) fn reset(&mut self, zxid: Zxid) {
        self.chunks.clear();
        self.bytes = 0;
        self.horizon = Position::after(zxid);
    }

    /// Every change after this position is kept.
    pub(crate) fn horizon(&self) -> Position {
        self.horizon
    }

    /// Whether every change after `since` is kept.
    pub(crate) fn reaches(&self, since: Position) -> bool {
        since >= self.horizon
    }

    /// The memory the kept changes take.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.bytes
    }

    /// The changes after `since`, oldest first; `None` if some of them are no longer kept.
    pub(crate) fn after(&self, since: Position) -> Option<impl Iterator<Item = Entry> + '_> {
        if !self.reaches(since) {
            return None;
        }
        let start = self.chunks.partition_point(|chunk| chunk.last <= since);
        let entries = self.chunks.range(start..).flat_map(Chunk::entries);
        Some(entries.filter(move |entry| entry.position > since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(entries: impl Iterator<Item = Entry>) -> Vec<(Zxid, u32)> {
        entries.map(|e| (e.position.zxid, e.position.index)).collect()
    }

    /// A path too long for two changes to share a chunk of the smallest size (a limit of
    /// 8 KiB or less).
    fn long(name: &str) -> String {
        format!("/{name}/{}", "x".repeat(200))
    }

    #[test]
    fn keeps_changes_by_position_and_says_when_it_no_longer_reaches_back() {
        let mut history = History::with_limit(4 << 10);
        history.record(1, &[Change::SessionEnded(ward_proto::SessionId(1)), Change::Created(long("a"))]);
        history.record(2, &[Change::DataChanged(long("a")), Change::Deleted(long("b"))]);
        let all = history.after(Position::default()).map(positions);
        assert_eq!(all, Some(vec![(1, 1), (2, 0), (2, 1)]), "sessions' changes are no events");
        assert_eq!(history.after(Position { zxid: 2, index: 0 }).map(positions), Some(vec![(2, 1)]));
        assert_eq!(history.after(Position::after(2)).map(positions), Some(vec![]));

        history.set_limit(history.bytes());
        history.record(3, &[Change::ChildrenChanged(long("c"))]);
        assert!(history.bytes() <= history.limit);
        assert!(history.after(Position::default()).is_none(), "(1, 1) was dropped");
        assert!(history.after(Position { zxid: 1, index: 0 }).is_none());
        assert_eq!(history.after(Position { zxid: 1, index: 1 }).map(positions), Some(vec![(2, 0), (2, 1), (3, 0)]));
        let last = history.after(Position { zxid: 2, index: 1 }).and_then(|mut e| e.next().map(Entry::event));
        let last = last.map(|e| (e.position(), e.event.kind, e.event.path));
        assert_eq!(last, Some((Position { zxid: 3, index: 0 }, EventKind::NodeChildrenChanged, long("c"))));

        history.reset(7);
        assert!(history.after(Position { zxid: 6, index: 0 }).is_none(), "before the installed state");
        assert_eq!(history.after(Position::after(7)).map(positions), Some(vec![]));
    }

    /// `--watch-history-bytes`: a smaller limit drops the oldest changes at once and moves
    /// the horizon past them; 0 keeps nothing, so every re-armed watch is told it may have
    /// missed events.
    #[test]
    fn a_new_limit_drops_the_oldest_changes_past_it() {
        let mut history = History::with_limit(4 << 10);
        for zxid in 1..=4 {
            history.record(zxid, &[Change::DataChanged(long("a"))]);
        }
        assert_eq!(history.after(Position::default()).map(positions), Some(vec![(1, 0), (2, 0), (3, 0), (4, 0)]));
        history.set_limit(history.bytes() / 2);
        assert!(history.after(Position::default()).is_none(), "the two oldest are gone");
        assert_eq!(history.after(Position { zxid: 2, index: 0 }).map(positions), Some(vec![(3, 0), (4, 0)]));
        history.set_limit(0);
        assert!(history.after(Position { zxid: 3, index: 0 }).is_none());
        assert_eq!(history.after(Position { zxid: 4, index: 0 }).map(positions), Some(vec![]), "seen everything");
        history.record(5, &[Change::Created("/b".into())]);
        assert!(history.after(Position { zxid: 4, index: 0 }).is_none(), "nothing is kept");
        assert_eq!(history.after(Position { zxid: 5, index: 0 }).map(positions), Some(vec![]), "seen everything");
        assert!(history.chunks.is_empty(), "no chunk is made that the limit cannot hold");
        assert_eq!(history.bytes(), 0);
    }

    /// Whatever position a client saw last, the history gives back exactly the changes after
    /// it, across the chunks' boundaries and after the oldest chunks are dropped.
    #[test]
    fn replays_exactly_what_came_after_any_position() {
        let mut history = History::with_limit(4 << 10);
        let mut recorded = Vec::new();
        for zxid in 1..=400 {
            let changes = [Change::Created(format!("/n/{zxid:06}")), Change::ChildrenChanged("/n".into())];
            history.record(zxid, &changes);
            recorded.extend([(zxid, 0), (zxid, 1)]);
            assert!(history.bytes() <= 4 << 10, "{} bytes", history.bytes());
        }
        assert!(history.chunks.len() > 4, "the test spans several chunks");
        let horizon = history.horizon();
        assert!(horizon > Position::default(), "the oldest were dropped");
        for &(zxid, index) in &recorded {
            let since = Position { zxid, index };
            let expected: Vec<_> =
                recorded.iter().copied().filter(|&(z, i)| Position { zxid: z, index: i } > since).collect();
            match history.after(since) {
                Some(entries) => assert_eq!(positions(entries), expected, "after {since:?}"),
                None => assert!(since < horizon, "{since:?} is kept but not replayed"),
            }
        }
        let paths: Vec<_> = history.after(horizon).into_iter().flatten().map(|e| e.path).take(2).collect();
        assert_eq!(paths.len(), 2);
        assert!(paths[0].starts_with("/n/") && paths[1] == "/n", "{paths:?}");
    }

    /// The default budget is memory, and at about 11 bytes a create it holds a long window
    /// (182,622 creates before the first chunk is dropped).
    #[test]
    fn the_default_budget_holds_150000_creates_of_numbered_nodes() {
        let mut history = History::default();
        for zxid in 1..=150_000 {
            let changes =
                [Change::Created(format!("/app/jobs/job-{zxid:010}")), Change::ChildrenChanged("/app/jobs".into())];
            history.record(zxid, &changes);
        }
        assert!(history.bytes() <= HISTORY_BYTES);
        assert!(history.reaches(Position::default()), "nothing was dropped: {} bytes", history.bytes());
        assert_eq!(history.after(Position::default()).map(Iterator::count), Some(300_000));
    }

    /// Random 30-byte paths share nothing to pack against: about 35 bytes a change, so the
    /// default holds about 60,000 of them (59,827 before the first chunk is dropped).
    #[test]
    fn the_default_budget_holds_55000_changes_of_unrelated_30_byte_paths() {
        let mut history = History::default();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for zxid in 1..=55_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let path = format!("/{x:016x}{:013x}", x.rotate_left(23) & 0xf_ffff_ffff_ffff);
            assert_eq!(path.len(), 30);
            history.record(zxid, &[Change::DataChanged(path)]);
        }
        assert!(history.bytes() <= HISTORY_BYTES);
        assert!(history.reaches(Position::default()), "nothing was dropped: {} bytes", history.bytes());
    }
}
