//! The mutations, with ZooKeeper's checks in ZooKeeper's order.

use super::journal::{Journal, Undo};
use super::record::{Fields, Record};
use super::{DataTree, NodeKind};
use crate::acl::table::AclId;
use crate::command::Change;
use ward_proto::{path, Acl, CreateMode, ErrorCode, SessionId, Stat, Zxid};

/// What every mutation needs from the command being applied.
pub(crate) struct Ctx<'a> {
    pub zxid: Zxid,
    pub time_ms: i64,
    pub changes: &'a mut Vec<Change>,
    pub journal: &'a mut Journal,
}

fn check_version(expected: Option<i32>, actual: i32) -> Result<(), ErrorCode> {
    match expected {
        Some(v) if v != actual => Err(ErrorCode::BadVersion),
        _ => Ok(()),
    }
}

impl DataTree {
    /// Creates a node with the ACL in slot `acl` (from [`DataTree::intern_acl`]); a
    /// sequential name takes the parent's count of child creates as its suffix, as
    /// ZooKeeper's does.
    pub(crate) fn create(
        &mut self,
        ctx: &mut Ctx<'_>,
        requested: &str,
        data: Vec<u8>,
        mode: CreateMode,
        owner: SessionId,
        acl: AclId,
    ) -> Result<(String, Stat), ErrorCode> {
        if requested == "/" && !mode.is_sequential() {
            return Err(ErrorCode::NodeExists);
        }
        let parent_path = path::parent(requested).to_string();
        let parent_id = self.nodes.lookup(&parent_path).ok_or(ErrorCode::NoNode)?;
        let parent = self.nodes.fields(parent_id).ok_or(ErrorCode::NoNode)?;
        let node_path = if mode.is_sequential() {
            path::with_sequence(requested, parent.child_creates)
        } else {
            requested.to_string()
        };
        let name = path::name(&node_path);
        if self.nodes.child(parent_id, name).is_some() {
            return Err(ErrorCode::NodeExists);
        }
        if matches!(NodeKind::decode(parent.owner), NodeKind::Ephemeral(_)) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        ctx.journal.record(|| Undo::Linked {
            parent: parent_path.clone(),
            cversion: parent.cversion,
            child_creates: parent.child_creates,
            pzxid: parent.pzxid,
        });
        self.nodes.update(parent_id, |p| {
            p.cversion = p.cversion.wrapping_add(1);
            p.child_creates = p.child_creates.wrapping_add(1);
            p.pzxid = ctx.zxid;
        });

        let kind = NodeKind::of(mode, owner);
        let fields = Fields { owner: kind.encode(), acl, ..Fields::new(parent_id, ctx.zxid, ctx.time_ms) };
        ctx.journal.record(|| Undo::Inserted(node_path.clone()));
        let id = self.insert_node(&node_path, parent_id, Record::new(&fields, name, &data));
        let stat = self.nodes.node(id).map(|node| self.stat(node)).ok_or(ErrorCode::NoNode)?;
        if let NodeKind::Ephemeral(session) = kind {
            ctx.journal.record(|| Undo::EphemeralAdded(session, node_path.clone()));
            self.index_ephemeral(session, node_path.clone());
        }
        ctx.changes.push(Change::Created(node_path.clone()));
        ctx.changes.push(Change::ChildrenChanged(parent_path));
        Ok((node_path, stat))
    }

