//! Watch events: what a one-shot watch reports when it fires, and what a persistent watch
//! streams, each event with its place in the order of all changes.

use crate::ids::Zxid;
use serde::{Deserialize, Serialize};

/// ZooKeeper's watch event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// The watched path was created (fires exists-watches set on a missing node).
    NodeCreated,
    /// The watched node was deleted (fires data, exists and child watches).
    NodeDeleted,
    /// The watched node's data was set (fires data and exists watches).
    NodeDataChanged,
    /// A child of the watched node was created or deleted (fires child watches).
    NodeChildrenChanged,
}

/// One fired watch. A watch fires at most once; re-arm it by reading again with a watch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    pub kind: EventKind,
    pub path: String,
    /// The zxid of the change that fired the watch.
    pub zxid: Zxid,
}

/// Where a change stands in the order of every change the tree went through: the zxid of
/// the command that made it, then its place among that command's changes (a multi, or a
/// session's end, makes several under one zxid). Every member of an ensemble applies the
/// same commands to the same state, so every member gives a change the same position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Position {
    pub zxid: Zxid,
    pub index: u32,
}

impl Position {
    /// The position after every change of command `zxid` (and before any of the next).
    pub fn after(zxid: Zxid) -> Position {
        Position { zxid, index: u32::MAX }
    }
}

/// One event of a persistent watch ([`Request::AddWatches`](crate::Request::AddWatches)):
/// the event, and the index that makes its [`Position`] with `event.zxid`. A client that
/// reconnects names the position of the last event it got, and is sent what came after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEvent {
    pub event: WatchEvent,
    pub index: u32,
}

impl StreamEvent {
    pub fn position(&self) -> Position {
        Position { zxid: self.event.zxid, index: self.index }
    }
}
