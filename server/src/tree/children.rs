//! A node's children: their ids, kept sorted by name.
//!
//! Sorted so that listings, `first_from` (the lock recipes' "first contender") and pages of
//! a listing come out in order without a sort. An id is 4 bytes where a name was a boxed
//! string in a B-tree (about 60 bytes a child); the names are read from the children's own
//! records when the list is searched. A directory can hold a million children (a lock
//! queue, a service registry), so the ids are kept in blocks of at most [`BLOCK`]: an
//! insert moves at most a block's ids, and splits a full block in two. A block that fills
//! up at its end (names created in order, as sequential nodes are) is not split but
//! followed by a new one, so blocks filled in order stay full.
//!
//! Serialized, as it always was, as the sorted sequence of names (see [`Children`]).

use super::slab::Slab;
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

/// Ids per block at most: an insert into a full block moves 2 KB.
const BLOCK: usize = 512;

/// See the module's doc. Never holds an empty block.
#[derive(Clone, Debug, Default)]
pub(super) struct ChildList {
    blocks: Vec<Vec<u32>>,
    len: usize,
}

fn name(slab: &Slab, id: u32) -> &[u8] {
    slab.record(id).map_or(&[], |r| r.name_bytes())
}

impl ChildList {
    /// The place of the first child for which `before` is false (children are sorted, so
    /// `before` holds for a prefix of them): a block and a position in it.
    fn seek(&self, slab: &Slab, before: impl Fn(&[u8]) -> bool) -> (usize, usize) {
        let b = self.blocks.partition_point(|block| block.last().is_some_and(|&id| before(name(slab, id))));
        match self.blocks.get(b) {
            Some(block) => (b, block.partition_point(|&id| before(name(slab, id)))),
            None => (b, 0),
        }
    }

    /// The ids from the place `(b, p)` on, in order.
    fn from(&self, (b, p): (usize, usize)) -> impl Iterator<Item = u32> + '_ {
        let blocks = self.blocks.get(b..).unwrap_or_default();
        blocks.iter().enumerate().flat_map(move |(i, block)| block[if i == 0 { p } else { 0 }..].iter().copied())
    }

    /// Adds `id`, whose name is `new` (not already a child's name).
    pub(super) fn insert(&mut self, slab: &Slab, id: u32, new: &[u8]) {
        self.len += 1;
        let (mut b, mut p) = self.seek(slab, |n| n < new);
        // Between two blocks (or after the last): the end of the earlier one, so that names
        // created in order fill their block.
        if p == 0 && b > 0 {
            b -= 1;
            p = self.blocks[b].len();
        }
        let Some(block) = self.blocks.get_mut(b) else {
            self.blocks.push(vec![id]);
            return;
        };
        if block.len() < BLOCK {
            block.insert(p, id);
        } else if p == block.len() {
            self.blocks.insert(b + 1, vec![id]);
        } else if p == 0 {
            self.blocks.insert(b, vec![id]);
        } else {
            let right = block.split_off(BLOCK / 2);
            match p.checked_sub(BLOCK / 2) {
                Some(q) if q > 0 => self.blocks.insert(b + 1, insert_at(right, q, id)),
                _ => {
                    block.insert(p, id);
                    self.blocks.insert(b + 1, right);
                }
            }
        }
    }

    /// Removes `id`, whose name is `old`.
    pub(super) fn remove(&mut self, slab: &Slab, id: u32, old: &[u8]) {
        let (b, p) = self.seek(slab, |n| n < old);
        let Some(block) = self.blocks.get_mut(b).filter(|block| block.get(p) == Some(&id)) else {
            tracing::error!(id, "a child list without the child removed");
            return;
        };
        block.remove(p);
        if block.is_empty() {
            self.blocks.remove(b);
        }
        self.len -= 1;
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn insert_at(mut block: Vec<u32>, at: usize, id: u32) -> Vec<u32> {
    block.insert(at, id);
    block
}

/// A node's children's names, in order: what a [`Znode`](super::Znode) shows.
#[derive(Clone, Copy)]
pub struct Children<'a> {
    list: Option<&'a ChildList>,
    slab: &'a Slab,
}

impl<'a> Children<'a> {
    pub(super) fn new(list: Option<&'a ChildList>, slab: &'a Slab) -> Self {
        Children { list, slab }
    }

