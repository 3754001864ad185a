//! openraft's network over the peer link: each Raft RPC is one call on the member's Raft
//! channel, except snapshot chunks, which travel on the Snapshot channel so that a large
//! transfer never sits in front of a heartbeat. A one-member group never calls it.
//!
//! A snapshot is sent by openraft's default `full_snapshot`: it reads the leader's snapshot
//! file a chunk (`snapshot_max_chunk_size`) at a time and calls [`PeerNetwork::install_snapshot`]
//! once per chunk (see [`super::snapshot_file`]).
//!
//! Each append a peer accepts is recorded, with when it was sent, in the [`QuorumClock`]
//! that the touch lease is judged by.

use super::quorum::QuorumClock;
use super::types::{NodeId, TypeConfig};
use crate::peer::{Channel, PeerError, PeerRequest, PeerResponse, Peers};
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};
use std::sync::Arc;
use std::time::Instant;

/// Makes a [`PeerNetwork`] per target; they share [`Peers`]' pooled connections.
#[derive(Clone)]
pub struct PeerNetworkFactory {
    pub peers: Arc<Peers>,
    pub quorum: Arc<QuorumClock>,
}

pub struct PeerNetwork {
    peers: Arc<Peers>,
    quorum: Arc<QuorumClock>,
    target: NodeId,
    addr: String,
}

impl RaftNetworkFactory<TypeConfig> for PeerNetworkFactory {
    type Network = PeerNetwork;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerNetwork {
        PeerNetwork { peers: self.peers.clone(), quorum: self.quorum.clone(), target, addr: node.addr.clone() }
    }
}

type RpcError<E = openraft::error::Infallible> = RPCError<NodeId, BasicNode, RaftError<NodeId, E>>;

fn transport<E: std::error::Error>(e: PeerError) -> RPCError<NodeId, BasicNode, E> {
    match e {
        PeerError::Unreachable(..) => RPCError::Unreachable(Unreachable::new(&e)),
        PeerError::Lost(..) => RPCError::Network(NetworkError::new(&e)),
    }
}

fn wrong_reply<E: std::error::Error>(what: &str) -> RPCError<NodeId, BasicNode, E> {
    let e = std::io::Error::new(std::io::ErrorKind::InvalidData, format!("peer answered {what} with another reply"));
    RPCError::Network(NetworkError::new(&e))
}

impl PeerNetwork {
    async fn call(
        &self,
        channel: Channel,
        request: PeerRequest,
        option: &RPCOption,
    ) -> Result<PeerResponse, PeerError> {
        self.peers.call(self.target, &self.addr, channel, request, option.hard_ttl()).await
    }
}

impl RaftNetwork<TypeConfig> for PeerNetwork {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RpcError> {
        // Read before the request leaves: the peer's lease starts no earlier.
        let sent = Instant::now();
        let answer =
            match self.call(Channel::Raft, PeerRequest::AppendEntries(rpc), &option).await.map_err(transport)? {
                PeerResponse::AppendEntries(r) => {
                    r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))?
                }
                _ => return Err(wrong_reply("append_entries")),
            };
        if !matches!(answer, AppendEntriesResponse::HigherVote(_)) {
            self.quorum.accepted(self.target, sent);
        }
        Ok(answer)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, RpcError<InstallSnapshotError>> {
        match self.call(Channel::Snapshot, PeerRequest::InstallSnapshot(rpc), &option).await.map_err(transport)? {
            PeerResponse::InstallSnapshot(r) => r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e))),
            _ => Err(wrong_reply("install_snapshot")),
        }
    }

    async fn vote(&mut self, rpc: VoteRequest<NodeId>, option: RPCOption) -> Result<VoteResponse<NodeId>, RpcError> {
        match self.call(Channel::Raft, PeerRequest::Vote(rpc), &option).await.map_err(transport)? {
            PeerResponse::Vote(r) => r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e))),
            _ => Err(wrong_reply("vote")),
        }
    }
}
