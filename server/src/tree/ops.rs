//! The mutations, with ZooKeeper's checks in ZooKeeper's order.

use super::journal::{Journal, Undo};
use super::{DataTree, NodeKind, Znode};
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
        let parent = self.nodes.get(parent_path.as_str()).ok_or(ErrorCode::NoNode)?;
        let node_path = if mode.is_sequential() {
            path::with_sequence(requested, parent.child_creates)
        } else {
            requested.to_string()
        };
        if self.nodes.contains_key(node_path.as_str()) {
            return Err(ErrorCode::NodeExists);
        }
        if parent.ephemeral_owner().is_some() {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let name = path::name(&node_path).to_string();
        let parent = self.nodes.get_mut(parent_path.as_str()).ok_or(ErrorCode::NoNode)?;
        ctx.journal.record(|| Undo::Linked {
            parent: parent_path.clone(),
            name: name.clone(),
            cversion: parent.cversion,
            child_creates: parent.child_creates,
            pzxid: parent.pzxid,
        });
        parent.children.insert(&name);
        parent.cversion = parent.cversion.wrapping_add(1);
        parent.child_creates = parent.child_creates.wrapping_add(1);
        parent.pzxid = ctx.zxid;

        let mut node = Znode::new(data, ctx.zxid, ctx.time_ms, NodeKind::of(mode, owner));
        node.acl = acl;
        let stat = node.stat(self.acls.get(acl).1);
        let owner = node.ephemeral_owner();
        ctx.journal.record(|| Undo::Inserted(node_path.clone()));
        self.insert_node(&node_path, node);
        if let Some(session) = owner {
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
        let name = path::name(path);
        if let Some(parent) = self.nodes.get_mut(parent_path.as_str()) {
            ctx.journal.record(|| Undo::Unlinked {
                parent: parent_path.clone(),
                name: name.to_string(),
                cversion: parent.cversion,
                pzxid: parent.pzxid,
            });
            parent.children.remove(name);
            parent.cversion = parent.cversion.wrapping_add(1);
            parent.pzxid = ctx.zxid;
        }
        if let Some(node) = self.remove_node(path) {
            if let Some(session) = node.ephemeral_owner() {
                self.unindex_ephemeral(session, path);
                ctx.journal.record(|| Undo::EphemeralRemoved(session, path.to_string()));
            }
            ctx.journal.record(|| Undo::Removed(path.to_string(), node));
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
        let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        check_version(version, node.version)?;
        let old = node.data.replace(data.into_boxed_slice());
        ctx.journal.record(|| Undo::DataSet {
            path: path.to_string(),
            data: old,
            mzxid: node.mzxid,
            mtime: node.mtime,
            version: node.version,
        });
        node.mzxid = ctx.zxid;
        node.mtime = ctx.time_ms;
        node.version = node.version.wrapping_add(1);
        ctx.changes.push(Change::DataChanged(path.to_string()));
        let aversion = self.acls.get(node.acl).1;
        Ok(node.stat(aversion))
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
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        Ok(self.stat(node))
    }

    /// Points the node at `path` to ACL slot `id`, keeping the slots' counts.
    pub(super) fn point_acl(&mut self, path: &str, id: AclId) {
        if let Some(node) = self.nodes.get_mut(path) {
            let old = std::mem::replace(&mut node.acl, id);
            self.acls.retain(id);
            self.acls.release(old);
        }
    }

    /// Frees the ACL slots no node points to any more; after each command.
    pub(crate) fn collect_acls(&mut self) {
        self.acls.collect();
    }

    /// Makes the data of `path` null: right after the create or set that wrote it empty, for
    /// a ZooKeeper client that sent null. Needs no undo record of its own: undoing that
    /// create or set puts back what was there before.
    pub(crate) fn null_data(&mut self, path: &str) {
        if let Some(node) = self.nodes.get_mut(path) {
            node.data = None;
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
