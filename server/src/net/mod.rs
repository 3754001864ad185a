//! Ward's protocol at the network edge: accepting connections and their limits, the
//! handshake, and the connection's decoding and encoding around [`crate::conn`].

pub(crate) mod connection;
pub(crate) mod handshake;
pub(crate) mod limits;
pub mod listener;
