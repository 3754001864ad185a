//! Applying lock commands: joining and leaving queues, as one attempt across directories.

use super::Attempt;
use crate::state::StateMachine;
use crate::tree::ops::Ctx;
use ward_proto::lock::DirHeader;
use ward_proto::{lock, path, CreateMode, ErrorCode, LockKind, LockNode, LockState, Response, SessionId};

impl StateMachine {
    /// Finds this session's contenders for `tag` (an earlier attempt whose reply was lost
    /// created them) or creates the missing ones, one per directory, all under this
    /// command's zxid; reports whether the attempt holds everywhere. On error the caller
    /// rolls the journal back, so a multi-lock joins all its queues or none.
    pub(crate) fn lock_acquire(
        &mut self,
        ctx: &mut Ctx<'_>,
        session: SessionId,
        attempt: Attempt<'_>,
    ) -> Result<Response, ErrorCode> {
        let Attempt { dirs, tag, kind, data, lock_delay_ms } = attempt;
        let prefix = lock::contender_prefix(session, tag, kind);
        let mut paths = Vec::with_capacity(dirs.len());
        for dir in dirs {
            self.check_header(ctx, dir, kind, lock_delay_ms)?;
            let path = match self.tree.child_with_prefix(dir, &prefix) {
                Some(existing) => existing,
                None => {
                    let requested = path::join(dir, &prefix);
                    let mode = CreateMode::EphemeralSequential;
                    self.tree.create(ctx, &requested, data.to_vec(), mode, session)?.0
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
    /// ([`DirHeader`]); every later acquire must ask for the same (`PermitsMismatch`,
    /// `LockDelayMismatch`), or, for the delay, for none.
    fn check_header(
        &mut self,
        ctx: &mut Ctx<'_>,
        dir: &str,
        kind: LockKind,
        lock_delay_ms: Option<u64>,
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
            self.tree.set_data(ctx, dir, want.encode(), None)?;
        }
        Ok(())
    }

    /// Deletes this session's contenders for `tag`; a release of nothing succeeds, so it can
    /// be retried safely.
    pub(crate) fn lock_release(
        &mut self,
        ctx: &mut Ctx<'_>,
        session: SessionId,
        dirs: &[String],
        tag: u64,
    ) -> Result<Response, ErrorCode> {
        self.lock_groups.remove(&(session, tag));
        let prefix = lock::attempt_prefix(session, tag);
        for dir in dirs {
            if let Some(path) = self.tree.child_with_prefix(dir, &prefix) {
                self.tree.delete(ctx, &path, None)?;
            }
        }
        Ok(Response::Deleted)
    }

    /// The standing of the attempt that `path` belongs to.
    pub fn lock_state(&self, path: &str) -> Option<LockState> {
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
