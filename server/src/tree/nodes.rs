//! The tree's nodes: records in a slab by id (`slab.rs`), found by path through a hash
//! index on (parent id, name) (`index.rs`), the parents' lists of their children's ids
//! beside them (`lists.rs`, `children.rs`).
//!
//! No path is stored per node: a path is found one component at a time from the root, and
//! written out (snapshots) by walking down from the root. A node costs its record (one
//! allocation: its fields, name and data, `record.rs`), a slot of 16 bytes, its id in the
//! index and its id in its parent's child list: about 60 bytes besides its name and data,
//! where a map of paths to nodes cost about 270 (docs/benchmarks.md, "g. Memory per znode").
//!
//! A copy shares the slab's chunks, the index's shards and the lists' shards, copy-on-write:
//! what lets a snapshot leave the state's lock at once (see `slab.rs`).
//!
//! Serialized as the one map of paths to node records it replaced, byte for byte (postcard
//! writes a map as its length and its pairs; their order never mattered).

use super::children::Children;
use super::index::Index;
use super::lists::Lists;
use super::record::{Fields, Record};
use super::slab::Slab;
use super::znode::{Loaded, Znode};
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ward_proto::path;

/// The root's id: it is the first node in and never leaves.
pub(super) const ROOT: u32 = 0;

/// The most nodes a snapshot's load makes room for before it has read them (about 42 MB of
/// index: 256 shards of 32,768 buckets of 5 bytes); a larger tree's index grows as it loads.
const MOST_RESERVED: usize = 1 << 22;

/// See the module's doc.
#[derive(Clone, Debug)]
pub(crate) struct Nodes {
    slab: Slab,
    index: Index,
    lists: Lists,
}

impl Default for Nodes {
    /// A tree of the root alone: empty data, made at zxid 0 and time 0.
    fn default() -> Self {
        let mut slab = Slab::default();
        slab.insert(Record::new(&Fields::new(ROOT, 0, 0), "", b""));
        Nodes { slab, index: Index::default(), lists: Lists::default() }
    }
}

impl Nodes {
    /// Makes room in the index for about `nodes` nodes in all.
    fn reserve(&mut self, nodes: usize) {
        self.index.reserve(&self.slab, nodes);
    }

    /// The id of the node at `path`.
    pub(super) fn lookup(&self, path: &str) -> Option<u32> {
        if path == "/" {
            return Some(ROOT);
        }
        let mut id = ROOT;
        for name in path.strip_prefix('/')?.split('/') {
            id = self.index.find(&self.slab, id, name.as_bytes())?;
        }
        Some(id)
    }

