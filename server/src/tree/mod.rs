//! The data tree: znodes by path, plus each session's ephemerals. Pure data, no I/O and no
//! notifications; mutations report [`Change`](crate::command::Change)s for the watch registry to act on.

mod children;
pub(crate) mod cleanup;
mod index;
mod journal;
mod lists;
mod nodes;
pub(crate) mod ops;
mod record;
mod slab;
#[cfg(test)]
mod tests;
mod znode;

pub(crate) use journal::Journal;
pub(crate) use nodes::Nodes;
pub(crate) use znode::{NodeKind, Znode};

use crate::acl::table::{AclId, AclTable};
use record::Record;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use ward_proto::{Acl, SessionId, Stat};

/// The tree. Only the state machine's apply mutates it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(from = "Stored")]
pub struct DataTree {
    /// By id, found by path through an index on (parent, name); cheap to copy ([`Nodes`]):
    /// what lets a snapshot leave the lock at once.
    nodes: Nodes,
    /// Paths of each session's ephemeral nodes, so ending a session is proportional to
    /// what it owns rather than to the size of the tree. Paths, like `swept` and `delayed`,
    /// rather than node ids: ids are this process's own (`slab.rs`), and these sets are
    /// walked in path order, which every member shares.
    ephemerals: HashMap<SessionId, BTreeSet<Box<str>>>,
    /// Paths of the containers and TTL nodes, so the cleanup looks at those alone rather
    /// than at the whole tree. Derived from the nodes: not in a snapshot, rebuilt when one
    /// is read ([`Stored`]).
    #[serde(skip)]
    swept: BTreeSet<Box<str>>,
    /// Paths of the lock contenders kept for their lock-delay ([`NodeKind::LockDelay`]),
    /// for the leader's lock-delay task. Derived like `swept`.
    #[serde(skip)]
    delayed: BTreeSet<Box<str>>,
    /// The ACLs the nodes point to. Not in the tree's part of a snapshot, which keeps the
    /// layout older snapshots have: the state machine writes it after everything else
    /// (`crate::state`), and puts it back when a snapshot is read.
    #[serde(skip)]
    pub(crate) acls: AclTable,
    /// ZooKeeper's approximate data size (`mntr`'s `zk_approximate_data_size`): each node's
    /// path and data lengths, summed. Kept as nodes come and go so that `mntr` costs no walk;
    /// derived like `swept`.
    #[serde(skip)]
    data_size: u64,
}

/// The tree as a snapshot holds it: what [`DataTree`] serializes, field for field.
#[derive(Deserialize)]
struct Stored {
    nodes: Nodes,
    ephemerals: HashMap<SessionId, BTreeSet<Box<str>>>,
}

impl From<Stored> for DataTree {
    fn from(stored: Stored) -> DataTree {
        let (mut swept, mut delayed, mut data_size) = (BTreeSet::new(), BTreeSet::new(), 0);
        stored.nodes.each(|path, node| {
            data_size += footprint(path, Some(node.data()));
            if node.kind().is_swept() {
                swept.insert(path.into());
            }
            if node.kind().is_delayed() {
                delayed.insert(path.into());
            }
        });
        let acls = AclTable::default();
        DataTree { nodes: stored.nodes, ephemerals: stored.ephemerals, swept, delayed, acls, data_size }
    }
}

/// What one node adds to [`DataTree::approximate_data_size`]: as ZooKeeper's
/// `DataTree.approximateDataSize`, its path's length and its data's. ZooKeeper keys the root
/// by the empty path, so the root's path counts nothing here either, and a fresh tree (an
/// empty root) counts 0 however it was made.
fn footprint(path: &str, data: Option<&[u8]>) -> u64 {
    let path_len = if path == "/" { 0 } else { path.len() };
    (path_len + data.map_or(0, <[u8]>::len)) as u64
}

