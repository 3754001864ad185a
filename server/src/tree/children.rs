//! A node's children's names, sorted.
//!
//! Most nodes are leaves, so the set sits behind a pointer that stays null until the first
//! child (8 bytes in every node instead of 24), and names are boxed strings (16 bytes in the
//! set's nodes instead of 24). Serialized as the plain set of names it always was.

use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeSet;
use std::ops::Bound;

// Boxed on purpose (clippy's box_collection): an empty `Option<Box<_>>` is 8 bytes in every
// node, an empty `BTreeSet` 24, and most nodes are leaves.
#[allow(clippy::box_collection)]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Children(Option<Box<BTreeSet<Box<str>>>>);

impl Children {
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |set| set.len())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The names in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().flat_map(|set| set.iter()).map(|name| &**name)
    }

    /// The first name at or after `from`.
    pub fn first_from(&self, from: &str) -> Option<&str> {
        let set = self.0.as_ref()?;
        set.range::<str, _>((Bound::Included(from), Bound::Unbounded)).next().map(|name| &**name)
    }

    /// The names after `after` (all of them for `None`), in order: a page of a listing.
    pub fn iter_after<'a>(&'a self, after: Option<&'a str>) -> impl Iterator<Item = &'a str> + 'a {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.0.iter().flat_map(move |set| set.range::<str, _>((from, Bound::Unbounded))).map(|name| &**name)
    }

    pub fn insert(&mut self, name: &str) {
        self.0.get_or_insert_with(Box::default).insert(name.into());
    }

    pub fn remove(&mut self, name: &str) {
        if let Some(set) = &mut self.0 {
            set.remove(name);
            if set.is_empty() {
                self.0 = None;
            }
        }
    }
}

impl Serialize for Children {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // With its length up front: postcard (snapshots) needs it, and a flattened
        // iterator does not give it.
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for name in self.iter() {
            seq.serialize_element(name)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Children {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let set = BTreeSet::<Box<str>>::deserialize(d)?;
        Ok(Children((!set.is_empty()).then(|| Box::new(set))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_sorted_and_an_empty_set_holds_nothing() {
        let mut c = Children::default();
        assert!(c.is_empty() && c.first_from("").is_none());
        for name in ["lock-0002", "a", "lock-0001"] {
            c.insert(name);
        }
        assert_eq!(c.iter().collect::<Vec<_>>(), ["a", "lock-0001", "lock-0002"]);
        assert_eq!((c.len(), c.first_from("lock-")), (3, Some("lock-0001")));
        for name in ["a", "lock-0001", "lock-0002", "absent"] {
            c.remove(name);
        }
        assert!(c.is_empty() && c.0.is_none(), "the last remove frees the set");
    }

    #[test]
    fn serializes_as_the_set_of_names_it_replaced() {
        let mut c = Children::default();
        c.insert("b");
        c.insert("a");
        let plain: BTreeSet<String> = ["a".to_string(), "b".to_string()].into();
        let bytes = postcard::to_allocvec(&c).expect("encode");
        assert_eq!(bytes, postcard::to_allocvec(&plain).expect("encode"));
        assert_eq!(postcard::from_bytes::<Children>(&bytes).expect("decode"), c);
        let empty = postcard::to_allocvec(&BTreeSet::<String>::new()).expect("encode");
        assert!(postcard::from_bytes::<Children>(&empty).expect("decode").is_empty());
    }
}
