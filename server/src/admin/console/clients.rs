//! Who a session is, for the console: its owner name (replicated state), and where this
//! server knows it from (local: the connection serving it here, its client's address and
//! protocol, when it was last heard from). A member that does not serve a session's
//! connection knows only what the state says.

use crate::state::StateMachine;
use crate::Server;
use serde::Serialize;
use std::collections::HashMap;
use tokio::time::Instant;
use ward_proto::SessionId;

/// This server's view of every session it tracks, read once per answer.
pub(crate) struct Clients<'a> {
    server: &'a Server,
    live: HashMap<SessionId, crate::session::tracker::Liveness>,
    now: Instant,
}

/// A session as the console shows it beside a lock contender or a node.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Who {
    pub session: String,
    pub owner: Option<String>,
    /// `host:port` of the client, when its connection is to this server.
    pub client: Option<String>,
    /// `ward` or `zookeeper`, when connected here.
    pub protocol: Option<&'static str>,
}

impl<'a> Clients<'a> {
    pub(crate) fn new(server: &'a Server) -> Clients<'a> {
        Clients { server, live: server.local.sessions.liveness().into_iter().collect(), now: Instant::now() }
    }

    pub(crate) fn who(&self, state: &StateMachine, session: SessionId) -> Who {
        let owner = state.session(session).and_then(|r| r.owner.clone());
        let (client, protocol) = match self.connection(session) {
            Some((addr, protocol)) => (Some(addr.to_string()), Some(protocol)),
            None => (None, None),
        };
        Who { session: hex(session), owner, client, protocol }
    }

    /// The connection serving `session` here, if any: its id, client address and protocol.
    pub(crate) fn connection(&self, session: SessionId) -> Option<(std::net::SocketAddr, &'static str)> {
        let conn = self.live.get(&session)?.conn?;
        let (addr, protocol) = self.server.connections.peer(conn)?;
        Some((addr, if protocol == "ZooKeeper" { "zookeeper" } else { "ward" }))
    }

    pub(crate) fn conn_id(&self, session: SessionId) -> Option<crate::conn::ConnId> {
        self.live.get(&session)?.conn
    }

    /// Milliseconds since this server last heard from `session` (`None`: not tracked here).
    pub(crate) fn heard_ms_ago(&self, session: SessionId) -> Option<u64> {
        let heard = self.live.get(&session)?.heard;
        Some(u64::try_from(self.now.saturating_duration_since(heard).as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn expiring(&self, session: SessionId) -> bool {
        self.live.get(&session).is_some_and(|l| l.expiring)
    }
}

/// A session id as the console, the logs and the CLI write it (`0x` and 16 hex digits).
pub(crate) fn hex(session: SessionId) -> String {
    session.to_string()
}

/// A session id written in hex (`0x` optional) or decimal.
pub(crate) fn parse_session(text: &str) -> Option<SessionId> {
    let text = text.trim();
    let id = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => text.parse().ok()?,
    };
    Some(SessionId(id))
}
