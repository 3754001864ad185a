//! Undo records, so a failed multi can put back exactly what its earlier ops changed.
//!
//! Entries are small and precise (a parent's counters, not a copy of the parent with all
//! its children), so a multi in a lock directory with 100k waiters costs no more than its
//! own ops.

use super::record::Record;
use super::DataTree;
use ward_proto::{path, SessionId, Zxid};

pub(crate) enum Undo {
    /// A child was added to `parent`, whose counters were these before. (The child's own
    /// [`Undo::Inserted`], undone first, takes it out of the parent's list.)
    Linked {
        parent: String,
        cversion: i32,
        child_creates: i32,
        pzxid: Zxid,
    },
    /// A child was removed from `parent`, whose counters were these before.
    Unlinked {
        parent: String,
        cversion: i32,
        pzxid: Zxid,
    },
    Inserted(String),
    /// The node at the path was removed; its record, to put back.
    Removed(String, Record),
    /// The node's data was set: its record before (it holds the data, so keeping it costs
    /// no copy).
    DataSet(String, Record),
    EphemeralAdded(SessionId, String),
    EphemeralRemoved(SessionId, String),
    /// The node's ACL slot was this before a setACL.
    AclSet {
        path: String,
        acl: crate::acl::table::AclId,
    },
}

/// Collects undo records when enabled; single ops run with it disabled and pay nothing.
pub(crate) struct Journal {
    entries: Option<Vec<Undo>>,
}

impl Journal {
    pub(crate) fn off() -> Self {
        Journal { entries: None }
    }

    pub(crate) fn on() -> Self {
        Journal { entries: Some(Vec::new()) }
    }

    pub(crate) fn record(&mut self, undo: impl FnOnce() -> Undo) {
        if let Some(entries) = &mut self.entries {
            entries.push(undo());
        }
    }

    /// Reverts every recorded change, newest first.
    pub(crate) fn rollback(self, tree: &mut DataTree) {
        for undo in self.entries.into_iter().flatten().rev() {
            tree.undo(undo);
        }
    }
}

impl DataTree {
    /// Undoes one change. Nodes are found by path: a node put back may have another id
    /// than it had (ids are the slab's, see `slab.rs`).
    fn undo(&mut self, undo: Undo) {
        match undo {
            Undo::Linked { parent, cversion, child_creates, pzxid } => {
                if let Some(id) = self.nodes.lookup(&parent) {
                    self.nodes
                        .update(id, |p| (p.cversion, p.child_creates, p.pzxid) = (cversion, child_creates, pzxid));
                }
            }
            Undo::Unlinked { parent, cversion, pzxid } => {
                if let Some(id) = self.nodes.lookup(&parent) {
                    self.nodes.update(id, |p| (p.cversion, p.pzxid) = (cversion, pzxid));
                }
            }
            Undo::Inserted(path) => {
                self.remove_node(&path);
            }
            Undo::Removed(path, record) => {
                if let Some(parent) = self.nodes.lookup(path::parent(&path)) {
                    self.insert_node(&path, parent, record);
                }
            }
            Undo::DataSet(path, record) => {
                if let Some(id) = self.nodes.lookup(&path) {
                    self.replace_node(id, &path, record);
                }
            }
            Undo::EphemeralAdded(session, path) => self.unindex_ephemeral(session, &path),
            Undo::EphemeralRemoved(session, path) => self.index_ephemeral(session, path),
            Undo::AclSet { path, acl } => self.point_acl(&path, acl),
        }
    }
}
