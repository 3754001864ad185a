//! openraft's network over the peer link: each Raft RPC is one call on the member's Raft
//! channel, except a snapshot, which travels on the Snapshot channel a chunk at a time so
//! that a large transfer never sits in front of a heartbeat. A one-member group never calls
//! it.
//!
//! openraft 0.10 hands the network a whole snapshot ([`RaftNetworkV2::full_snapshot`]): the
//! leader's snapshot file is read and sent a chunk (1 MiB) at a time, and the follower
//! writes the chunks into a file beside its own snapshot and installs it once the last has
//! arrived (`snapshot_receive`). Neither side holds a snapshot in memory whole.
//!
//! Each append a peer accepts is recorded, with when it was sent, in the [`QuorumClock`]
//! that the touch lease is judged by.

use super::quorum::QuorumClock;
use super::snapshot_file::SnapshotFile;
use super::types::{NodeId, Snapshot, TypeConfig, Vote};
use crate::peer::{Channel, PeerError, PeerRequest, PeerResponse, Peers, SnapshotChunk};
use openraft::error::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::AsyncReadExt;

/// The bytes of a snapshot sent in one call, unless openraft's `snapshot_max_chunk_size`
/// says otherwise.
pub(crate) const SNAPSHOT_CHUNK: usize = 1 << 20;

/// Makes a [`PeerNetwork`] per target; they share [`Peers`]' pooled connections.
#[derive(Clone)]
pub(crate) struct PeerNetworkFactory {
    pub peers: Arc<Peers>,
    pub quorum: Arc<QuorumClock>,
}

pub(crate) struct PeerNetwork {
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

type RpcError = RPCError<TypeConfig>;

fn transport(e: PeerError) -> RpcError {
    match e {
        PeerError::Unreachable(..) => RPCError::Unreachable(Unreachable::new(&e)),
        PeerError::Lost(..) => RPCError::Network(NetworkError::new(&e)),
    }
}

fn wrong_reply(what: &str) -> RpcError {
    let e = std::io::Error::new(std::io::ErrorKind::InvalidData, format!("peer answered {what} with another reply"));
    RPCError::Network(NetworkError::new(&e))
}

/// The peer refused the call with a Raft error (it is shutting down, or stopped).
fn remote(target: NodeId, e: impl std::fmt::Display) -> RpcError {
    let e = std::io::Error::other(format!("member {target} refused: {e}"));
    RPCError::Network(NetworkError::new(&e))
}

impl PeerNetwork {
    async fn call(&self, channel: Channel, request: PeerRequest, option: &RPCOption) -> Result<PeerResponse, RpcError> {
        self.peers.call(self.target, &self.addr, channel, request, option.hard_ttl()).await.map_err(transport)
    }

    /// Sends `snapshot`'s file in chunks; the last one's answer is the follower's vote.
    async fn send_snapshot(&self, vote: Vote, mut snapshot: Snapshot, option: &RPCOption) -> Result<Vote, RpcError> {
        let meta = snapshot.meta.clone();
        let mut offset = 0u64;
        let mut buf = vec![0u8; option.snapshot_chunk_size().unwrap_or(SNAPSHOT_CHUNK).max(1)];
        loop {
            let n = read_full(&mut snapshot.snapshot, &mut buf).await.map_err(|e| {
                tracing::error!(error = %e, "reading the snapshot to send failed");
                RPCError::Network(NetworkError::new(&e))
            })?;
            let done = n < buf.len();
            let chunk = SnapshotChunk { vote, meta: meta.clone(), offset, data: buf[..n].to_vec(), done };
            match self.call(Channel::Snapshot, PeerRequest::SnapshotChunk(chunk), option).await? {
                // Only a higher vote ends a transfer early (this leader is deposed); any other
                // answer before the last chunk would have openraft count the snapshot installed.
                PeerResponse::SnapshotChunk(Ok(answer)) if done || answer > vote => return Ok(answer),
                PeerResponse::SnapshotChunk(Ok(_)) => offset += n as u64,
                PeerResponse::SnapshotChunk(Err(e)) => return Err(remote(self.target, e)),
                _ => return Err(wrong_reply("a snapshot chunk")),
            }
        }
    }
}

/// Fills `buf` from `file` unless it ends first; returns how much was read.
async fn read_full(file: &mut SnapshotFile, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]).await? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

impl RaftNetworkV2<TypeConfig> for PeerNetwork {
    type SnapshotData = SnapshotFile;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RpcError> {
        // Read before the request leaves: the peer's lease starts no earlier.
        let sent = Instant::now();
        let answer = match self.call(Channel::Raft, PeerRequest::AppendEntries(rpc), &option).await? {
            PeerResponse::AppendEntries(r) => r.map_err(|e| remote(self.target, e))?,
            _ => return Err(wrong_reply("append_entries")),
        };
        if !matches!(answer, AppendEntriesResponse::HigherVote(_)) {
            self.quorum.accepted(self.target, sent);
        }
        Ok(answer)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RpcError> {
        match self.call(Channel::Raft, PeerRequest::Vote(rpc), &option).await? {
            PeerResponse::Vote(r) => r.map_err(|e| remote(self.target, e)),
            _ => Err(wrong_reply("vote")),
        }
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RpcError> {
        match self.call(Channel::Raft, PeerRequest::PreVote(rpc), &option).await? {
            PeerResponse::PreVote(r) => r.map_err(|e| remote(self.target, e)),
            _ => Err(wrong_reply("pre_vote")),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        tokio::select! {
            closed = cancel => Err(StreamingError::Closed(closed)),
            sent = self.send_snapshot(vote, snapshot, &option) => match sent {
                Ok(vote) => Ok(SnapshotResponse::new(vote)),
                Err(e) => Err(e.into()),
            },
        }
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<TypeConfig>, RpcError> {
        match self.call(Channel::Raft, PeerRequest::TransferLeader(req), &option).await? {
            PeerResponse::TransferLeader(r) => r.map_err(|e| remote(self.target, e)),
            _ => Err(wrong_reply("transfer_leader")),
        }
    }
}
