//! Ward's client: sessions, znodes and watches over one connection to a Ward ensemble.
//!
//! ```no_run
//! use ward_client::{Client, CreateMode};
//!
//! # async fn demo() -> Result<(), ward_client::Error> {
//! let client = Client::connect("127.0.0.1:7181").await?;
//! client.create("/app", b"config", CreateMode::Persistent).await?;
//! let (data, stat, watch) = client.get_data_watch("/app").await?;
//! assert_eq!((data.as_slice(), stat.version), (&b"config"[..], 0));
//! client.set_data("/app", b"v2", Some(0)).await?;
//! let event = watch.await?; // NodeDataChanged on /app
//! assert_eq!(event.path, "/app");
//! client.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//! * [`client`]: [`Client`], the operations as `async fn`s on `&self`.
//! * [`acl`]: credentials (`auth` on the builder, [`Client::add_auth`]) and nodes' ACLs.
//! * [`blocking`]: the same client, locks and elections for plain threads.
//! * [`builder`]: [`ClientBuilder`]: addresses, session timeout, connect timeout, TLS.
//! * [`tls`]: [`Tls`]: the CA to trust, the client's own certificate, the server name.
//! * `conn`: the background task owning the socket: pending requests by xid, heartbeats,
//!   reconnect and session resume, watch re-arming.
//! * [`lock`]: [`LockGuard`] and fencing: herd-free locks with server-side handoff.
//! * [`mutex`]: reentrant lock handles with a local queue in front of the lock.
//! * [`queue`]: reading a lock queue: holder, waiters, their context.
//! * [`election`]: leader election on the lock: [`Election`], [`Leadership`], [`Observer`].
//! * [`watch`]: [`Watch`], a one-shot watch as a future.
//! * [`stream`]: [`WatchStream`], a persistent watch as a stream that survives reconnects.
//! * [`state`]: the session states, [`SessionState`].
//! * [`error`]: the typed [`Error`].

pub mod acl;
pub mod blocking;
pub mod builder;
pub mod client;
mod conn;
pub mod election;
pub mod error;
pub mod lock;
pub mod mutex;
pub mod queue;
pub mod state;
pub mod stream;
mod sync;
pub mod tls;
pub mod watch;

pub use builder::ClientBuilder;
pub use client::Client;
pub use election::{Election, Leader, Leadership, Observer};
pub use error::{Error, Result};
pub use lock::{Fence, LockGuard, LockOptions};
pub use mutex::{Mutex, MutexGuard};
pub use queue::Contender;
pub use state::SessionState;
pub use stream::WatchStream;
pub use tls::Tls;
pub use ward_proto::acl::{parse_acl, AclParseError};
pub use ward_proto::digest::digest_id;
pub use ward_proto::{
    perms, Acl, CreateMode, ErrorCode, EventKind, LockKind, MemberInfo, MemberRole, Op, OpResult, ServerStats,
    SessionId, Stat, WatchEvent, WatchMode, MAX_LOCK_DELAY_MS, MAX_TTL_MS,
};
pub use watch::Watch;
