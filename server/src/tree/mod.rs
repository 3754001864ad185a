//! The data tree: znodes by path, plus each session's ephemerals. Pure data, no I/O and no
//! notifications; mutations report [`Change`](crate::command::Change)s for the watch registry to act on.

mod children;
mod journal;
pub(crate) mod ops;
mod znode;

pub use children::Children;
pub(crate) use journal::Journal;
pub use znode::Znode;

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use ward_proto::SessionId;

/// The tree. Only the state machine's apply mutates it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DataTree {
    /// Keyed by boxed paths: 16 bytes a slot instead of 24, in a table that has spare slots.
    nodes: HashMap<Box<str>, Znode>,
    /// Paths of each session's ephemeral nodes, so ending a session is proportional to
    /// what it owns rather than to the size of the tree.
    ephemerals: HashMap<SessionId, BTreeSet<Box<str>>>,
}

impl Default for DataTree {
    fn default() -> Self {
        let mut nodes = HashMap::new();
        nodes.insert("/".into(), Znode::new(Vec::new(), 0, 0, None));
        DataTree { nodes, ephemerals: HashMap::new() }
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
