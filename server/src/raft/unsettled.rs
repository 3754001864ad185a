//! Connections with a forwarded write of unknown outcome: their later writes stay here.
//!
//! A follower that stops waiting for a forwarded batch (its leader changed while the batch
//! was on its way) answers it "unknown", and the connection that sent it closes. The batch
//! may still be on the wire to the old leader, and be logged there after all, if that
//! member leads again by the time it arrives. The connection's writes queued behind it must
//! then not reach the log before it: sent to the new leader at once, a later write of the
//! session could be applied first, and the late one after it (a lost update for a client
//! that pipelined two `set`s). So once a forward's outcome is unknown, every command still
//! here that the same connection sent (its sessions, at that connection's epoch or an older
//! one, see [`CommandOp::Fenced`]) is refused as not applied: it never left this member,
//! and its connection is closing anyway. The session's next connection attaches at a later
//! epoch, logged before its writes, and the log refuses the late batch once that attachment
//! is in it (G19).

use crate::command::{Command, CommandOp};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use ward_proto::{SessionId, Zxid};

/// How long a record is kept: far longer than a closing connection takes to stop
/// submitting (it submits nothing once its close began).
const KEEP: Duration = Duration::from_secs(60);

/// See the module's doc.
#[derive(Default)]
pub(super) struct Unsettled {
    /// Per session: the newest epoch with a write of unknown outcome, and since when.
    epochs: HashMap<SessionId, (Zxid, Instant)>,
}

/// The session and epoch of a connection's fenced write; `None` for any other command.
pub(super) fn fence(cmd: &Command) -> Option<(SessionId, Zxid)> {
    match &cmd.op {
        CommandOp::Fenced { epoch, .. } => Some((cmd.session, *epoch)),
        _ => None,
    }
}

impl Unsettled {
    /// The writes of `fences` (sessions and epochs, from [`fence`]) have an unknown outcome.
    pub(super) fn record(&mut self, fences: &[(SessionId, Zxid)], now: Instant) {
        self.epochs.retain(|_, (_, since)| now.saturating_duration_since(*since) < KEEP);
        for &(session, epoch) in fences {
            let entry = self.epochs.entry(session).or_insert((epoch, now));
            *entry = (entry.0.max(epoch), now);
        }
    }

    /// Whether `cmd` may be proposed or forwarded: not a write of a connection with a write
    /// of unknown outcome. A write from a later connection of the session ends the record.
    pub(super) fn admits(&mut self, cmd: &Command) -> bool {
        let Some((session, epoch)) = fence(cmd) else { return true };
        match self.epochs.get(&session) {
            Some(&(unsettled, _)) if epoch <= unsettled => false,
            Some(_) => {
                self.epochs.remove(&session);
                true
            }
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(session: u64, epoch: u64) -> Command {
        let op = CommandOp::Fenced { epoch, op: Box::new(CommandOp::CloseSession) };
        Command { time_ms: 0, session: SessionId(session), xid: 1, op }
    }

    /// G2, G19: after a forward of unknown outcome, the same connection's later writes are
    /// held back for good, other sessions' and the next connection's go, and the record
    /// ends with the next connection.
    #[test]
    fn a_connections_writes_behind_an_unknown_outcome_are_refused() {
        let mut unsettled = Unsettled::default();
        let now = Instant::now();
        unsettled.record(&[(SessionId(1), 10)], now);
        assert!(!unsettled.admits(&write(1, 10)), "the same connection");
        assert!(!unsettled.admits(&write(1, 9)), "an older one");
        assert!(unsettled.admits(&write(2, 10)), "another session");
        let unfenced = Command { time_ms: 0, session: SessionId(1), xid: 0, op: CommandOp::CloseSession };
        assert!(unsettled.admits(&unfenced), "not a connection's write");
        assert!(unsettled.admits(&write(1, 11)), "the next connection");
        assert!(unsettled.admits(&write(1, 10)), "the record ended with the next connection");
    }

    /// A record is kept for a minute, then dropped at the next record: the map stays bounded.
    #[test]
    fn records_are_dropped_after_a_while() {
        let mut unsettled = Unsettled::default();
        let now = Instant::now();
        unsettled.record(&[(SessionId(1), 10), (SessionId(1), 8)], now);
        assert!(!unsettled.admits(&write(1, 10)), "the newest epoch recorded");
        unsettled.record(&[(SessionId(2), 5)], now + KEEP);
        assert!(unsettled.admits(&write(1, 10)));
        assert!(!unsettled.admits(&write(2, 5)));
    }
}
