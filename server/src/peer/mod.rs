//! The peer link between ensemble members: our own framing over tokio TCP, with mutual TLS
//! when the members have peer certificates (`crate::tls::PeerTls`).
//!
//! Why not the openraft examples' HTTP+JSON or a gRPC stack: the link carries Raft's
//! messages plus Ward's own (forwarded writes, session touches, read index, membership), all
//! already serde types; `ward-proto`'s frame codec and postcard carry them with no schema
//! compiler and no second serialization, and one multiplexed connection per member and
//! purpose keeps heartbeats off the connection that streams a snapshot.
//!
//! # Modules
//! * [`wire`]: the hello and the request and reply messages.
//! * [`client`]: calls to one member on one channel, over a lazily opened connection.
//! * [`listener`]: accepts members' connections, checks their hello, serves their requests.
//! * [`pool`]: every member's clients, by id, with their current addresses.
//! * [`level`]: release levels, said after the hello and its answer; the ensemble's level.

pub(crate) mod client;
pub(crate) mod level;
pub(crate) mod listener;
pub(crate) mod pool;
pub(crate) mod wire;

pub(crate) use client::{Identity, PeerError};
pub(crate) use listener::PeerService;
pub(crate) use pool::Peers;
pub(crate) use wire::{
    AdminReply, AdminRequest, Channel, ForwardError, GoneAnswer, PeerRequest, PeerResponse, SnapshotChunk,
};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod tls_tests;