    pub fn len(&self) -> usize {
        self.list.map_or(0, ChildList::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The children's ids in name order.
    pub(super) fn ids(&self) -> impl Iterator<Item = u32> + 'a {
        self.list.into_iter().flat_map(|list| list.from((0, 0)))
    }

    fn names(&self, ids: impl Iterator<Item = u32> + 'a) -> impl Iterator<Item = &'a str> + 'a {
        let slab = self.slab;
        ids.filter_map(move |id| slab.record(id)).map(|record| record.name())
    }

    /// The names in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.names(self.ids())
    }

    /// The first name at or after `from`.
    pub(crate) fn first_from(&self, from: &str) -> Option<&'a str> {
        let list = self.list?;
        let at = list.seek(self.slab, |n| n < from.as_bytes());
        self.names(list.from(at)).next()
    }

    /// The names after `after` (all of them for `None`), in order: a page of a listing.
    pub(crate) fn iter_after(&self, after: Option<&str>) -> impl Iterator<Item = &'a str> + 'a {
        let at = match (self.list, after) {
            (Some(list), Some(after)) => list.seek(self.slab, |n| n <= after.as_bytes()),
            _ => (0, 0),
        };
        self.names(self.list.into_iter().flat_map(move |list| list.from(at)))
    }
}

impl std::fmt::Debug for Children<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Children<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Children<'_> {}

impl Serialize for Children<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A set of names as serde writes one: its length, then the names in order.
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for name in self.iter() {
            seq.serialize_element(name)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::record::{Fields, Record};
    use crate::tree::tests::scrambled;
    use std::collections::BTreeSet;

    /// Children named `names` in a list, inserted in that order, and the slab holding them.
    fn filled(names: &[String]) -> (Slab, ChildList, Vec<u32>) {
        let mut slab = Slab::default();
        let ids: Vec<u32> = names.iter().map(|n| slab.insert(Record::new(&Fields::new(0, 1, 1), n, b""))).collect();
        let mut list = ChildList::default();
        for (&id, n) in ids.iter().zip(names) {
            list.insert(&slab, id, n.as_bytes());
        }
        (slab, list, ids)
    }

    #[test]
    fn names_stay_sorted_through_inserts_and_removes_in_any_order() {
        let names = scrambled(5_000, 7);
        let (slab, mut list, ids) = filled(&names);
        let mut expected: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let view = |list: &ChildList| Children::new(Some(list), &slab).iter().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(view(&list), expected.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        for (i, (&id, name)) in ids.iter().zip(&names).enumerate().filter(|(i, _)| i % 3 != 1) {
            list.remove(&slab, id, name.as_bytes());
            expected.remove(name.as_str());
            if i % 1000 == 0 {
                assert_eq!(view(&list), expected.iter().map(|n| n.to_string()).collect::<Vec<_>>());
            }
        }
        assert_eq!(view(&list), expected.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        assert_eq!(list.len(), expected.len());
        assert!(list.blocks.iter().all(|b| !b.is_empty() && b.len() <= BLOCK));
    }

    #[test]
    fn names_made_in_order_fill_their_blocks() {
        let names: Vec<String> = (0..10 * BLOCK).map(|i| format!("lock-{i:010}")).collect();
        let (_, list, _) = filled(&names);
        assert_eq!(list.blocks.len(), 10);
    }

    #[test]
    fn seeks_find_the_first_name_at_or_after() {
        let names: Vec<String> = ["lock-0002", "a", "lock-0001", "b"].map(String::from).to_vec();
        let (slab, list, _) = filled(&names);
        let c = Children::new(Some(&list), &slab);
        assert_eq!((c.len(), c.first_from("lock-"), c.first_from("z")), (4, Some("lock-0001"), None));
        assert_eq!(c.iter_after(Some("b")).collect::<Vec<_>>(), ["lock-0001", "lock-0002"]);
        assert_eq!(c.iter_after(Some("aa")).count(), 3);
        assert_eq!(c.iter_after(None).count(), 4);
        let none = Children::new(None, &slab);
        assert!(none.is_empty() && none.first_from("").is_none() && none.iter_after(None).next().is_none());
    }

    #[test]
    fn serializes_as_the_set_of_names_it_replaced() {
        let names: Vec<String> = ["b", "a"].map(String::from).to_vec();
        let (slab, list, _) = filled(&names);
        let plain: BTreeSet<String> = names.iter().cloned().collect();
        let bytes = postcard::to_allocvec(&Children::new(Some(&list), &slab)).expect("encode");
        assert_eq!(bytes, postcard::to_allocvec(&plain).expect("encode"));
    }
}
