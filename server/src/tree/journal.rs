//! Undo records, so a failed multi can put back exactly what its earlier ops changed.
//!
//! Entries are small and precise (a parent's counters, not a copy of the parent with all
//! its children), so a multi in a lock directory with 100k waiters costs no more than its
//! own ops.

use super::{DataTree, Znode};
use ward_proto::{SessionId, Zxid};

pub(crate) enum Undo {
    /// A child name was added to `parent`, whose counters were these before.
    Linked {
        parent: String,
        name: String,
        cversion: i32,
        child_creates: i32,
        pzxid: Zxid,
    },
    /// A child name was removed from `parent`, whose counters were these before.
    Unlinked {
        parent: String,
        name: String,
        cversion: i32,
        pzxid: Zxid,
    },
    Inserted(String),
    Removed(String, Znode),
    DataSet {
        path: String,
        data: Option<Box<[u8]>>,
        mzxid: Zxid,
        mtime: i64,
        version: i32,
    },
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
    fn undo(&mut self, undo: Undo) {
        match undo {
            Undo::Linked { parent, name, cversion, child_creates, pzxid } => {
                if let Some(p) = self.nodes.get_mut(parent.as_str()) {
                    p.children.remove(&name);
                    (p.cversion, p.child_creates, p.pzxid) = (cversion, child_creates, pzxid);
                }
            }
            Undo::Unlinked { parent, name, cversion, pzxid } => {
                if let Some(p) = self.nodes.get_mut(parent.as_str()) {
                    p.children.insert(&name);
                    (p.cversion, p.pzxid) = (cversion, pzxid);
                }
            }
            Undo::Inserted(path) => {
                self.remove_node(&path);
            }
            Undo::Removed(path, node) => self.insert_node(&path, node),
            Undo::DataSet { path, data, mzxid, mtime, version } => {
                if let Some(n) = self.nodes.get_mut(path.as_str()) {
                    (n.data, n.mzxid, n.mtime, n.version) = (data, mzxid, mtime, version);
                }
            }
            Undo::EphemeralAdded(session, path) => self.unindex_ephemeral(session, &path),
            Undo::EphemeralRemoved(session, path) => self.index_ephemeral(session, path),
            Undo::AclSet { path, acl } => self.point_acl(&path, acl),
        }
    }
}