    pub(crate) fn delete(&mut self, ctx: &mut Ctx<'_>, path: &str, version: Option<i32>) -> Result<(), ErrorCode> {
        if path == "/" {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        check_version(version, node.version)?;
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        let parent_path = path::parent(path).to_string();
        if let Some(parent_id) = self.nodes.lookup(&parent_path) {
            if let Some(parent) = self.nodes.fields(parent_id) {
                ctx.journal.record(|| Undo::Unlinked {
                    parent: parent_path.clone(),
                    cversion: parent.cversion,
                    pzxid: parent.pzxid,
                });
            }
            self.nodes.update(parent_id, |p| {
                p.cversion = p.cversion.wrapping_add(1);
                p.pzxid = ctx.zxid;
            });
        }
        if let Some(record) = self.remove_node(path) {
            if let NodeKind::Ephemeral(session) = NodeKind::decode(record.fields().owner) {
                self.unindex_ephemeral(session, path);
                ctx.journal.record(|| Undo::EphemeralRemoved(session, path.to_string()));
            }
            ctx.journal.record(|| Undo::Removed(path.to_string(), record));
        }
        ctx.changes.push(Change::Deleted(path.to_string()));
        ctx.changes.push(Change::ChildrenChanged(parent_path));
        Ok(())
    }

    pub(crate) fn set_data(
        &mut self,
        ctx: &mut Ctx<'_>,
        path: &str,
        data: Vec<u8>,
        version: Option<i32>,
    ) -> Result<Stat, ErrorCode> {
        let id = self.nodes.lookup(path).ok_or(ErrorCode::NoNode)?;
        let mut fields = self.nodes.fields(id).ok_or(ErrorCode::NoNode)?;
        check_version(version, fields.version)?;
        fields.mzxid = ctx.zxid;
        fields.mtime = ctx.time_ms;
        fields.version = fields.version.wrapping_add(1);
        fields.null = false;
        let record = Record::new(&fields, path::name(path), &data);
        if let Some(old) = self.replace_node(id, path, record) {
            ctx.journal.record(|| Undo::DataSet(path.to_string(), old));
        }
        ctx.changes.push(Change::DataChanged(path.to_string()));
        self.nodes.node(id).map(|node| self.stat(node)).ok_or(ErrorCode::NoNode)
    }

    /// The slot for a new node's `acl` (already [`fixup`](crate::acl::check::fixup)ped).
    pub(crate) fn intern_acl(&mut self, acl: &[Acl]) -> AclId {
        self.acls.intern(acl, 0)
    }

    /// Replaces a node's ACL if its `aversion` is `version` (`None`: any), which then grows by
    /// one. No watch fires: ZooKeeper's setACL fires none either.
    pub(crate) fn set_acl(
        &mut self,
        ctx: &mut Ctx<'_>,
        path: &str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> Result<Stat, ErrorCode> {
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        let (old, aversion) = (node.acl, self.acls.get(node.acl).1);
        check_version(version, aversion)?;
        let new = self.acls.intern(acl, aversion.wrapping_add(1));
        self.point_acl(path, new);
        ctx.journal.record(|| Undo::AclSet { path: path.to_string(), acl: old });
        self.nodes.get(path).map(|node| self.stat(node)).ok_or(ErrorCode::NoNode)
    }

    /// Points the node at `path` to ACL slot `id`, keeping the slots' counts.
    pub(super) fn point_acl(&mut self, path: &str, id: AclId) {
        let Some(node) = self.nodes.lookup(path) else { return };
        let Some(old) = self.nodes.fields(node).map(|f| f.acl) else { return };
        self.nodes.update(node, |f| f.acl = id);
        self.acls.retain(id);
        self.acls.release(old);
    }

    /// Frees the ACL slots no node points to any more; after each command.
    pub(crate) fn collect_acls(&mut self) {
        self.acls.collect();
    }

    /// Makes the data of `path` null: right after the create or set that wrote it empty, for
    /// a ZooKeeper client that sent null. Needs no undo record of its own: undoing that
    /// create or set puts back what was there before.
    pub(crate) fn null_data(&mut self, path: &str) {
        if let Some(id) = self.nodes.lookup(path) {
            self.nodes.update(id, |f| f.null = true);
        }
    }

    /// Fails unless the node exists with the expected version.
    pub(crate) fn check(&self, path: &str, version: Option<i32>) -> Result<(), ErrorCode> {
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        check_version(version, node.version)
    }

    /// Deletes every ephemeral node of `session`, in path order.
    pub(crate) fn remove_ephemerals(&mut self, ctx: &mut Ctx<'_>, session: SessionId) {
        let paths = self.ephemerals.remove(&session).unwrap_or_default();
        for path in paths {
            // Ephemerals have no children and no version to match, so this only fails if
            // the node is already gone, which the index rules out.
            if let Err(code) = self.delete(ctx, &path, None) {
                tracing::error!(%session, %path, ?code, "ephemeral index out of step with the tree");
            }
        }
    }
}
