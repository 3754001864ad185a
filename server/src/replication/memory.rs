//! A single server's log, in memory: the state machine's write lock is the order.

use super::{Barrier, MemberChange, Members, Pending, Rejected, Replication, Transfer};
use crate::command::Command;
use crate::core::Core;
use std::sync::Arc;
use ward_proto::{Contact, MemberInfo, MemberList, MemberRole, MemberStatus};

/// Single-server, in-memory log: the state machine's write lock is the order.
pub struct MemoryLog {
    core: Arc<Core>,
}

impl MemoryLog {
    pub fn new(core: Arc<Core>) -> Self {
        MemoryLog { core }
    }
}

fn done() -> Barrier {
    Box::pin(std::future::ready(Ok(())))
}

fn refused(why: &str) -> Rejected {
    Rejected::NotApplied(why.to_string())
}

impl Replication for MemoryLog {
    fn submit(&self, cmd: Command) -> Pending {
        let (tx, pending) = Pending::channel();
        let _ = tx.send(Ok(self.core.apply(&cmd)));
        pending
    }

    fn submit_waiting(&self, cmd: Command) -> Pending {
        self.submit(cmd)
    }

    fn propose_expiry(&self, cmd: Command) -> Pending {
        self.submit(cmd)
    }

    fn barrier(&self) -> Barrier {
        done()
    }

    fn confirm_contact(&self) -> Barrier {
        done()
    }

    fn in_contact(&self) -> bool {
        true
    }

    /// A group of one, which it leads.
    fn members(&self) -> Members {
        let me = MemberInfo { id: 1, addr: String::new(), role: MemberRole::Leader, applied: None, lag: Some(0) };
        let members = vec![MemberStatus { info: me, contact: Contact::Leads }];
        Box::pin(std::future::ready(Ok(MemberList { members, leader: Some(1), handing_over_to: None })))
    }

    fn change_members(&self, _change: MemberChange) -> Barrier {
        let why = refused("this server keeps its log in memory: it cannot form an ensemble");
        Box::pin(std::future::ready(Err(why)))
    }

    fn transfer_leader(&self, _to: Option<u64>) -> Transfer {
        let why = refused("a single server has no other member to hand its leadership to");
        Box::pin(std::future::ready(Err(why)))
    }

    fn snapshot_copy(&self) -> super::SnapshotCopying {
        Box::pin(std::future::ready(Err(super::CopyError::InMemory)))
    }

    fn replicated(&self) -> bool {
        false
    }

    fn raft_figures(&self) -> Option<crate::metrics::RaftFigures> {
        None
    }
}
