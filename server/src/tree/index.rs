//! Which node is the child `name` of node `parent`: a hash index of ids.
//!
//! Keyed by (parent id, name) rather than by path, so that no path is stored per node: the
//! table holds 4-byte ids, and a probe compares a candidate by reading its parent and name
//! from its record in the slab. That is `hashbrown`'s `HashTable`, a hash table whose
//! entries need not carry their own key (std's maps cannot compare through another
//! structure); a path is found by one probe per component, from the root down.
//!
//! Beside each id the table keeps 32 bits of its hash (a [`Slot`]), and the table's own hash
//! is made from those bits alone. A table that grows then rehashes from its slots, where
//! reading every node's record to hash its name again would miss the cache once or twice per
//! node: at a million nodes that was a pause of about half a second each time the shards
//! doubled (at 230k, 460k and 920k nodes). A probe also reads a candidate's record only when
//! the 32 bits agree.
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
    shards: Box<[Arc<HashTable<Slot>>]>,
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

/// A node's id and the low 32 bits of its hash.
#[derive(Clone, Copy)]
struct Slot {
    id: u32,
    tag: u32,
}

/// The shard of a hash: bits the slot's tag does not hold, so that each shard still sees
/// well-spread tags.
fn shard(hash: u64) -> usize {
    (hash >> 40) as usize % SHARDS
}

fn tag(hash: u64) -> u32 {
    hash as u32
}

/// The table's hash of a tag. `hashbrown` takes a bucket from the low bits and a control byte
/// from the top seven: multiplying by an odd constant carries the tag's bits into both.
fn spread(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9e37_79b9_7f4a_7c15)
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
    pub fn find(&self, slab: &Slab, parent: u32, name: &[u8]) -> Option<u32> {
        let hash = hash(&self.seed, parent, name);
        let tag = tag(hash);
        let is = |slot: &Slot| {
            slot.tag == tag && slab.record(slot.id).is_some_and(|r| r.parent() == parent && r.name_bytes() == name)
        };
        self.shards[shard(hash)].find(spread(tag), is).map(|slot| slot.id)
    }

    /// Adds `id`, whose record is in `slab` already (and no sibling has its name).
    pub fn insert(&mut self, slab: &Slab, id: u32) {
        let hash = hash_of(&self.seed, slab, id);
        let table = Arc::make_mut(&mut self.shards[shard(hash)]);
        let slot = Slot { id, tag: tag(hash) };
        table.insert_unique(spread(slot.tag), slot, |other| spread(other.tag));
    }

    /// Removes `id`, whose record is still in `slab`.
    pub fn remove(&mut self, slab: &Slab, id: u32) {
        let hash = hash_of(&self.seed, slab, id);
        let table = Arc::make_mut(&mut self.shards[shard(hash)]);
        if let Ok(entry) = table.find_entry(spread(tag(hash)), |other| other.id == id) {
            entry.remove();
        }
    }

    /// How many shards this and `other` share.
    pub fn shared_with(&self, other: &Index) -> usize {
        self.shards.iter().zip(other.shards.iter()).filter(|(a, b)| Arc::ptr_eq(a, b)).count()
    }
}
