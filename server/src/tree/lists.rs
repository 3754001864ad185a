//! The child lists, by parent id: only the nodes that have children have one.
//!
//! Kept apart from the slab rather than as a pointer in every slot: most nodes are leaves,
//! and a pointer per slot would cost every znode 8 bytes (a third of its slot) for lists
//! that few nodes have. Sharded by id, each shard behind its own `Arc` and each list too,
//! for the snapshot's copy-on-write as in `slab.rs`: a write copies its shard's table of
//! pointers, and the list it changes, at most once per snapshot.

use super::children::ChildList;
use std::collections::HashMap;
use std::sync::Arc;

const SHARDS: usize = 64;

type Shard = HashMap<u32, Arc<ChildList>>;

/// See the module's doc.
#[derive(Clone, Debug)]
pub(super) struct Lists {
    shards: Box<[Arc<Shard>]>,
}

impl Default for Lists {
    fn default() -> Self {
        Lists { shards: (0..SHARDS).map(|_| Arc::default()).collect() }
    }
}

fn shard(id: u32) -> usize {
    id as usize % SHARDS
}

impl Lists {
    pub(super) fn get(&self, id: u32) -> Option<&ChildList> {
        self.shards[shard(id)].get(&id).map(|list| &**list)
    }

    /// The list of `id`, to change (made empty if it has none); copies its shard's table,
    /// and then the list, first if a snapshot shares them.
    pub(super) fn get_mut(&mut self, id: u32) -> &mut ChildList {
        Arc::make_mut(Arc::make_mut(&mut self.shards[shard(id)]).entry(id).or_default())
    }

    /// Drops the list of `id` if it is empty: a node whose last child went is a leaf again.
    pub(super) fn drop_if_empty(&mut self, id: u32) {
        if self.get(id).is_some_and(ChildList::is_empty) {
            Arc::make_mut(&mut self.shards[shard(id)]).remove(&id);
        }
    }

    /// How many shards this and `other` share.
    pub(super) fn shared_with(&self, other: &Lists) -> usize {
        self.shards.iter().zip(other.shards.iter()).filter(|(a, b)| Arc::ptr_eq(a, b)).count()
    }
}
