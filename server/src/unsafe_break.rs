//! Promises broken on purpose, one at a time, so that a test can show `ward check` catching
//! each with the checker that guards it (docs/operations.md, "Proving that the checkers
//! catch a fault"). Never on by default, and never in a deployment: `ward-server
//! --unsafe-break NAME` is hidden from `--help` and refused unless the environment says
//! [`ALLOW_VAR`]`=1`, which only the tests' processes are given.
//!
//! Each break is a layer over the code it breaks ([`wrap`] wraps the command log), except
//! `ack-before-fsync`, which lives where appends are acknowledged (`raft/late.rs`).

use crate::command::{Command, CommandOp, Outcome};
use crate::replication::{Barrier, MemberChange, Members, Pending, Replication};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use ward_proto::Response;

/// The environment variable that must be `1` for `--unsafe-break` to be accepted.
pub const ALLOW_VAR: &str = "WARD_ALLOW_UNSAFE_BREAK";

/// One promise to break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// A lock attempt is answered "held" as soon as its contender is logged, without waiting
    /// for the commits that remove the contenders ahead of it: two holders at once (caught
    /// by lock safety, G12).
    GrantBeforeCommit,
    /// A log append is acknowledged at once and written, with its `fdatasync`, only with an
    /// append a second or more later: what a power cut would lose, and here a `kill -9`
    /// does (caught by durability, G11). Meant for a one-member group: followers reading
    /// entries back from such a log may find them missing.
    AckBeforeFsync,
    /// `sync` is answered at once from this member's own state, without the leader's read
    /// index: a follower behind the leader, or a leader cut off from the rest, serves what it
    /// has (caught by linearizability, G17).
    StaleFollowerRead,
}

impl Break {
    pub const ALL: [Break; 3] = [Break::GrantBeforeCommit, Break::AckBeforeFsync, Break::StaleFollowerRead];

    pub fn name(self) -> &'static str {
        match self {
            Break::GrantBeforeCommit => "grant-before-commit",
            Break::AckBeforeFsync => "ack-before-fsync",
            Break::StaleFollowerRead => "stale-follower-read",
        }
    }
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Break {
    type Err = String;
    fn from_str(name: &str) -> Result<Break, String> {
        Break::ALL.into_iter().find(|b| b.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Break::ALL.iter().map(|b| b.name()).collect();
            format!("no such break {name:?} (one of {})", names.join(", "))
        })
    }
}

/// The command log with `broken` broken; the log itself when it is not a break of the log.
pub fn wrap(inner: Arc<dyn Replication>, broken: Break) -> Arc<dyn Replication> {
    match broken {
        Break::GrantBeforeCommit | Break::StaleFollowerRead => Arc::new(Broken { inner, broken }),
        Break::AckBeforeFsync => inner,
    }
}

/// A command log that breaks one promise and passes everything else through.
struct Broken {
    inner: Arc<dyn Replication>,
    broken: Break,
}

/// True for a lock attempt, whatever wraps it (its connection's attachment, its identities).
fn is_acquire(op: &CommandOp) -> bool {
    match op {
        CommandOp::LockAcquire { .. } | CommandOp::LockAcquireDelayed { .. } => true,
        CommandOp::Fenced { op, .. } | CommandOp::As { op, .. } => is_acquire(op),
        _ => false,
    }
}

impl Replication for Broken {
    fn submit(&self, cmd: Command) -> Pending {
        if self.broken != Break::GrantBeforeCommit || !is_acquire(&cmd.op) {
            return self.inner.submit(cmd);
        }
        let pending = self.inner.submit(cmd);
        let (tx, answered) = Pending::channel();
        tokio::spawn(async move {
            let mut committed = pending.await;
            if let Ok(applied) = &mut committed {
                if let Outcome::Reply(Ok(Response::Lock(state))) = &mut applied.outcome {
                    state.held = true;
                }
            }
            let _ = tx.send(committed);
        });
        answered
    }

    /// Not held back: the break applies to every acquire alike.
    fn submit_waiting(&self, cmd: Command) -> Pending {
        self.submit(cmd)
    }

    fn barrier(&self) -> Barrier {
        match self.broken {
            Break::StaleFollowerRead => Box::pin(std::future::ready(Ok(()))),
            _ => self.inner.barrier(),
        }
    }

    fn propose_expiry(&self, cmd: Command) -> Pending {
        self.inner.propose_expiry(cmd)
    }

    fn confirm_contact(&self) -> Barrier {
        self.inner.confirm_contact()
    }

    fn members(&self) -> Members {
        self.inner.members()
    }

    fn transfer_leader(&self, to: Option<u64>) -> crate::replication::Transfer {
        self.inner.transfer_leader(to)
    }

    fn change_members(&self, change: MemberChange) -> Barrier {
        self.inner.change_members(change)
    }

    fn in_contact(&self) -> bool {
        self.inner.in_contact()
    }

    fn snapshot_copy(&self) -> crate::replication::SnapshotCopying {
        self.inner.snapshot_copy()
    }

    fn raft_figures(&self) -> Option<crate::metrics::RaftFigures> {
        self.inner.raft_figures()
    }

    fn replicated(&self) -> bool {
        self.inner.replicated()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_break_has_a_name_that_parses_back() {
        for b in Break::ALL {
            assert_eq!(b.name().parse::<Break>(), Ok(b));
        }
        assert!("sometimes".parse::<Break>().is_err_and(|e| e.contains("grant-before-commit")));
    }
}