impl DataTree {
    pub fn get(&self, path: &str) -> Option<Znode<'_>> {
        self.nodes.get(path)
    }

    /// A node's stat.
    pub fn stat(&self, node: Znode<'_>) -> Stat {
        node.stat(self.acls.get(node.acl).1)
    }

    /// A node's ACL.
    pub fn acl(&self, node: Znode<'_>) -> &[Acl] {
        self.acls.get(node.acl).0
    }

    /// The ACL table (for the snapshot and the metrics).
    pub(crate) fn acl_table(&self) -> &AclTable {
        &self.acls
    }

    /// Every node whose ACL slot is not the open one: what a snapshot lists.
    pub(crate) fn acl_assignments(&self) -> Vec<(String, AclId)> {
        let mut out = Vec::new();
        self.nodes.each(|path, node| {
            if node.acl != crate::acl::table::OPEN {
                out.push((path.to_string(), node.acl));
            }
        });
        out
    }

    /// Puts back what [`DataTree::acl_assignments`] and the table's slots listed: each
    /// node its slot, each slot its count. Nodes not listed keep the open ACL; a listed
    /// node that is missing, or a slot not in the table, makes the snapshot unusable.
    pub(crate) fn restore_acls(&mut self, table: AclTable, nodes: Vec<(String, AclId)>) -> Result<(), String> {
        self.acls = table;
        for (path, acl) in nodes {
            if !self.acls.contains(acl) {
                return Err(format!("node {path} points to ACL slot {acl}, which the snapshot does not have"));
            }
            let id = self.nodes.lookup(&path).ok_or_else(|| format!("ACL for missing node {path}"))?;
            self.nodes.update(id, |f| f.acl = acl);
            self.acls.retain(acl);
        }
        self.acls.collect();
        Ok(())
    }

    /// The nodes' path and data lengths, summed (`footprint`).
    pub(crate) fn approximate_data_size(&self) -> u64 {
        self.data_size
    }

    /// Number of nodes, the root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// How many pieces of the node table (slab chunks and index shards) this tree shares
    /// with `other` (a copy of it, or the tree it was copied from): see [`Nodes`].
    pub fn shared_shards(&self, other: &DataTree) -> usize {
        self.nodes.shared_with(&other.nodes)
    }

    /// The path of the first child of `dir` whose name starts with `prefix`.
    pub(crate) fn child_with_prefix(&self, dir: &str, prefix: &str) -> Option<String> {
        let node = self.nodes.get(dir)?;
        let name = node.children.first_from(prefix).filter(|n| n.starts_with(prefix))?;
        Some(ward_proto::path::join(dir, name))
    }

    /// The session's ephemeral nodes, sorted.
    pub fn ephemerals(&self, session: SessionId) -> impl Iterator<Item = &str> {
        self.ephemerals.get(&session).into_iter().flatten().map(|path| &**path)
    }

    /// Every session's ephemeral nodes (grouped by session).
    pub(crate) fn all_ephemerals(&self) -> impl Iterator<Item = &str> {
        self.ephemerals.values().flatten().map(|path| &**path)
    }

    /// Adds the node `record` at `path`, under `parent` (the id of the node at the path's
    /// parent), keeping the cleanup's indexes.
    fn insert_node(&mut self, path: &str, parent: u32, record: Record) -> u32 {
        let fields = record.fields();
        let kind = NodeKind::decode(fields.owner);
        if kind.is_swept() {
            self.swept.insert(path.into());
        }
        if kind.is_delayed() {
            self.delayed.insert(path.into());
        }
        self.acls.retain(fields.acl);
        self.data_size += footprint(path, record.data());
        self.nodes.insert(parent, record)
    }

    /// Removes the node at `path` (which has no children), keeping the cleanup's indexes.
    fn remove_node(&mut self, path: &str) -> Option<Record> {
        let record = self.nodes.remove(self.nodes.lookup(path)?)?;
        let fields = record.fields();
        let kind = NodeKind::decode(fields.owner);
        if kind.is_swept() {
            self.swept.remove(path);
        }
        if kind.is_delayed() {
            self.delayed.remove(path);
        }
        self.acls.release(fields.acl);
        self.data_size = self.data_size.saturating_sub(footprint(path, record.data()));
        Some(record)
    }

    /// Replaces the record of node `id` (at `path`) with `record`, which keeps its path:
    /// a new version of its data. Returns the old record.
    fn replace_node(&mut self, id: u32, path: &str, record: Record) -> Option<Record> {
        let added = footprint(path, record.data());
        let old = self.nodes.replace(id, record)?;
        self.data_size = (self.data_size + added).saturating_sub(footprint(path, old.data()));
        Some(old)
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
