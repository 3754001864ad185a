//! A client's connection, in one place: what it is, how its replies and pushes are ordered,
//! and how it is written, parked and counted. The listeners (`net` for Ward's protocol, `zk`
//! for ZooKeeper's) decode requests and encode answers around it.
//!
//! * [`types`]: the connection's own types (`ConnId`, `CloseReason`, `Outbound`, `Delivery`, `Attached`).
//! * [`ordering`]: `ConnOrder`, the pure order of replies, events and grants (G2, G6),
//!   checked by loom; [`outbox`]: each connection's counted queue of events, grants and
//!   closes over it, with its bound on bytes queued for the client.
//! * [`session_conn`]: `SessionConn`, a connection bound to a session, and the loop that
//!   serves it (reader, writer, parking).
//! * [`driver`]: the one reader of every listener: the order in which a request is
//!   numbered, submitted, caught up, prepared, viewed and queued (G2, G6); a listener only
//!   decodes requests ([`driver::Protocol`]).
//! * [`directory`]: which connection serves each session here.
//! * [`queue`]: the reader's bounded queue of items for the writer; [`writer`]: replies in
//!   request order, with what the server pushes.
//! * [`park`]: an idle connection parked on its socket and outbox; [`counted`]: the bytes a
//!   connection reads and writes, counted into its listener's figures.

pub(crate) mod counted;
pub(crate) mod directory;
pub(crate) mod driver;
pub(crate) mod ordering;
pub(crate) mod outbox;
pub(crate) mod park;
pub(crate) mod queue;
pub(crate) mod session_conn;
pub(crate) mod types;
pub(crate) mod writer;

pub(crate) use outbox::OutboundTx;
pub(crate) use types::{Attached, CloseReason, ConnId, Delivery, Outbound};
