//! Which connection serves each session on this server: where apply's pushes for a session
//! go, and which connection may still submit for it. Kept under the session tracker's lock
//! ([`SessionTracker`](crate::session::SessionTracker)): binding a connection and ending its
//! session must not interleave, or a connection could stay bound to a session that ended.

use super::outbox::OutboundTx;
use super::types::{CloseReason, ConnId, Outbound};
use std::collections::HashMap;
use ward_proto::SessionId;

#[derive(Default)]
pub(crate) struct Directory(HashMap<SessionId, (ConnId, OutboundTx)>);

impl Directory {
    /// Binds `session` to `conn`; the connection that served it before is told it moved.
    pub(crate) fn bind(&mut self, session: SessionId, conn: ConnId, tx: OutboundTx) {
        if let Some((_, old)) = self.0.insert(session, (conn, tx)) {
            let _ = old.send(Outbound::Close(CloseReason::SessionMoved));
        }
    }

    /// `conn` went away; a newer connection of the session stays bound.
    pub(crate) fn unbind(&mut self, session: SessionId, conn: ConnId) {
        if self.owner(session) == Some(conn) {
            self.0.remove(&session);
        }
    }

    /// Closes the connection serving `session`, if any, for `reason`.
    pub(crate) fn close(&mut self, session: SessionId, reason: CloseReason) {
        if let Some((_, tx)) = self.0.remove(&session) {
            let _ = tx.send(Outbound::Close(reason));
        }
    }

    /// Closes every connection, for `reason`.
    pub(crate) fn close_all(&mut self, reason: CloseReason) {
        for (_, (_, tx)) in self.0.drain() {
            let _ = tx.send(Outbound::Close(reason));
        }
    }

    /// Pushes `msg` to the connection serving `session`; false if none does.
    pub(crate) fn send(&self, session: SessionId, msg: Outbound) -> bool {
        self.0.get(&session).is_some_and(|(_, tx)| tx.send(msg))
    }

    pub(crate) fn owner(&self, session: SessionId) -> Option<ConnId> {
        self.0.get(&session).map(|(id, _)| *id)
    }
}
