//! The ACLs nodes point to.
//!
//! A tree of millions of nodes typically uses a handful of distinct ACLs, so each node holds
//! a 4-byte number into this table instead of its own list (ZooKeeper keeps a
//! reference-counted ACL cache for the same reason). A slot holds a list together with the
//! `aversion` of the nodes that point to it: the version is then not a field of every node
//! either, which keeps a node's record small. Nodes with the same list and the same version
//! share a slot; a setACL moves its node to another slot.
//!
//! Slot 0 is `world:anyone` with every permission at version 0, what a node has unless its
//! creator said otherwise; it is never freed. Other slots are counted: a slot whose count
//! falls to zero during a command is freed by [`AclTable::collect`] after the command (not
//! at once, so that a multi rolled back can still point its nodes at the slots they had).
//! Everything here runs in apply, in log order, so every replica numbers slots alike.

use std::collections::HashMap;
use std::sync::Arc;
use ward_proto::Acl;

/// The number of a slot: what a node stores.
pub(crate) type AclId = u32;

/// The open ACL at version 0.
pub(crate) const OPEN: AclId = 0;

#[derive(Clone, Debug)]
struct Slot {
    acl: Arc<[Acl]>,
    aversion: i32,
    /// Nodes pointing here.
    refs: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct AclTable {
    /// By id; `None`: free.
    slots: Vec<Option<Slot>>,
    index: HashMap<(Arc<[Acl]>, i32), AclId>,
    /// Free ids, reused last-freed first.
    free: Vec<AclId>,
    /// Slots that may have no node left: new ones, and those whose count reached zero.
    unused: Vec<AclId>,
}

impl Default for AclTable {
    fn default() -> Self {
        let mut table = AclTable { slots: Vec::new(), index: HashMap::new(), free: Vec::new(), unused: Vec::new() };
        table.place(OPEN, Acl::open().into(), 0);
        table
    }
}

impl AclTable {
    /// The list and version of slot `id` (the open ACL for an id that is not in use, which
    /// the tree never holds).
    pub(crate) fn get(&self, id: AclId) -> (&[Acl], i32) {
        match self.slots.get(id as usize) {
            Some(Some(slot)) => (&slot.acl, slot.aversion),
            _ => {
                tracing::error!(id, "a node points to an ACL slot not in use");
                (self.open(), 0)
            }
        }
    }

    fn open(&self) -> &[Acl] {
        match self.slots.first() {
            Some(Some(slot)) => &slot.acl,
            _ => &[],
        }
    }

    /// The slot for `acl` at `aversion`, made if there is none. The caller points a node at
    /// it ([`AclTable::retain`]) within the same command, or it is freed after.
    pub(crate) fn intern(&mut self, acl: &[Acl], aversion: i32) -> AclId {
        let key: (Arc<[Acl]>, i32) = (acl.into(), aversion);
        if let Some(id) = self.index.get(&key) {
            return *id;
        }
        let id = self.free.pop().unwrap_or_else(|| AclId::try_from(self.slots.len()).unwrap_or(AclId::MAX));
        self.place(id, key.0, aversion);
        self.unused.push(id);
        id
    }

    fn place(&mut self, id: AclId, acl: Arc<[Acl]>, aversion: i32) {
        let at = id as usize;
        if self.slots.len() <= at {
            self.slots.resize(at + 1, None);
        }
        self.index.insert((acl.clone(), aversion), id);
        self.slots[at] = Some(Slot { acl, aversion, refs: 0 });
    }

    /// A node now points to `id`.
    pub(crate) fn retain(&mut self, id: AclId) {
        if let Some(Some(slot)) = self.slots.get_mut(id as usize) {
            slot.refs += 1;
        }
    }

    /// A node no longer points to `id`.
    pub(crate) fn release(&mut self, id: AclId) {
        if let Some(Some(slot)) = self.slots.get_mut(id as usize) {
            slot.refs = slot.refs.saturating_sub(1);
            if slot.refs == 0 && id != OPEN {
                self.unused.push(id);
            }
        }
    }

    /// Frees the slots no node points to any more: after each command.
    pub(crate) fn collect(&mut self) {
        for id in std::mem::take(&mut self.unused) {
            let Some(entry) = self.slots.get_mut(id as usize) else { continue };
            if entry.as_ref().is_some_and(|slot| slot.refs == 0) {
                if let Some(slot) = entry.take() {
                    self.index.remove(&(slot.acl, slot.aversion));
                    self.free.push(id);
                }
            }
        }
    }

    /// Whether slot `id` is in use.
    pub(crate) fn contains(&self, id: AclId) -> bool {
        matches!(self.slots.get(id as usize), Some(Some(_)))
    }

    /// Slots in use, the open one included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The slots other than the open one, for a snapshot.
    pub(crate) fn stored(&self) -> impl Iterator<Item = (AclId, &[Acl], i32)> {
        self.slots.iter().enumerate().skip(1).filter_map(|(id, slot)| {
            let slot = slot.as_ref()?;
            Some((AclId::try_from(id).ok()?, &*slot.acl, slot.aversion))
        })
    }

    /// The table a snapshot stored: its slots under their ids, with no node pointing to
    /// them yet (the caller retains one per node).
    pub(crate) fn restored(slots: impl IntoIterator<Item = (AclId, Vec<Acl>, i32)>) -> AclTable {
        let mut table = AclTable::default();
        for (id, acl, aversion) in slots {
            if id != OPEN {
                table.place(id, acl.into(), aversion);
                table.unused.push(id);
            }
        }
        let in_use = table.slots.iter().map(Option::is_some);
        table.free =
            in_use.enumerate().filter(|(_, used)| !used).filter_map(|(id, _)| AclId::try_from(id).ok()).collect();
        table.free.reverse();
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_proto::perms;

    fn acl(user: &str) -> Vec<Acl> {
        vec![Acl::new(perms::ALL, "digest", &format!("{user}:hash"))]
    }

    #[test]
    fn a_list_is_stored_once_and_freed_after_its_last_node() {
        let mut table = AclTable::default();
        assert_eq!(table.intern(&Acl::open(), 0), OPEN);
        let a = table.intern(&acl("a"), 0);
        assert_eq!(table.intern(&acl("a"), 0), a, "shared");
        assert_ne!(table.intern(&acl("a"), 1), a, "another version, another slot");
        table.retain(a);
        table.retain(a);
        table.collect();
        assert_eq!(table.len(), 2, "the version-1 slot no node took is gone");
        table.release(a);
        table.collect();
        assert_eq!(table.get(a), (&acl("a")[..], 0), "one node still points to it");
        table.release(a);
        // Freed only after the command: a rolled-back multi may point a node back at it.
        table.retain(a);
        table.collect();
        assert_eq!(table.get(a).0, &acl("a")[..]);
        table.release(a);
        table.collect();
        assert_eq!(table.len(), 1);
        let b = table.intern(&acl("b"), 0);
        assert_eq!(b, a, "a freed id is reused");
        table.release(OPEN);
        table.collect();
        assert_eq!(table.get(OPEN), (&Acl::open()[..], 0), "the open slot is never freed");
    }

    #[test]
    fn a_restored_table_keeps_ids_and_reuses_the_gaps() {
        let table = AclTable::restored([(3, acl("c"), 2), (1, acl("a"), 0)]);
        assert_eq!(table.get(3), (&acl("c")[..], 2));
        let mut table = table;
        table.retain(1);
        table.retain(3);
        table.collect();
        assert_eq!(table.intern(&acl("new"), 0), 2, "the lowest gap first");
        assert_eq!(table.stored().count(), 3);
    }
}
