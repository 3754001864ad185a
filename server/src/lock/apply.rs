//! Applying lock commands: joining and leaving queues, as one attempt across directories.

use super::Attempt;
use crate::acl::table::OPEN;
use crate::acl::{access, AuthId};
use crate::state::StateMachine;
use crate::tree::ops::Ctx;
use ward_proto::lock::DirHeader;
use ward_proto::{lock, path, perms, CreateMode, ErrorCode, LockKind, LockNode, LockState, Response, SessionId};

impl StateMachine {
    /// Finds this session's contenders for `tag` (an earlier attempt whose reply was lost
    /// created them) or creates the missing ones, one per directory, all under this
    /// command's zxid; reports whether the attempt holds everywhere. On error the caller
    /// rolls the journal back, so a multi-lock joins all its queues or none. A new
    /// contender needs CREATE on its directory (and the first of a semaphore WRITE, for the
    /// permits it writes there); it gets the open ACL, as lock nodes of ZooKeeper's
    /// recipes do unless told otherwise: the directory's ACL is what guards the lock.
    pub(crate) fn lock_acquire(
        &mut self,
        ctx: &mut Ctx<'_>,
        session: SessionId,
        attempt: Attempt<'_>,
        ids: &[AuthId],
    ) -> Result<Response, ErrorCode> {
        let Attempt { dirs, tag, kind, data, lock_delay_ms } = attempt;
        let prefix = lock::contender_prefix(session, tag, kind);
        let mut paths = Vec::with_capacity(dirs.len());
        for dir in dirs {
            self.check_header(ctx, dir, kind, lock_delay_ms, ids)?;
            let path = match self.tree.child_with_prefix(dir, &prefix) {
                Some(existing) => existing,
                None => {
                    access::node(&self.tree, dir, perms::CREATE, ids)?;
                    let requested = path::join(dir, &prefix);
                    let mode = CreateMode::EphemeralSequential;
                    self.tree.create(ctx, &requested, data.to_vec(), mode, session, OPEN)?.0
                }
            };
            paths.push(path);
        }
        if paths.len() > 1 {
            self.lock_groups.insert((session, tag), paths.clone());
        }
        let held = paths.iter().all(|p| super::is_holder(&self.tree, p));
        let nodes = paths
            .into_iter()
            .map(|path| LockNode { token: self.tree.get(&path).map_or(0, |n| n.mzxid), path })
            .collect();
        Ok(Response::Lock(LockState { nodes, held }))
    }

    /// A semaphore's permits and a lock's delay are fixed by the first contender that asks
    /// for them while the queue is empty: it writes them into the directory's data
    /// ([`DirHeader`], which needs WRITE on it); every later acquire must ask for the same (`PermitsMismatch`,
    /// `LockDelayMismatch`), or, for the delay, for none.
    fn check_header(
        &mut self,
        ctx: &mut Ctx<'_>,
        dir: &str,
        kind: LockKind,
        lock_delay_ms: Option<u64>,
        ids: &[AuthId],
    ) -> Result<(), ErrorCode> {
        let node = self.tree.get(dir).ok_or(ErrorCode::NoNode)?;
        let permits = match kind {
            LockKind::Semaphore { permits } => Some(permits),
            LockKind::Exclusive | LockKind::Shared => None,
        };
        if permits.is_none() && lock_delay_ms.is_none() {
            return Ok(());
        }
        let empty = lock::queue(node.children.iter()).is_empty();
        let header = DirHeader::parse(node.data());
        let mut want = header.unwrap_or_default();
        if let Some(permits) = permits {
            match want.permits {
                Some(fixed) if fixed == permits => {}
                None if header.is_some() && empty => want.permits = Some(permits),
                _ => return Err(ErrorCode::PermitsMismatch),
            }
        }
        if let Some(delay) = lock_delay_ms {
            match want.lock_delay_ms {
                fixed if fixed == delay => {}
                0 if header.is_some() && empty => want.lock_delay_ms = delay,
                _ => return Err(ErrorCode::LockDelayMismatch),
            }
        }
        if Some(want) != header {
            // Writing the directory's data is a setData on it.
            access::node(&self.tree, dir, perms::WRITE, ids)?;
            self.tree.set_data(ctx, dir, want.encode(), None)?;
        }
        Ok(())
    }

    /// Deletes this session's contenders for `tag`; a release of nothing succeeds, so it can
    /// be retried safely. Deleting a contender needs DELETE on its directory, as deleting
    /// any node does; without it the contender stays until its session ends.
    pub(crate) fn lock_release(
        &mut self,
        ctx: &mut Ctx<'_>,
        session: SessionId,
        dirs: &[String],
        tag: u64,
        ids: &[AuthId],
    ) -> Result<Response, ErrorCode> {
        let prefix = lock::attempt_prefix(session, tag);
        for dir in dirs {
            if self.tree.child_with_prefix(dir, &prefix).is_some() {
                access::node(&self.tree, dir, perms::DELETE, ids)?;
            }
        }
        self.lock_groups.remove(&(session, tag));
        for dir in dirs {
            if let Some(path) = self.tree.child_with_prefix(dir, &prefix) {
                self.tree.delete(ctx, &path, None)?;
            }
        }
        Ok(Response::Deleted)
    }

    /// The standing of the attempt that `path` belongs to.
    pub(crate) fn lock_state(&self, path: &str) -> Option<LockState> {
        let paths = match super::group_of(self, path) {
            Some(paths) => paths.clone(),
            None => vec![path.to_string()],
        };
        let nodes = paths
            .iter()
            .map(|p| self.tree.get(p).map(|n| LockNode { path: p.clone(), token: n.mzxid }))
            .collect::<Option<Vec<_>>>()?;
        Some(LockState { held: super::attempt_holds(self, path), nodes })
    }
}
