//! The network edge: accepting connections, the handshake, and each connection's reader and
//! writer.

pub mod connection;
pub mod counted;
pub mod handshake;
pub mod limits;
pub mod listener;
pub mod order;
pub mod ordering;
pub mod park;
pub mod queue;
pub mod writer;
