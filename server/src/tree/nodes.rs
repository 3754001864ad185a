//! The tree's nodes by path, in shards that a copy of the tree shares instead of copying.
//!
//! A snapshot must see the state at one applied index, but serializing a tree of a million
//! nodes takes about a second, and writes must not wait that long. So a snapshot takes a
//! copy under the state's lock and serializes the copy outside it (`raft/state_machine.rs`).
//! Copying this map copies 256 pointers: every shard is shared, copy-on-write, and so is
//! every node in it. A write to a shard that a snapshot still holds first copies that shard's
//! table (its paths, and a pointer per node: a fraction of a millisecond at a million nodes),
//! and a write to a node the snapshot still holds copies that node alone. So a snapshot costs
//! the writers at most one table copy per shard and one node copy per node they change while
//! it is being written out, never a copy of every node's data; at rest nothing is shared and
//! nothing is copied. Sharding also bounds a table's growth: a shard doubles at 1/256 of the
//! size one table would, so no single write pays for moving every node.
//!
//! Each node in its own allocation also keeps the tables small: a slot is a path and a
//! pointer (24 bytes) rather than a path and a whole node (104), so the spare capacity of a
//! hash table (up to half of it just after it doubles) costs far less.
//!
//! Serialized as the one map of paths to nodes it replaced, byte for byte (postcard writes a
//! map as its length and its pairs; their order never mattered).

use super::Znode;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::sync::Arc;

const SHARDS: usize = 256;

type Shard = HashMap<Box<str>, Arc<Znode>>;

/// See the module's doc.
#[derive(Clone, Debug)]
pub struct Nodes {
    shards: Box<[Arc<Shard>]>,
    len: usize,
}

impl Default for Nodes {
    fn default() -> Self {
        Nodes { shards: (0..SHARDS).map(|_| Arc::default()).collect(), len: 0 }
    }
}

/// FNV-1a, folded: which shard holds `path`. Fixed (not seeded) so that it costs a few
/// nanoseconds; the shards' own tables hash with a random seed as usual.
fn shard_of(path: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    ((h >> 32) ^ h) as usize % SHARDS
}

impl Nodes {
    pub fn get(&self, path: &str) -> Option<&Znode> {
        self.shards[shard_of(path)].get(path).map(|node| &**node)
    }

    pub fn contains_key(&self, path: &str) -> bool {
        self.shards[shard_of(path)].contains_key(path)
    }

    /// The node at `path`, to change; copies its shard's table, and then the node, first if
    /// a snapshot shares them.
    pub fn get_mut(&mut self, path: &str) -> Option<&mut Znode> {
        Arc::make_mut(&mut self.shards[shard_of(path)]).get_mut(path).map(Arc::make_mut)
    }

    pub fn insert(&mut self, path: Box<str>, node: Znode) -> Option<Znode> {
        let old = Arc::make_mut(&mut self.shards[shard_of(&path)]).insert(path, Arc::new(node));
        if old.is_none() {
            self.len += 1;
        }
        old.map(Arc::unwrap_or_clone)
    }

    pub fn remove(&mut self, path: &str) -> Option<Znode> {
        let old = Arc::make_mut(&mut self.shards[shard_of(path)]).remove(path);
        if old.is_some() {
            self.len -= 1;
        }
        old.map(Arc::unwrap_or_clone)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many shards this and `other` share: all of them right after a copy, fewer as
    /// writes copy the shards they change.
    pub fn shared_with(&self, other: &Nodes) -> usize {
        self.shards.iter().zip(other.shards.iter()).filter(|(a, b)| Arc::ptr_eq(a, b)).count()
    }

    /// Every node, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Znode)> {
        self.shards.iter().flat_map(|shard| shard.iter()).map(|(path, node)| (&**path, &**node))
    }
}

impl Serialize for Nodes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len))?;
        for (path, node) in self.iter() {
            map.serialize_entry(path, node)?;
        }
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
                let mut nodes = Nodes::default();
                while let Some((path, node)) = map.next_entry::<Box<str>, Znode>()? {
                    nodes.insert(path, node);
                }
                Ok(nodes)
            }
        }
        d.deserialize_map(NodesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::NodeKind;

    fn node(data: &[u8]) -> Znode {
        Znode::new(data.to_vec(), 1, 1, NodeKind::Persistent)
    }

    /// A copy is a snapshot: later changes to the original do not reach it, and the
    /// original copies a shard only when it changes one the copy still holds.
    #[test]
    fn a_copy_keeps_the_state_it_was_taken_at() {
        let mut nodes = Nodes::default();
        for i in 0..1000 {
            nodes.insert(format!("/n{i}").into(), node(b"before"));
        }
        let copy = nodes.clone();
        let shared =
            |a: &Nodes, b: &Nodes| a.shards.iter().zip(b.shards.iter()).filter(|(x, y)| Arc::ptr_eq(x, y)).count();
        assert_eq!(shared(&nodes, &copy), SHARDS, "a copy shares every shard");
        nodes.get_mut("/n1").expect("n1").version = 7;
        nodes.remove("/n2");
        nodes.insert("/new".into(), node(b"x"));
        assert_eq!(copy.get("/n1").map(|n| n.version), Some(0));
        assert!(copy.get("/n2").is_some() && copy.get("/new").is_none());
        assert_eq!((nodes.len(), copy.len()), (1000, 1000));
        assert!(nodes.shared_with(&copy) >= SHARDS - 3, "only the shards written to were copied");
        // In a copied shard, the nodes not written to are still shared, not copied.
        let neighbour = (3..1000).map(|i| format!("/n{i}")).find(|p| shard_of(p) == shard_of("/n1")).expect("one");
        let node = |n: &Nodes, p: &str| n.shards[shard_of(p)].get(p).cloned().expect("there");
        assert!(Arc::ptr_eq(&node(&nodes, &neighbour), &node(&copy, &neighbour)));
        assert!(!Arc::ptr_eq(&node(&nodes, "/n1"), &node(&copy, "/n1")));
        drop(copy);
        assert_eq!(nodes.get("/n1").map(|n| n.version), Some(7));
    }

    /// The snapshot format is unchanged: the nodes are written as the one map they were.
    #[test]
    fn serializes_as_one_map_of_paths_to_nodes() {
        let mut nodes = Nodes::default();
        let mut plain = HashMap::new();
        for i in 0..300 {
            nodes.insert(format!("/n{i}").into(), node(format!("{i}").as_bytes()));
            plain.insert(Box::<str>::from(format!("/n{i}")), node(format!("{i}").as_bytes()));
        }
        let bytes = postcard::to_allocvec(&nodes).expect("encode");
        let as_plain: HashMap<Box<str>, Znode> = postcard::from_bytes(&bytes).expect("decode as a plain map");
        assert_eq!(as_plain, plain);
        let from_plain: Nodes = postcard::from_bytes(&postcard::to_allocvec(&plain).expect("encode")).expect("decode");
        assert_eq!(from_plain.len(), 300);
        assert!(plain.iter().all(|(path, n)| from_plain.get(path) == Some(n)));
    }
}
