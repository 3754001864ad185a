//! ZooKeeper compatibility: a second listener speaking ZooKeeper 3.8's jute protocol, so
//! kazoo, zkCli and Curator work against Ward unchanged, on the same tree and sessions as
//! Ward's own clients. Every change still goes through the command log; reads, order and
//! watches use the same machinery as Ward's listener (`net::order`, `net::ordering`, `net::writer`).
//!
//! * [`jute`]: the primitive codec, bounded by the frame.
//! * [`records`]: ZooKeeper's records and numbers.
//! * [`ops`]: requests → Ward writes or reads.
//! * [`read`]: reads, and what only ZooKeeper has (ACLs, persistent watches...).
//! * [`reply`]: replies and notifications on the wire.
//! * [`connection`]: per connection: four-letter words, connect, the request loop.
//! * [`fourlw`]: `ruok`, `srvr`, `stat`, `mntr`, `conf`, `cons`, `envi`, `wchs`.
//! * [`frames`]: the length-prefixed frames requests and replies travel in.
//!
//! What differs from ZooKeeper is listed in docs/zookeeper-compat.md.

pub(crate) mod connection;
pub(crate) mod fourlw;
pub(crate) mod frames;
pub(crate) mod jute;
pub(crate) mod ops;
pub(crate) mod read;
pub(crate) mod records;
pub(crate) mod reply;
pub(crate) mod stats;

use crate::tls::ServerTls;
use crate::Server;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The largest packet accepted, judged from its length prefix before the body is read:
/// ZooKeeper's default `jute.maxbuffer` (0xfffff bytes).
pub(crate) const MAX_PACKET: usize = 0xfffff;

/// The largest reply sent, the same 64 MiB as on Ward's own port. Replies are not held to
/// [`MAX_PACKET`]: a node of nearly 1 MiB plus its stat, or a long listing, is larger, and
/// ZooKeeper's server sends such replies too (its clients apply their own `jute.maxbuffer`
/// to what they read: kazoo none, the Java client 0xfffff unless raised). A reply over this
/// is answered with `MARSHALLINGERROR` instead, and logged.
pub const MAX_REPLY: usize = ward_proto::MAX_REPLY_FRAME;

/// ZooKeeper's customary client address.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 2181));

/// A bound ZooKeeper listener carried in [`crate::Config`].
pub(crate) type ZkListener = crate::net::listener::Prebound;

/// Accepts ZooKeeper clients until `cancel` fires, over TLS with `tls` (the secure client
/// port); every connection task is tracked so shutdown can wait.
pub(crate) async fn accept_loop(
    server: Arc<Server>,
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    tasks: TaskTracker,
    cancel: CancellationToken,
) {
    let addr = listener.local_addr().unwrap_or(DEFAULT_ADDR);
    let shared = Arc::new(stats::Shared::new(addr));
    tracing::info!(%addr, tls = tls.is_some(), "serving ZooKeeper clients");
    let accept = crate::net::listener::accept_each;
    accept(&server, listener, tls, tasks, cancel, "ZooKeeper", |incoming, peer, conn, cancel| {
        connection::serve(server.clone(), shared.clone(), incoming, peer, conn, cancel)
    })
    .await
}
