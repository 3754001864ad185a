//! Containers and TTL nodes: when one is unused, by ZooKeeper's rules (its
//! `ContainerManager`), and deleting it.
//!
//! The leader's cleanup task ([`crate::cleanup`]) lists the candidates from the tree's index
//! and proposes a [`CommandOp::DeleteIfUnused`](crate::command::CommandOp::DeleteIfUnused)
//! for each; apply checks the same rule again, in log order and by the command's clock,
//! since a node may have gained a child or been changed between the two.

use super::ops::Ctx;
use super::{DataTree, NodeKind, Znode};
use ward_proto::ErrorCode;

/// True when `node` is due for deletion at `now_ms` (ms since the Unix epoch):
/// * a container without children that has had one: its `cversion` counts child creates
///   and deletes, so it is 0 only for a container that never had a child, which is kept
///   (so that one created just before a check is not deleted before its first child
///   arrives) until it is older than `never_used_ms` (0: kept for good);
/// * a TTL node without children, unchanged (`mtime`: its create or last set) for longer
///   than its TTL;
/// * a lock contender kept for its lock-delay ([`NodeKind::LockDelay`]), once its delay has
///   passed since its session ended (its `mtime`).
///
/// ZooKeeper checks `cversion > 0`; `!= 0` says the same until the counter wraps.
pub(crate) fn unused(node: Znode<'_>, now_ms: i64, never_used_ms: u64) -> bool {
    if !node.children.is_empty() {
        return false;
    }
    let idle = now_ms.saturating_sub(node.mtime);
    let longer_than = |limit: u64| idle > i64::try_from(limit).unwrap_or(i64::MAX);
    match node.kind() {
        NodeKind::Container if node.cversion != 0 => true,
        NodeKind::Container => never_used_ms != 0 && longer_than(never_used_ms),
        // A held-over lock contender: its `mtime` is when its session ended.
        NodeKind::Ttl(ttl) | NodeKind::LockDelay(ttl) => longer_than(ttl),
        NodeKind::Persistent | NodeKind::Ephemeral(_) => false,
    }
}

impl DataTree {
    /// The containers and TTL nodes due at `now_ms`, in path order, at most `limit`.
    pub(crate) fn unused_nodes(&self, now_ms: i64, never_used_ms: u64, limit: usize) -> Vec<String> {
        self.swept
            .iter()
            .filter(|path| self.nodes.get(path).is_some_and(|node| unused(node, now_ms, never_used_ms)))
            .take(limit)
            .map(|path| path.to_string())
            .collect()
    }

    /// The lock contenders kept for their lock-delay, with their nodes.
    pub(crate) fn lock_delayed(&self) -> impl Iterator<Item = (&str, Znode<'_>)> {
        self.delayed.iter().filter_map(|path| self.nodes.get(path).map(|node| (&**path, node)))
    }

    /// Keeps the ephemeral lock contender `path` in its queue past its session's end, as a
    /// [`NodeKind::LockDelay`] node: its `mtime` becomes the command's time, from which its
    /// delay runs; nothing else changes (no watch fires: the node is still there, its data
    /// and versions the same). Not undoable: only the end of a session does this, whose
    /// changes are never rolled back.
    pub(crate) fn hold_over(&mut self, ctx: &Ctx<'_>, path: &str, delay_ms: u64) {
        let Some(id) = self.nodes.lookup(path) else { return };
        let Some(session) = self.nodes.node(id).and_then(|node| node.ephemeral_owner()) else { return };
        self.nodes.update(id, |f| {
            f.owner = NodeKind::LockDelay(delay_ms).encode();
            f.mtime = ctx.time_ms;
        });
        self.unindex_ephemeral(session, path);
        self.delayed.insert(path.into());
    }

    /// The number of containers and TTL nodes.
    #[cfg(test)]
    pub(crate) fn swept_len(&self) -> usize {
        self.swept.len()
    }

    /// Deletes `path` if it is a container or TTL node that is [`unused`] at the command's
    /// time; otherwise changes nothing and says why: `NoNode`, `NotEmpty` (it has children
    /// now), `BadVersion` (not due: changed since, a container that never had a child, or
    /// not a container or TTL node at all, like ZooKeeper's `deleteContainer`).
    pub(crate) fn delete_if_unused(
        &mut self,
        ctx: &mut Ctx<'_>,
        path: &str,
        never_used_ms: u64,
    ) -> Result<(), ErrorCode> {
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        if !unused(node, ctx.time_ms, never_used_ms) {
            return Err(ErrorCode::BadVersion);
        }
        self.delete(ctx, path, None)
    }
}
