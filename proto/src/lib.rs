//! Ward's wire protocol: the only place where bytes become types.
//!
//! # Layout
//! * [`codec`]: length-prefixed frames (tokio-util) carrying postcard bodies; the frame-size
//!   limit is checked from the length prefix, before any buffer grows.
//! * [`handshake`]: the first frame each way (`Hello` / `Welcome`) and the version check.
//! * [`message`]: the envelopes after the handshake: [`ClientMessage`] and [`ServerMessage`].
//! * [`request`]: one variant per operation a client can ask for; multi-op transactions.
//! * [`response`]: what a successful request returns, and [`Stat`].
//! * [`event`]: watch events and their kinds.
//! * [`path`]: znode path syntax (ZooKeeper's rules).
//! * [`lock`]: lock contender names and their order.
//! * [`error`]: [`ErrorCode`], the one error vocabulary on the wire.
//! * [`ids`]: session ids, zxids and the session secret.
//! * [`acl`]: ACLs and identities, zkCli's notation for them; [`digest`]: the digest
//!   scheme's id of a password.
//!
//! * [`backup`]: the header of a backup file, which the server writes and `ward backup`
//!   and a restore read.
//!
//! Everything here is plain data plus pure functions, so the server, the client and tests
//! share one definition of every message.

pub mod acl;
pub mod backup;
pub mod codec;
pub mod digest;
pub mod error;
pub mod event;
pub mod handshake;
pub mod ids;
pub mod lock;
pub mod message;
pub mod path;
pub mod request;
pub mod response;

pub use acl::{perms, Acl, Credentials, Id};
pub use codec::{CodecError, FrameCodec};
pub use error::ErrorCode;
pub use event::{EventKind, Position, StreamEvent, WatchEvent};
pub use handshake::{Hello, HelloPrefix, Welcome, MAGIC, PROTOCOL_VERSION};
pub use ids::{SessionId, SessionSecret, Zxid};
pub use lock::LockKind;
pub use message::{ClientMessage, ServerMessage};
pub use request::{CreateMode, Op, PersistentWatch, Request, WatchKind, WatchMode, MAX_LOCK_DELAY_MS, MAX_TTL_MS};
pub use response::{
    Contact, LockNode, LockState, MemberInfo, MemberList, MemberRole, MemberStatus, OpResult, Response, ServerStats,
    Stat,
};

/// Largest node data accepted by default (ZooKeeper's `jute.maxbuffer` is also 1 MiB).
pub const MAX_DATA_LEN: usize = 1 << 20;

/// Room for the envelope, path and multi-op framing on top of the node data.
pub const FRAME_OVERHEAD: usize = 64 << 10;

/// Default limit on a frame a server accepts from a client.
pub const MAX_REQUEST_FRAME: usize = MAX_DATA_LEN + FRAME_OVERHEAD;

/// Default limit on a frame a client accepts from a server. Replies can list many children,
/// so this is larger than the request limit; it still bounds what a broken peer can make us
/// allocate.
pub const MAX_REPLY_FRAME: usize = 64 << 20;
