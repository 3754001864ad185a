//! The nodes by 32-bit id, in chunks that a copy of the tree shares instead of copying.
//!
//! A snapshot must see the state at one applied index, but serializing a tree of a million
//! nodes takes about a second, and writes must not wait that long. So a snapshot takes a
//! copy under the state's lock and serializes the copy outside it (`raft/state_machine.rs`).
//! Copying the slab copies a pointer per chunk of [`CHUNK`] ids (a thousand pointers at a
//! million nodes); a write to a chunk that a snapshot still holds first copies that chunk
//! (its records, some 150 KB at 100 bytes of data each), so a
//! snapshot costs the writers at most one chunk copy per chunk they change while it is being
//! written out. At rest nothing is shared and nothing is copied.
//!
//! Ids are what the index and the child lists hold: 4 bytes instead of a path. A deleted
//! node's id goes on a free list threaded through the free slots, and the next create takes
//! it, so the slab does not grow with churn. Ids are local to this process: a member that
//! read a snapshot numbers its nodes differently, so nothing that must agree across members
//! (orders, digests, snapshots) ever depends on them.

use super::record::Record;
use std::sync::Arc;

/// Ids per chunk: small enough that copying one is cheap (well under a millisecond), large
/// enough that copying the list of chunks is too.
pub(super) const CHUNK: usize = 1024;

/// One id's place: a node's record or a link in the free list. 16 bytes: the record's
/// pointer and length, the free link fitting beside the pointer (whose null is the tag).
#[derive(Clone, Debug)]
enum Slot {
    Used(Record),
    /// The next free id (`u32::MAX`: none).
    Free(u32),
}

const NONE: u32 = u32::MAX;

/// See the module's doc.
#[derive(Clone, Debug)]
pub(super) struct Slab {
    chunks: Vec<Arc<Vec<Slot>>>,
    free: u32,
    len: usize,
}

impl Default for Slab {
    fn default() -> Self {
        Slab { chunks: Vec::new(), free: NONE, len: 0 }
    }
}

fn place(id: u32) -> (usize, usize) {
    let id = id as usize;
    (id / CHUNK, id % CHUNK)
}

impl Slab {
    fn slot(&self, id: u32) -> Option<&Slot> {
        let (chunk, at) = place(id);
        self.chunks.get(chunk)?.get(at)
    }

    /// The slot of `id`, to change: copies its chunk first if a snapshot shares it.
    fn slot_mut(&mut self, id: u32) -> Option<&mut Slot> {
        let (chunk, at) = place(id);
        Arc::make_mut(self.chunks.get_mut(chunk)?).get_mut(at)
    }

    pub(super) fn record(&self, id: u32) -> Option<&Record> {
        match self.slot(id)? {
            Slot::Used(record) => Some(record),
            Slot::Free(_) => None,
        }
    }

    pub(super) fn record_mut(&mut self, id: u32) -> Option<&mut Record> {
        match self.slot_mut(id)? {
            Slot::Used(record) => Some(record),
            Slot::Free(_) => None,
        }
    }

    /// Stores `record` under a free id, and returns the id.
    pub(super) fn insert(&mut self, record: Record) -> u32 {
        self.len += 1;
        let id = self.free;
        if let Some(slot) = self.slot_mut(id) {
            if let Slot::Free(next) = *slot {
                *slot = Slot::Used(record);
                self.free = next;
                return id;
            }
        }
        if self.chunks.last().is_none_or(|chunk| chunk.len() == CHUNK) {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        let last = self.chunks.len() - 1;
        let chunk = Arc::make_mut(&mut self.chunks[last]);
        chunk.push(Slot::Used(record));
        u32::try_from(last * CHUNK + chunk.len() - 1).unwrap_or(NONE)
    }

    /// Frees `id`, returning its record.
    pub(super) fn remove(&mut self, id: u32) -> Option<Record> {
        let free = self.free;
        let slot = self.slot_mut(id)?;
        if matches!(slot, Slot::Free(_)) {
            return None;
        }
        let Slot::Used(record) = std::mem::replace(slot, Slot::Free(free)) else { return None };
        self.free = id;
        self.len -= 1;
        Some(record)
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// How many chunks this and `other` share: all of them right after a copy, fewer as
    /// writes copy the chunks they change.
    pub(super) fn shared_with(&self, other: &Slab) -> usize {
        self.chunks.iter().zip(other.chunks.iter()).filter(|(a, b)| Arc::ptr_eq(a, b)).count()
    }

    #[cfg(test)]
    pub(super) fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::record::Fields;

    fn record(name: &str) -> Record {
        Record::new(&Fields::new(0, 1, 1), name, b"")
    }

    #[test]
    fn a_slot_is_the_records_pointer_and_length() {
        assert_eq!(std::mem::size_of::<Slot>(), 16);
    }

    #[test]
    fn freed_ids_are_taken_again_and_lookups_of_them_fail() {
        let mut slab = Slab::default();
        let ids: Vec<u32> = (0..3000).map(|i| slab.insert(record(&format!("n{i}")))).collect();
        assert_eq!(ids, (0..3000).collect::<Vec<u32>>());
        assert_eq!(slab.remove(5).map(|r| r.name().to_string()), Some("n5".into()));
        assert_eq!(slab.remove(2500).map(|r| r.name().to_string()), Some("n2500".into()));
        assert!(slab.remove(5).is_none() && slab.record(5).is_none());
        assert_eq!((slab.len(), slab.insert(record("a")), slab.insert(record("b"))), (2998, 2500, 5));
        assert_eq!((slab.insert(record("c")), slab.chunks()), (3000, 3));
    }

    #[test]
    fn a_copy_shares_chunks_until_one_is_written() {
        let mut slab = Slab::default();
        for i in 0..(3 * CHUNK) {
            slab.insert(record(&format!("n{i}")));
        }
        let copy = slab.clone();
        assert_eq!(slab.shared_with(&copy), 3);
        slab.remove(1);
        assert_eq!(slab.shared_with(&copy), 2, "the written chunk was copied");
        assert_eq!(copy.record(1).map(Record::name), Some("n1"));
    }
}
