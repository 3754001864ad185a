//! The seam between accepting a command and applying it.
//!
//! Everything that changes state goes through [`CommandLog::submit`]. The in-memory log here
//! applies at once; the durable, replicated log puts openraft behind the same trait.

use crate::command::{Applied, Command};
use crate::core::Core;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::oneshot;
use ward_proto::{Contact, ErrorCode, MemberInfo, MemberList, MemberRole, MemberStatus};

/// Orders commands and applies them.
pub trait CommandLog: Send + Sync + 'static {
    /// Orders `cmd` after every command submitted before it returns. The returned future
    /// resolves once the command is applied (and, for a durable log, durable).
    fn submit(&self, cmd: Command) -> Pending;

    /// [`CommandLog::submit`] of a command whose answer nobody needs at once: a lock acquire
    /// that will queue behind another session's contender, whose client waits for the grant
    /// anyway. A durable log may hold it back for a moment so that it shares a sync with the
    /// next command (the release it queues behind, usually) instead of taking one of its own.
    /// Order is kept: nothing submitted later goes before it.
    fn submit_waiting(&self, cmd: Command) -> Pending {
        self.submit(cmd)
    }

    /// Resolves once this server has applied everything committed anywhere before the call
    /// (a linearizable `sync`): on a replicated log, after the leader has confirmed it still
    /// leads. A single server's log is always current.
    fn barrier(&self) -> Barrier {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Orders the expiry of a session, but only as the leader: never forwarded, so that a
    /// member that has lost (or never had) the lead cannot expire a session whose client the
    /// leader still hears from. The cleanup of unused containers and TTL nodes
    /// ([`crate::cleanup`]) proposes through here too: one member proposes, by one clock.
    fn propose_expiry(&self, cmd: Command) -> Pending {
        self.submit(cmd)
    }

    /// Resolves once a heartbeat received before the call is known to have refreshed its
    /// session's deadline where expiry is decided (the leader). A ping is answered only
    /// then. A single server's own deadlines are the ones that count.
    fn confirm_contact(&self) -> Barrier {
        Box::pin(std::future::ready(Ok(())))
    }

    /// The ensemble's members, with whom the leader hears from (known only on the leader).
    /// A server without a replicated log is a group of one.
    fn members(&self) -> Members {
        let me = MemberInfo { id: 1, addr: String::new(), role: MemberRole::Leader, applied: None, lag: Some(0) };
        let members = vec![MemberStatus { info: me, contact: Contact::Leads }];
        Box::pin(std::future::ready(Ok(MemberList { members, leader: Some(1), handing_over_to: None })))
    }

    /// Adds or removes a member; resolves once the change is committed.
    fn change_members(&self, _change: MemberChange) -> Barrier {
        let why = "this server keeps its log in memory: it cannot form an ensemble".to_string();
        Box::pin(std::future::ready(Err(Rejected::NotApplied(why))))
    }

    /// Hands the leadership to member `to`, or to the voter most up to date; resolves with
    /// the member that leads once it does.
    fn transfer_leader(&self, _to: Option<u64>) -> Transfer {
        let why = "a single server has no other member to hand its leadership to".to_string();
        Box::pin(std::future::ready(Err(Rejected::NotApplied(why))))
    }

    /// False while this server cannot keep sessions alive (out of contact with a leader):
    /// it then refuses handshakes.
    fn in_contact(&self) -> bool {
        true
    }

    /// Role, term and indexes of a replicated log, for `/metrics` (`None`: not replicated).
    fn raft_figures(&self) -> Option<crate::metrics::RaftFigures> {
        None
    }

    /// True when this server's state can be missing commands its group has committed: an
    /// ensemble member serves at once after a restart and catches up (replays) afterwards,
    /// and a follower can lag. A single server applies its whole log before it serves.
    fn may_lag(&self) -> bool {
        false
    }

    /// True when a session's clients can reach it through more than one server (an
    /// ensemble): its attachments are logged and its writes fenced by them
    /// ([`CommandOp::Fenced`](crate::command::CommandOp::Fenced)). On a single server, a
    /// connection's writes are in the log before a later connection's handshake starts.
    fn replicated(&self) -> bool {
        false
    }
}

/// A change to an ensemble's membership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberChange {
    /// Member `id`, reachable by its peers at `addr`, joins (as a learner, then a voter).
    Add {
        id: u64,
        addr: String,
    },
    Remove {
        id: u64,
    },
}

/// The future of [`CommandLog::members`].
pub type Members = Pin<Box<dyn Future<Output = Result<MemberList, Rejected>> + Send>>;

/// The future of [`CommandLog::transfer_leader`]: the member that leads.
pub type Transfer = Pin<Box<dyn Future<Output = Result<u64, Rejected>> + Send>>;

/// The future of [`CommandLog::barrier`].
pub type Barrier = Pin<Box<dyn Future<Output = Result<(), Rejected>> + Send>>;

/// Why a submitted command has no result. The difference decides what a client is told:
/// a command known not to be applied can be refused with an error, while one whose fate is
/// unknown must not be answered either way (the connection is closed instead, so the client
/// sees a connection loss, as ZooKeeper's clients do).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Certainly not applied (no leader, or the leader refused it before logging it); safe
    /// to send again.
    #[error("not applied: {0}")]
    NotApplied(String),
    /// Handed to the log, but whether it committed is not known (leadership lost, a
    /// timeout, a lost reply from the leader).
    #[error("outcome unknown: {0}")]
    Unknown(String),
    /// The log has stopped (shutdown, or a write or fsync failed).
    #[error("the log has stopped")]
    Stopped,
}

impl Rejected {
    /// The error a client may be given for a command that was not applied; `None` when
    /// nothing may be said (the outcome is unknown).
    pub fn as_reply(&self) -> Option<ErrorCode> {
        match self {
            Rejected::NotApplied(_) => Some(ErrorCode::Unavailable),
            Rejected::Unknown(_) | Rejected::Stopped => None,
        }
    }
}

/// What a [`Pending`] resolves to.
pub type Committed = Result<Applied, Rejected>;

/// A submitted command's result, to come.
pub struct Pending(oneshot::Receiver<Committed>);

impl Pending {
    /// A pending result and the sender that completes it.
    pub fn channel() -> (oneshot::Sender<Committed>, Pending) {
        let (tx, rx) = oneshot::channel();
        (tx, Pending(rx))
    }

    /// The result if it is already there: lets a connection flush before it waits.
    pub fn try_take(&mut self) -> Option<Committed> {
        match self.0.try_recv() {
            Ok(committed) => Some(committed),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => Some(Err(Rejected::Stopped)),
        }
    }
}

impl Future for Pending {
    /// [`Rejected::Stopped`] when the log dropped the command without a word (shutdown).
    type Output = Committed;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| r.unwrap_or(Err(Rejected::Stopped)))
    }
}

/// Single-server, in-memory log: the state machine's write lock is the order.
pub struct MemoryLog {
    core: Arc<Core>,
}

impl MemoryLog {
    pub fn new(core: Arc<Core>) -> Self {
        MemoryLog { core }
    }
}

impl CommandLog for MemoryLog {
    fn submit(&self, cmd: Command) -> Pending {
        let (tx, pending) = Pending::channel();
        let _ = tx.send(Ok(self.core.apply(&cmd)));
        pending
    }
}
