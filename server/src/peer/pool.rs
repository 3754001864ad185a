//! Every member's clients, one per channel, created on first use and kept for the process's
//! life (a handful of members, three channels each).

use super::client::{Identity, PeerClient, PeerError};
use super::wire::{Channel, PeerRequest, PeerResponse};
use crate::raft::types::NodeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub(crate) struct Peers {
    identity: Identity,
    /// Addresses that override the membership's for some members (`--peer-route`): a
    /// member behind NAT, or a test's per-link proxy.
    routes: HashMap<NodeId, String>,
    // A std mutex: looked up once per call, never held across an await.
    clients: Mutex<HashMap<(NodeId, Channel), Arc<PeerClient>>>,
}

impl Peers {
    pub(crate) fn new(identity: Identity, routes: HashMap<NodeId, String>) -> Self {
        Peers { identity, routes, clients: Mutex::default() }
    }

    pub(crate) fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The client for `target` on `channel`.
    pub(crate) fn client(&self, target: NodeId, channel: Channel) -> Arc<PeerClient> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients
            .entry((target, channel))
            .or_insert_with(|| Arc::new(PeerClient::new(self.identity.clone(), target, channel)))
            .clone()
    }

    /// Where `target`, whose peer address is `addr`, is reached: its route, if it has one.
    pub(crate) fn route(&self, target: NodeId, addr: &str) -> String {
        self.routes.get(&target).map_or(addr, String::as_str).to_string()
    }

    /// Calls `target` at peer address `addr` (or at its route, if it has one).
    pub(crate) async fn call(
        &self,
        target: NodeId,
        addr: &str,
        channel: Channel,
        request: PeerRequest,
        timeout: Duration,
    ) -> Result<PeerResponse, PeerError> {
        let addr = self.routes.get(&target).map_or(addr, String::as_str);
        self.client(target, channel).call(addr, request, timeout).await
    }
}
