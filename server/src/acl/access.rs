//! Which permission an operation needs, on which node: ZooKeeper 3.8's rules
//! (`PrepRequestProcessor` for writes, `FinalRequestProcessor` for reads), each check made
//! where ZooKeeper makes it relative to its other checks, so that a request that fails for
//! two reasons fails with the same error as on ZooKeeper.
//!
//! | operation                    | permission       | on                 |
//! |------------------------------|------------------|--------------------|
//! | create (any mode)            | CREATE           | the parent         |
//! | delete                       | DELETE           | the parent         |
//! | setData                      | WRITE            | the node           |
//! | getData, getChildren, check  | READ             | the node           |
//! | exists                       | READ             | the node, if it exists |
//! | getACL                       | READ or ADMIN    | the node           |
//! | setACL                       | ADMIN            | the node           |
//! | sync, ping, watches, whoAmI  | none             |                    |
//!
//! Ward's lock commands follow from the nodes they touch: joining a queue creates a
//! contender in the directory (CREATE on it; a semaphore's first contender also writes the
//! permits into the directory: WRITE), leaving deletes one (DELETE on it), and reading a
//! queue's standing reads the directory (READ).

use super::check::allows;
use super::identity::AuthId;
use crate::tree::DataTree;
use ward_proto::{path, ErrorCode};

/// Fails with `NoNode` if `path` does not exist, `NoAuth` if its ACL does not grant any of
/// `perm` to `ids`.
pub(crate) fn node(tree: &DataTree, path: &str, perm: i32, ids: &[AuthId]) -> Result<(), ErrorCode> {
    let node = tree.get(path).ok_or(ErrorCode::NoNode)?;
    match allows(tree.acl(node), perm, ids) {
        true => Ok(()),
        false => Err(ErrorCode::NoAuth),
    }
}

/// [`node`] on the parent of `path` (the root is its own parent).
pub(crate) fn parent(tree: &DataTree, path: &str, perm: i32, ids: &[AuthId]) -> Result<(), ErrorCode> {
    node(tree, path::parent(path), perm, ids)
}

/// [`node`] if `path` exists; nothing to check otherwise (exists on a missing node).
pub(crate) fn if_exists(tree: &DataTree, path: &str, perm: i32, ids: &[AuthId]) -> Result<(), ErrorCode> {
    match tree.get(path) {
        Some(_) => node(tree, path, perm, ids),
        None => Ok(()),
    }
}
