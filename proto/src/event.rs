//! Watch events: what a one-shot watch reports when it fires.

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