    /// The node `id`.
    pub(super) fn node(&self, id: u32) -> Option<Znode<'_>> {
        let record = self.slab.record(id)?;
        Some(Znode::view(record, Children::new(self.lists.get(id), &self.slab)))
    }

    /// The id of `parent`'s child `name`.
    pub(super) fn child(&self, parent: u32, name: &str) -> Option<u32> {
        self.index.find(&self.slab, parent, name.as_bytes())
    }

    pub(crate) fn get(&self, path: &str) -> Option<Znode<'_>> {
        self.node(self.lookup(path)?)
    }

    pub(super) fn fields(&self, id: u32) -> Option<Fields> {
        Some(self.slab.record(id)?.fields())
    }

    /// Changes the fields of `id` (copying its chunk first if a snapshot shares it).
    pub(super) fn update(&mut self, id: u32, change: impl FnOnce(&mut Fields)) {
        if let Some(record) = self.slab.record_mut(id) {
            let mut fields = record.fields();
            change(&mut fields);
            record.set_fields(&fields);
        }
    }

    /// Replaces the record of `id` (its name kept) with `record`, returning the old one.
    pub(super) fn replace(&mut self, id: u32, record: Record) -> Option<Record> {
        let parent = self.slab.record(id)?.parent();
        let slot = self.slab.record_mut(id)?;
        Some(std::mem::replace(slot, reparented(record, parent)))
    }

    /// Puts `record` in as a child of `parent`, which must have no child of its name.
    pub(super) fn insert(&mut self, parent: u32, record: Record) -> u32 {
        let id = self.slab.insert(reparented(record, parent));
        self.index.insert(&self.slab, id);
        let name = self.slab.record(id).map_or(&[][..], Record::name_bytes);
        self.lists.get_mut(parent).insert(&self.slab, id, name);
        id
    }

    /// Takes out the node `id`, which must have no children, and returns its record.
    pub(super) fn remove(&mut self, id: u32) -> Option<Record> {
        if id == ROOT {
            return None;
        }
        let parent = self.slab.record(id)?.parent();
        self.index.remove(&self.slab, id);
        let name = self.slab.record(id).map_or(&[][..], Record::name_bytes);
        self.lists.get_mut(parent).remove(&self.slab, id, name);
        self.lists.drop_if_empty(parent);
        self.slab.remove(id)
    }

    /// Number of nodes, the root included.
    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    /// How many pieces (slab chunks, index shards, shards of child lists) this and `other`
    /// share: all of them right after a copy, fewer as writes copy the pieces they change.
    pub(crate) fn shared_with(&self, other: &Nodes) -> usize {
        self.slab.shared_with(&other.slab) + self.index.shared_with(&other.index) + self.lists.shared_with(&other.lists)
    }

    /// Visits every node with its path, depth first from the root, each node before its
    /// children and children in name order. One path buffer for all: nothing is allocated
    /// per node.
    pub(crate) fn walk<E>(&self, mut visit: impl FnMut(&str, Znode<'_>) -> Result<(), E>) -> Result<(), E> {
        let Some(root) = self.node(ROOT) else { return Ok(()) };
        visit("/", root)?;
        let mut path = String::new();
        let mut stack = vec![(0, root.children.ids())];
        while let Some((len, ids)) = stack.last_mut() {
            let len = *len;
            let Some(id) = ids.next() else {
                stack.pop();
                continue;
            };
            let Some(node) = self.node(id) else { continue };
            path.truncate(len);
            path.push('/');
            path.push_str(node.name());
            visit(&path, node)?;
            if !node.children.is_empty() {
                stack.push((path.len(), node.children.ids()));
            }
        }
        Ok(())
    }

    /// [`Nodes::walk`] with a visit that cannot fail.
    pub(crate) fn each(&self, mut visit: impl FnMut(&str, Znode<'_>)) {
        let _ = self.walk(|path, node| {
            visit(path, node);
            Ok::<(), std::convert::Infallible>(())
        });
    }
}

/// A snapshot's nodes put into a tree as they are decoded, so that a large tree is never
/// also held as a list of decoded nodes. A snapshot lists a node after its parent (the
/// tree's walk, parents first and children in name order; older ones in path order, where a
/// parent is a prefix of its children): the parent is found on the stack of the last node's
/// ancestors, else looked up by path. A node whose parent is not there yet waits, and is put
/// in at the end, in path order.
#[derive(Default)]
struct Loader {
    nodes: Nodes,
    /// The last node put in and its ancestors, root first: (path, id).
    ancestors: Vec<(Box<str>, u32)>,
    /// Nodes met before their parent.
    waiting: Vec<(Box<str>, Loaded)>,
    /// The children the nodes' own lists say they have, summed.
    listed: usize,
}

impl Loader {
    fn put(&mut self, path: Box<str>, node: Loaded) -> Result<(), String> {
        if &*path == "/" {
            self.listed += node.children;
            self.nodes.replace(ROOT, node.record(ROOT, ""));
            self.ancestors = vec![(path, ROOT)];
            return Ok(());
        }
        let dir = path::parent(&path);
        while self.ancestors.last().is_some_and(|(p, _)| **p != *dir) {
            self.ancestors.pop();
        }
        let parent = match self.ancestors.last() {
            Some((_, id)) => *id,
            None => match self.nodes.lookup(dir) {
                // Its siblings, next, find it on the stack.
                Some(id) => {
                    self.ancestors.push((dir.into(), id));
                    id
                }
                None => {
                    self.waiting.push((path, node));
                    return Ok(());
                }
            },
        };
        let name = path::name(&path);
        if self.nodes.child(parent, name).is_some() {
            return Err(format!("snapshot has {path} twice"));
        }
        self.listed += node.children;
        let id = self.nodes.insert(parent, node.record(parent, name));
        self.ancestors.push((path, id));
        Ok(())
    }

    fn finish(mut self) -> Result<Nodes, String> {
        let mut waiting = std::mem::take(&mut self.waiting);
        waiting.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (path, node) in waiting {
            self.ancestors.clear();
            let dir = path::parent(&path);
            if self.nodes.lookup(dir).is_none() {
                return Err(format!("snapshot has {path} but not its parent"));
            }
            self.put(path, node)?;
        }
        if self.listed + 1 != self.nodes.len() {
            tracing::warn!(
                nodes = self.nodes.len(),
                listed = self.listed,
                "a snapshot's child lists do not match its nodes"
            );
        }
        Ok(self.nodes)
    }
}

/// `record`, made the child of `parent`.
fn reparented(mut record: Record, parent: u32) -> Record {
    if record.parent() != parent {
        let fields = Fields { parent, ..record.fields() };
        record.set_fields(&fields);
    }
    record
}

impl Serialize for Nodes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        self.walk(|path, node| map.serialize_entry(path, &node))?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Nodes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NodesVisitor;
        impl<'de> Visitor<'de> for NodesVisitor {
            type Value = Nodes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of paths to nodes")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Nodes, A::Error> {
                let mut loader = Loader::default();
                // The count is the file's word until its checksum is checked at the end: a
                // damaged one reserves no more than this.
                loader.nodes.reserve(map.size_hint().unwrap_or(0).min(MOST_RESERVED));
                while let Some((path, node)) = map.next_entry::<Box<str>, Loaded>()? {
                    loader.put(path, node).map_err(serde::de::Error::custom)?;
                }
                loader.finish().map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_map(NodesVisitor)
    }
}
