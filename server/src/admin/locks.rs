//! Per-lock figures for `/metrics`, surveyed from the tree at scrape time.
//!
//! A lock directory is a node with lock contenders among its children: ephemeral children
//! with a sequence suffix, ordered and judged by [`ward_proto::lock`] exactly as grants are
//! (Ward's own contenders and those of ZooKeeper recipes alike). Contenders are ephemeral,
//! so the survey walks the ephemeral index, not the whole tree. Only the `max` directories
//! with the longest queues are reported, and at most [`MAX_HOLDERS`] holders of each, so
//! the number of series stays bounded however many locks and readers there are.

use crate::tree::{DataTree, NodeKind};
use std::collections::BTreeSet;
use ward_proto::{lock, path, SessionId};

/// Holders reported per directory (a read lock or semaphore can have many).
pub(crate) const MAX_HOLDERS: usize = 16;

/// One holder: its session and when its contender node was created (ms since the epoch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Holder {
    pub session: SessionId,
    pub(crate) ctime_ms: i64,
}

/// One lock directory's queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockFigures {
    pub dir: String,
    /// Contenders that do not hold.
    pub waiters: u64,
    /// Contenders that hold (may exceed `holders.len()`).
    pub holding: u64,
    /// The first [`MAX_HOLDERS`] holders in queue order.
    pub holders: Vec<Holder>,
    /// Creation time of the waiter that has waited longest (ms since the epoch).
    pub(crate) oldest_waiter_ms: Option<i64>,
    /// When the lock-delay of a holder whose session ended without releasing ends (ms since
    /// the epoch), if the lock is held over.
    pub lock_delay_until_ms: Option<i64>,
}

/// The lock directories of a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LockSurvey {
    /// Every lock directory in the tree.
    pub directories: u64,
    /// The `max` longest queues, longest first (ties by path).
    pub top: Vec<LockFigures>,
}

pub(crate) fn survey(tree: &DataTree, max: usize) -> LockSurvey {
    // Held-over holders are no ephemerals any more: their directories count too.
    let dirs: BTreeSet<&str> = tree
        .all_ephemerals()
        .chain(tree.lock_delayed().map(|(p, _)| p))
        .filter(|p| *p != "/" && lock::sequence(path::name(p)).is_some())
        .map(path::parent)
        .collect();
    let mut top: Vec<LockFigures> = dirs.iter().filter_map(|dir| figures(tree, dir)).collect();
    let directories = top.len() as u64;
    top.sort_by(|a, b| b.waiters.cmp(&a.waiters).then_with(|| a.dir.cmp(&b.dir)));
    top.truncate(max);
    LockSurvey { directories, top }
}

fn figures(tree: &DataTree, dir: &str) -> Option<LockFigures> {
    let node = tree.get(dir)?;
    let queue = lock::queue(node.children.iter());
    if queue.is_empty() {
        return None;
    }
    let flags = lock::holders(&queue, crate::lock::permits(tree, dir));
    let mut figures = LockFigures {
        dir: dir.to_string(),
        waiters: 0,
        holding: 0,
        holders: Vec::new(),
        oldest_waiter_ms: None,
        lock_delay_until_ms: None,
    };
    for (name, holds) in queue.iter().zip(flags) {
        let Some(contender) = tree.get(&path::join(dir, name)) else { continue };
        if let (true, NodeKind::LockDelay(delay)) = (holds, contender.kind()) {
            let until = contender.mtime.saturating_add(i64::try_from(delay).unwrap_or(i64::MAX));
            figures.lock_delay_until_ms = Some(figures.lock_delay_until_ms.map_or(until, |u| u.max(until)));
        }
        if holds {
            figures.holding += 1;
            if let (true, Some(session)) = (figures.holders.len() < MAX_HOLDERS, contender.ephemeral_owner()) {
                figures.holders.push(Holder { session, ctime_ms: contender.ctime });
            }
        } else {
            figures.waiters += 1;
            let oldest = figures.oldest_waiter_ms.get_or_insert(contender.ctime);
            *oldest = (*oldest).min(contender.ctime);
        }
    }
    Some(figures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::ops::Ctx;
    use crate::tree::Journal;
    use ward_proto::lock::{contender_prefix, LockKind};
    use ward_proto::CreateMode;

    /// A tree where node `n` is created at time `n` seconds.
    struct Builder {
        tree: DataTree,
        zxid: u64,
    }

    impl Builder {
        fn create(&mut self, path: &str, mode: CreateMode, owner: u64) {
            self.zxid += 1;
            let (mut changes, mut journal) = (Vec::new(), Journal::off());
            let mut ctx =
                Ctx { zxid: self.zxid, time_ms: self.zxid as i64 * 1000, changes: &mut changes, journal: &mut journal };
            self.tree
                .create(&mut ctx, path, Vec::new(), mode, SessionId(owner), crate::acl::table::OPEN)
                .expect("create");
        }

        fn contend(&mut self, dir: &str, session: u64, kind: LockKind) {
            let name = contender_prefix(SessionId(session), 1, kind);
            self.create(&format!("{dir}/{name}"), CreateMode::EphemeralSequential, session);
        }
    }

    #[test]
    fn reports_the_longest_queues_with_holders_and_oldest_waiters() {
        let mut t = Builder { tree: DataTree::default(), zxid: 0 };
        for dir in ["/a", "/b", "/c", "/seq"] {
            t.create(dir, CreateMode::Persistent, 0);
        }
        // zxid 5..=8: /a held by 10, three waiting; /b held by 20, one waiting.
        for session in [10, 11, 12, 13] {
            t.contend("/a", session, LockKind::Exclusive);
        }
        t.contend("/b", 20, LockKind::Exclusive);
        t.contend("/b", 21, LockKind::Exclusive);
        // Two readers share /c; a persistent sequential child is no contender.
        t.contend("/c", 30, LockKind::Shared);
        t.contend("/c", 31, LockKind::Shared);
        t.create("/seq/x", CreateMode::PersistentSequential, 0);

        let survey = survey(&t.tree, 2);
        assert_eq!(survey.directories, 3);
        let dirs: Vec<&str> = survey.top.iter().map(|l| l.dir.as_str()).collect();
        assert_eq!(dirs, ["/a", "/b"], "the two longest queues, longest first");
        let a = &survey.top[0];
        assert_eq!((a.waiters, a.holding), (3, 1));
        assert_eq!(a.holders, vec![Holder { session: SessionId(10), ctime_ms: 5000 }]);
        assert_eq!(a.oldest_waiter_ms, Some(6000));

        let all = super::survey(&t.tree, 100);
        let c = all.top.iter().find(|l| l.dir == "/c").expect("/c");
        assert_eq!((c.waiters, c.holding, c.holders.len(), c.oldest_waiter_ms), (0, 2, 2, None));
    }
}
