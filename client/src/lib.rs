//! Ward's client: sessions, znodes and watches over one connection to a Ward ensemble, and
//! the locks and elections built on them.
//!
//! A lock and its fencing token:
//!
//! ```no_run
//! use ward_client::{Client, CreateMode, Error};
//!
//! # async fn demo() -> Result<(), Error> {
//! let client = Client::connect("127.0.0.1:7181").await?;
//! match client.create("/report", b"", CreateMode::Persistent).await {
//!     Ok(_) | Err(Error::NodeExists) => {}
//!     Err(e) => return Err(e),
//! }
//! let guard = client.lock("/locks/report").await?; // waits its turn: FIFO, no herd
//! println!("holding with fencing token {}", guard.fencing_token()); // larger for each later holder
//! // Lands only while this guard holds the lock: had this process stalled past its session
//! // and another taken the lock, the write would fail with `Error::StaleFence`.
//! client.set_data_fenced(&guard.fence(), "/report", b"written under the lock", None).await?;
//! guard.unlock().await?; // or drop it
//! client.close().await
//! # }
//! ```
//!
//! The same from a plain thread ([`blocking`]), told of a lost lock without a thread of its
//! own waiting for it:
//!
//! ```no_run
//! # fn demo() -> Result<(), ward_client::Error> {
//! let client = ward_client::blocking::Client::connect("127.0.0.1:7181")?;
//! let guard = client.lock("/locks/report")?;
//! let lost = guard.lost_signal(); // or guard.on_lost(callback)
//! for _step in 0..10 {
//!     if lost.try_recv().is_ok() {
//!         return Err(ward_client::Error::SessionExpired); // stop touching the resource
//!     }
//!     // ... one step of the work, with guard.fencing_token() ...
//! }
//! guard.unlock() // or drop it: the release goes on in the background
//! # }
//! ```
//!
//! Complete programs are in `client/examples/` (`lock`, `election`, and `recover`: a new
//! client and the lock taken again after `SessionExpired`); the tests run each against a
//! server.
//!
//! Znodes and watches:
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
//! * [`blocking`]: the same client, locks and elections for plain threads; guards that tell
//!   of their loss by channel or callback, and release in the background when dropped.
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

#![deny(unreachable_pub)]

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
    perms, Acl, Contact, CreateMode, ErrorCode, EventKind, LockKind, MemberInfo, MemberList, MemberRole, MemberStatus,
    Op, OpResult, ServerStats, SessionId, Stat, WatchEvent, WatchMode, MAX_LOCK_DELAY_MS, MAX_TTL_MS,
};
pub use watch::Watch;
