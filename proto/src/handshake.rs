//! The handshake: the first frame in each direction.
//!
//! A client's first frame is [`ClientMessage::Hello`](crate::ClientMessage::Hello). Its first
//! fields, the magic bytes and the protocol version, keep their encoding in every version
//! ([`HelloPrefix`]), so a server can name a version mismatch even when the rest of a newer
//! client's hello no longer decodes. The server answers with
//! [`ServerMessage::Welcome`](crate::ServerMessage::Welcome) or
//! [`ServerMessage::Refused`](crate::ServerMessage::Refused); `Refused` is variant 0 of
//! every version of `ServerMessage` for the same reason.

use crate::ids::{SessionId, SessionSecret, Zxid};
use serde::{Deserialize, Serialize};

/// Marks a Ward connection, so that a stray client of another protocol is refused clearly.
pub const MAGIC: [u8; 4] = *b"WARD";

/// The protocol version this crate speaks. Bump it on any incompatible change.
pub const PROTOCOL_VERSION: u32 = 2;

/// A client's opening frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub magic: [u8; 4],
    pub version: u32,
    /// The session to resume, or `None` to open a new one.
    pub resume: Option<(SessionId, SessionSecret)>,
    /// The session timeout the client asks for; the server clamps it into its range.
    pub timeout_ms: u32,
    /// The highest zxid this client has seen, so that a server behind it can refuse it
    /// instead of showing it older state.
    pub last_zxid_seen: Zxid,
    /// A stable name for the application instance. A new session with the same owner ends
    /// the previous one at once (its ephemerals and locks go), so a service restarted after
    /// a crash need not wait out its old session's timeout.
    pub owner: Option<String>,
}

impl Hello {
    /// A hello of this protocol version.
    pub fn new(resume: Option<(SessionId, SessionSecret)>, timeout_ms: u32, last_zxid_seen: Zxid) -> Self {
        Hello { magic: MAGIC, version: PROTOCOL_VERSION, resume, timeout_ms, last_zxid_seen, owner: None }
    }
}

/// The part of a hello frame that every protocol version encodes the same way: the
/// `ClientMessage` variant tag (0), the magic and the version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloPrefix {
    pub tag: u32,
    pub magic: [u8; 4],
    pub version: u32,
}

impl HelloPrefix {
    /// Reads the prefix of a frame that may not decode as this version's hello.
    pub fn peek(frame: &[u8]) -> Option<HelloPrefix> {
        postcard::take_from_bytes::<HelloPrefix>(frame).ok().map(|(p, _)| p)
    }
}

/// The server's acceptance of a hello.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    pub version: u32,
    pub session_id: SessionId,
    pub secret: SessionSecret,
    /// The negotiated session timeout.
    pub timeout_ms: u32,
    /// True when this connection resumed an existing session.
    pub resumed: bool,
}
