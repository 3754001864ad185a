//! Lock queues on the server: who holds, and who becomes holder when contenders leave.
//!
//! Nothing here is stored: holders are derived from the tree (the lowest sequence suffix
//! in a directory holds, see [`ward_proto::lock`]). When apply deletes a contender, the
//! contender that is now first in that queue, if it was behind the deleted one, has just
//! become holder; if it is a Ward contender its session is told, once. A waiter therefore
//! depends only on its predecessors, and one release sends one message to one waiter.

use crate::command::Change;
use crate::tree::DataTree;
use std::collections::HashSet;
use ward_proto::{lock, path, SessionId, Zxid};

/// The holder of the lock in `dir`: its first contender.
pub fn holder(tree: &DataTree, dir: &str) -> Option<String> {
    let node = tree.get(dir)?;
    lock::queue(node.children.iter().map(String::as_str)).first().map(|name| path::join(dir, name))
}

/// True if the node at `path` holds its directory's lock.
pub fn is_holder(tree: &DataTree, path: &str) -> bool {
    path != "/" && holder(tree, path::parent(path)).as_deref() == Some(path)
}

/// A contender that became holder in this apply and must be told.
#[derive(Debug, PartialEq, Eq)]
pub struct Grant {
    pub session: SessionId,
    pub path: String,
    pub token: Zxid,
}

/// Ward contenders that became holders through the deletes in `changes`.
pub fn grants(tree: &DataTree, changes: &[Change]) -> Vec<Grant> {
    let mut grants = Vec::new();
    let mut told = HashSet::new();
    for change in changes {
        let Change::Deleted(gone) = change else { continue };
        let Some(gone_seq) = lock::sequence(path::name(gone)) else { continue };
        let dir = path::parent(gone);
        let Some(first) = holder(tree, dir) else { continue };
        let name = path::name(&first);
        // Only a contender that was behind the deleted one can have become holder now.
        if lock::sequence(name).is_none_or(|seq| seq <= gone_seq) || lock::parse_contender(name).is_none() {
            continue;
        }
        let Some(node) = tree.get(&first) else { continue };
        let Some(session) = node.ephemeral_owner else { continue };
        if told.insert(first.clone()) {
            grants.push(Grant { session, token: node.czxid, path: first });
        }
    }
    grants
}
