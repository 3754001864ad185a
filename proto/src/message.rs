//! The envelopes every frame carries.

use crate::error::ErrorCode;
use crate::event::{StreamEvent, WatchEvent};
use crate::handshake::{Hello, Welcome};
use crate::ids::Zxid;
use crate::request::Request;
use crate::response::Response;
use serde::{Deserialize, Serialize};

/// A frame from client to server. `Hello` must stay variant 0 (see [`crate::handshake`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientMessage {
    Hello(Hello),
    /// A request; `xid` is the client's tag, echoed in the reply.
    Request {
        xid: u64,
        request: Request,
    },
}

/// A frame from server to client. `Refused` must stay variant 0 (see [`crate::handshake`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerMessage {
    /// The hello was refused; the server closes the connection after this frame.
    Refused {
        code: ErrorCode,
        reason: String,
    },
    Welcome(Welcome),
    /// The answer to request `xid`. `zxid` is the last zxid applied when the answer was made.
    Reply {
        xid: u64,
        zxid: Zxid,
        result: Result<Response, ErrorCode>,
    },
    /// A watch fired. Sent before the reply to any request that could observe the change.
    Event(WatchEvent),
    /// The session ended while this connection was open (expired, or closed elsewhere);
    /// the server closes the connection after this frame.
    SessionExpired,
    /// A lock contender of this session now holds its lock (its predecessors are gone).
    LockGranted {
        path: String,
        token: Zxid,
    },
    /// A persistent watch of this connection matched a change (one message per change,
    /// however many of the connection's persistent watches match it). Sent before the reply
    /// to any request that could observe the change, like [`ServerMessage::Event`].
    /// (Appended, so that the variants above keep their encoding.)
    Streamed(StreamEvent),
}
