//! Which node is the child `name` of node `parent`: a hash index of ids.
//!
//! Keyed by (parent id, name) rather than by path, so that no path is stored per node: the
//! table holds bare 4-byte ids, and a probe compares a candidate by reading its parent and
//! name from its record in the slab. That is `hashbrown`'s `HashTable`, a hash table whose
//! entries need not carry their own key (std's maps cannot compare through another
//! structure); a path is found by one probe per component, from the root down.
//!
//! In [`SHARDS`] tables, each behind its own `Arc`, for the same reason as the slab's chunks
//! (`slab.rs`): a snapshot's copy shares them, and a write copies one shard (a 256th of the
//! ids) at most once per snapshot. Sharding also bounds a table's growth: a shard doubles at
//! 1/256 of the size one table would, so no single write pays for rehashing every node.

use super::slab::Slab;
use hashbrown::HashTable;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

pub(super) const SHARDS: usize = 256;

/// See the module's doc.
#[derive(Clone)]
pub(super) struct Index {
    shards: Box<[Arc<HashTable<u32>>]>,
    /// Seeded per process (as std's maps are), so that names cannot be chosen to collide.
    /// A copy of the tree keeps the seed: its tables were filled with it.
    seed: Seed,
}

impl Default for Index {
    fn default() -> Self {
        Index { shards: (0..SHARDS).map(|_| Arc::default()).collect(), seed: Default::default() }
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("len", &self.shards.iter().map(|s| s.len()).sum::<usize>()).finish()
    }
}

/// The shard of a hash: bits that neither the table's bucket index (the low bits) nor its
/// control bytes (the top seven) use, so that each shard still sees well-spread hashes.
fn shard(hash: u64) -> usize {
    (hash >> 40) as usize % SHARDS
}

type Seed = std::collections::hash_map::RandomState;

fn hash(seed: &Seed, parent: u32, name: &[u8]) -> u64 {
    let mut h = seed.build_hasher();
    parent.hash(&mut h);
    name.hash(&mut h);
    h.finish()
}

fn hash_of(seed: &Seed, slab: &Slab, id: u32) -> u64 {
    slab.record(id).map_or(0, |r| hash(seed, r.parent(), r.name_bytes()))
}

impl Index {
    /// The id of `parent`'s child `name`.
    pub(super) fn find(&self, slab: &Slab, parent: u32, name: &[u8]) -> Option<u32> {
        let hash = hash(&self.seed, parent, name);
        let is = |&id: &u32| slab.record(id).is_some_and(|r| r.parent() == parent && r.name_bytes() == name);
        self.shards[shard(hash)].find(hash, is).copied()
    }

    /// Makes room for about `nodes` ids in all, spread evenly over the shards (as hashes
    /// spread them), so that loading a snapshot does not rehash each shard as it grows.
    pub(super) fn reserve(&mut self, slab: &Slab, nodes: usize) {
        let per_shard = nodes / SHARDS + nodes / SHARDS / 8 + 8;
        let seed = &self.seed;
        for table in self.shards.iter_mut() {
            let table = Arc::make_mut(table);
            let more = per_shard.saturating_sub(table.len());
            table.reserve(more, |&other| hash_of(seed, slab, other));
        }
    }

    /// Adds `id`, whose record is in `slab` already (and no sibling has its name).
    pub(super) fn insert(&mut self, slab: &Slab, id: u32) {
        let (seed, hash) = (&self.seed, hash_of(&self.seed, slab, id));
        let table = Arc::make_mut(&mut self.shards[shard(hash)]);
        table.insert_unique(hash, id, |&other| hash_of(seed, slab, other));
    }

    /// Removes `id`, whose record is still in `slab`.
    pub(super) fn remove(&mut self, slab: &Slab, id: u32) {
        let hash = hash_of(&self.seed, slab, id);
        let table = Arc::make_mut(&mut self.shards[shard(hash)]);
        if let Ok(entry) = table.find_entry(hash, |&other| other == id) {
            entry.remove();
        }
    }

    /// How many shards this and `other` share.
    pub(super) fn shared_with(&self, other: &Index) -> usize {
        self.shards.iter().zip(other.shards.iter()).filter(|(a, b)| Arc::ptr_eq(a, b)).count()
    }
}
