//! Ward's protocol at the network edge: accepting connections and their limits, the
//! handshake, and the connection's decoding and encoding around [`crate::conn`].

pub mod connection;
pub mod handshake;
pub mod limits;
pub mod listener;
