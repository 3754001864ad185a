//! The replication handle: what the server asks of the log that orders every change.
//!
//! Everything that changes state goes through [`Replication::submit`]. A single server
//! orders in memory and applies at once ([`memory::MemoryLog`]); an ensemble member puts
//! openraft behind the same trait ([`crate::raft::RaftLog`]).
//!
//! * [`pending`]: what a submitted command or a barrier resolves to (`Pending`, `Committed`,
//!   `Rejected`, `Barrier`).
//! * [`members`]: membership changes and the futures of membership calls.
//! * [`memory`]: `MemoryLog`, a single server's log in memory.
//! * [`copy`]: a snapshot of the state for a backup.

pub(crate) mod copy;
pub(crate) mod members;
pub(crate) mod memory;
pub(crate) mod pending;

pub use copy::{CopyError, SnapshotCopy, SnapshotCopying};
pub use members::{MemberChange, Members, Transfer};
pub use memory::MemoryLog;
pub use pending::{Barrier, Committed, Pending, Rejected};

use crate::command::Command;

/// The handle on the log that orders and applies commands: ordering, the leader's hearing
/// of sessions, membership, and figures. Each implementation says every answer: a single
/// server's are not defaults an ensemble could forget to override.
pub trait Replication: Send + Sync + 'static {
    // --- Ordering ---

    /// Orders `cmd` after every command submitted before it returns. The returned future
    /// resolves once the command is applied (and, for a durable log, durable).
    fn submit(&self, cmd: Command) -> Pending;

    /// [`Replication::submit`] of a command whose answer nobody needs at once: a lock acquire
    /// that will queue behind another session's contender, whose client waits for the grant
    /// anyway. A durable log may hold it back for a moment so that it shares a sync with the
    /// next command (the release it queues behind, usually) instead of taking one of its own.
    /// Order is kept: nothing submitted later goes before it.
    fn submit_waiting(&self, cmd: Command) -> Pending;

    /// Orders the expiry of a session, but only as the leader: never forwarded, so that a
    /// member that has lost (or never had) the lead cannot expire a session whose client the
    /// leader still hears from. The cleanup of unused containers and TTL nodes
    /// ([`crate::cleanup`]) proposes through here too: one member proposes, by one clock.
    fn propose_expiry(&self, cmd: Command) -> Pending;

    /// Resolves once this server has applied everything committed anywhere before the call
    /// (a linearizable `sync`): on a replicated log, after the leader has confirmed it still
    /// leads. A single server's log is always current.
    fn barrier(&self) -> Barrier;

    // --- Sessions: where expiry is decided ---

    /// Resolves once a heartbeat received before the call is known to have refreshed its
    /// session's deadline where expiry is decided (the leader). A ping is answered only
    /// then. A single server's own deadlines are the ones that count.
    fn confirm_contact(&self) -> Barrier;

    /// False while this server cannot keep sessions alive (out of contact with a leader):
    /// it then refuses handshakes.
    fn in_contact(&self) -> bool;

    // --- Membership ---

    /// The ensemble's members, with whom the leader hears from (known only on the leader).
    fn members(&self) -> Members;

    /// Adds or removes a member; resolves once the change is committed.
    fn change_members(&self, change: MemberChange) -> Barrier;

    /// Hands the leadership to member `to`, or to the voter most up to date; resolves with
    /// the member that leads once it does.
    fn transfer_leader(&self, to: Option<u64>) -> Transfer;

    // --- Backup ---

    /// A snapshot file of a state that has applied every command committed anywhere before
    /// the call (a snapshot taken for it, if the one in place is older), for `ward backup`.
    fn snapshot_copy(&self) -> SnapshotCopying;

    // --- Figures ---

    /// True on an ensemble member: a session's clients can reach it through more than one
    /// server, so its attachments are logged and its writes fenced by them
    /// ([`CommandOp::Fenced`](crate::command::CommandOp::Fenced)); and this server's state
    /// can be missing commands the group has committed (a member serves at once after a
    /// restart and catches up afterwards, and a follower can lag). A single server applies
    /// its whole log before it serves, and a connection's writes are in the log before a
    /// later connection's handshake starts.
    fn replicated(&self) -> bool;

    /// Role, term and indexes of a replicated log, for `/metrics` (`None`: not replicated).
    fn raft_figures(&self) -> Option<crate::metrics::RaftFigures>;
}
