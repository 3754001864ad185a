//! The data tree: znodes by path, plus each session's ephemerals. Pure data, no I/O and no
//! notifications; mutations report [`Change`](crate::command::Change)s for the watch registry to act on.

mod children;
pub(crate) mod cleanup;
mod journal;
mod nodes;
pub(crate) mod ops;
mod znode;

pub use children::Children;
pub(crate) use journal::Journal;
pub use nodes::Nodes;
pub use znode::{NodeKind, Znode};

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use ward_proto::SessionId;

/// The tree. Only the state machine's apply mutates it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "Stored")]
pub struct DataTree {
    /// Keyed by boxed paths: 16 bytes a slot instead of 24, in tables that have spare slots.
    /// Sharded, and cheap to copy ([`Nodes`]): what lets a snapshot leave the lock at once.
    nodes: Nodes,
    /// Paths of each session's ephemeral nodes, so ending a session is proportional to
    /// what it owns rather than to the size of the tree.
    ephemerals: HashMap<SessionId, BTreeSet<Box<str>>>,
    /// Paths of the containers and TTL nodes, so the cleanup looks at those alone rather
    /// than at the whole tree. Derived from the nodes: not in a snapshot, rebuilt when one
    /// is read ([`Stored`]).
    #[serde(skip)]
    swept: BTreeSet<Box<str>>,
}

/// The tree as a snapshot holds it: what [`DataTree`] serializes, field for field.
#[derive(Deserialize)]
struct Stored {
    nodes: Nodes,
    ephemerals: HashMap<SessionId, BTreeSet<Box<str>>>,
}

impl From<Stored> for DataTree {
    fn from(stored: Stored) -> DataTree {
        let swept = stored.nodes.iter().filter(|(_, node)| node.kind().is_swept()).map(|(p, _)| p.into()).collect();
        DataTree { nodes: stored.nodes, ephemerals: stored.ephemerals, swept }
    }
}

impl Default for DataTree {
    fn default() -> Self {
        let mut nodes = Nodes::default();
        nodes.insert("/".into(), Znode::new(Vec::new(), 0, 0, NodeKind::Persistent));
        DataTree { nodes, ephemerals: HashMap::new(), swept: BTreeSet::new() }
    }
}

impl DataTree {
    pub fn get(&self, path: &str) -> Option<&Znode> {
        self.nodes.get(path)
    }

    /// Number of nodes, the root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// How many of the node table's shards this tree shares with `other` (a copy of it, or
    /// the tree it was copied from): see [`Nodes`].
    pub fn shared_shards(&self, other: &DataTree) -> usize {
        self.nodes.shared_with(&other.nodes)
    }

    /// The path of the first child of `dir` whose name starts with `prefix`.
    pub fn child_with_prefix(&self, dir: &str, prefix: &str) -> Option<String> {
        let node = self.nodes.get(dir)?;
        let name = node.children.first_from(prefix).filter(|n| n.starts_with(prefix))?;
        Some(ward_proto::path::join(dir, name))
    }

    /// The session's ephemeral nodes, sorted.
    pub fn ephemerals(&self, session: SessionId) -> impl Iterator<Item = &str> {
        self.ephemerals.get(&session).into_iter().flatten().map(|path| &**path)
    }

    /// Every session's ephemeral nodes (grouped by session).
    pub fn all_ephemerals(&self) -> impl Iterator<Item = &str> {
        self.ephemerals.values().flatten().map(|path| &**path)
    }

    /// Adds a node, keeping the cleanup's index.
    fn insert_node(&mut self, path: &str, node: Znode) {
        if node.kind().is_swept() {
            self.swept.insert(path.into());
        }
        self.nodes.insert(path.into(), node);
    }

    /// Removes a node, keeping the cleanup's index.
    fn remove_node(&mut self, path: &str) -> Option<Znode> {
        let node = self.nodes.remove(path)?;
        if node.kind().is_swept() {
            self.swept.remove(path);
        }
        Some(node)
    }

    fn index_ephemeral(&mut self, session: SessionId, path: String) {
        self.ephemerals.entry(session).or_default().insert(path.into_boxed_str());
    }

    fn unindex_ephemeral(&mut self, session: SessionId, path: &str) {
        if let Some(set) = self.ephemerals.get_mut(&session) {
            set.remove(path);
            if set.is_empty() {
                self.ephemerals.remove(&session);
            }
        }
    }
}
