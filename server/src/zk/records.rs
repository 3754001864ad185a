//! ZooKeeper's records as they appear on the wire (`zookeeper.jute`), and its numbers:
//! opcodes, error codes, event types and states.

use super::jute::{In, JuteError, Out};
use crate::metrics::Failure;
use ward_proto::{Acl, ErrorCode, EventKind, Id, SessionId, Stat, WatchEvent};

/// Opcodes (`ZooDefs.OpCode`).
pub(crate) mod op {
    pub(crate) const CREATE: i32 = 1;
    pub(crate) const DELETE: i32 = 2;
    pub(crate) const EXISTS: i32 = 3;
    pub(crate) const GET_DATA: i32 = 4;
    pub(crate) const SET_DATA: i32 = 5;
    pub(crate) const GET_ACL: i32 = 6;
    pub(crate) const SET_ACL: i32 = 7;
    pub(crate) const GET_CHILDREN: i32 = 8;
    pub(crate) const SYNC: i32 = 9;
    pub(crate) const PING: i32 = 11;
    pub(crate) const GET_CHILDREN2: i32 = 12;
    pub(crate) const CHECK: i32 = 13;
    pub(crate) const MULTI: i32 = 14;
    pub(crate) const CREATE2: i32 = 15;
    pub(crate) const RECONFIG: i32 = 16;
    pub(crate) const CHECK_WATCHES: i32 = 17;
    pub(crate) const REMOVE_WATCHES: i32 = 18;
    pub(crate) const CREATE_CONTAINER: i32 = 19;
    #[allow(dead_code)] // ZooKeeper's opcode, refused as unknown like any other
    pub(crate) const DELETE_CONTAINER: i32 = 20;
    pub(crate) const CREATE_TTL: i32 = 21;
    pub(crate) const MULTI_READ: i32 = 22;
    pub(crate) const AUTH: i32 = 100;
    pub(crate) const SET_WATCHES: i32 = 101;
    #[allow(dead_code)] // ZooKeeper's opcode, refused as unknown like any other
    pub(crate) const SASL: i32 = 102;
    pub(crate) const GET_EPHEMERALS: i32 = 103;
    pub(crate) const GET_ALL_CHILDREN_NUMBER: i32 = 104;
    pub(crate) const SET_WATCHES2: i32 = 105;
    pub(crate) const ADD_WATCH: i32 = 106;
    pub(crate) const WHO_AM_I: i32 = 107;
    pub(crate) const CLOSE_SESSION: i32 = -11;
    pub(crate) const ERROR: i32 = -1;
}

/// Error codes (`KeeperException.Code`).
pub(crate) mod err {
    pub(crate) const OK: i32 = 0;
    pub(crate) const SYSTEM_ERROR: i32 = -1;
    pub(crate) const RUNTIME_INCONSISTENCY: i32 = -2;
    pub(crate) const CONNECTION_LOSS: i32 = -4;
    pub(crate) const MARSHALLING_ERROR: i32 = -5;
    pub(crate) const UNIMPLEMENTED: i32 = -6;
    pub(crate) const BAD_ARGUMENTS: i32 = -8;
    pub(crate) const NO_NODE: i32 = -101;
    pub(crate) const NO_AUTH: i32 = -102;
    pub(crate) const BAD_VERSION: i32 = -103;
    pub(crate) const NO_CHILDREN_FOR_EPHEMERALS: i32 = -108;
    pub(crate) const NODE_EXISTS: i32 = -110;
    pub(crate) const NOT_EMPTY: i32 = -111;
    pub(crate) const SESSION_EXPIRED: i32 = -112;
    pub(crate) const INVALID_ACL: i32 = -114;
    pub(crate) const AUTH_FAILED: i32 = -115;
    pub(crate) const SESSION_MOVED: i32 = -118;
    pub(crate) const NO_WATCHER: i32 = -121;
    pub(crate) const RECONFIG_DISABLED: i32 = -123;
}

/// Reserved xids: notifications and ping replies.
pub(crate) const NOTIFICATION_XID: i32 = -1;

/// The xid of auth packets and their replies.
#[allow(dead_code)] // ZooKeeper's reserved xid, listed with the others
pub(crate) const AUTH_XID: i32 = -4;

/// `KeeperState.SyncConnected`: the state every notification of a live session carries.
pub(crate) const SYNC_CONNECTED: i32 = 3;

/// Ward's error for ZooKeeper's code. `RolledBack` has no single equivalent: multi replies
/// renumber it (see `reply.rs`).
pub(crate) fn code(e: ErrorCode) -> i32 {
    match e {
        ErrorCode::NoNode => err::NO_NODE,
        ErrorCode::NodeExists => err::NODE_EXISTS,
        ErrorCode::BadVersion => err::BAD_VERSION,
        ErrorCode::NotEmpty => err::NOT_EMPTY,
        ErrorCode::NoChildrenForEphemerals => err::NO_CHILDREN_FOR_EPHEMERALS,
        ErrorCode::SessionExpired => err::SESSION_EXPIRED,
        ErrorCode::BadArguments => err::BAD_ARGUMENTS,
        ErrorCode::Unimplemented => err::UNIMPLEMENTED,
        ErrorCode::RolledBack => err::RUNTIME_INCONSISTENCY,
        // A client retries a connection loss elsewhere, as it should for a log that could
        // not order the request.
        ErrorCode::Unavailable => err::CONNECTION_LOSS,
        ErrorCode::SessionMoved => err::SESSION_MOVED,
        ErrorCode::ReplyTooLarge => err::MARSHALLING_ERROR,
        ErrorCode::NoAuth => err::NO_AUTH,
        ErrorCode::InvalidAcl => err::INVALID_ACL,
        ErrorCode::AuthFailed => err::AUTH_FAILED,
        _ => err::SYSTEM_ERROR,
    }
}

/// ZooKeeper's error code as the request metrics name it (`None`: success). A connection
/// loss is what Ward's `Unavailable` becomes on this port.
pub(crate) fn failure(code: i32) -> Option<Failure> {
    Some(match code {
        err::OK => return None,
        err::NO_NODE => Failure::NoNode,
        err::NODE_EXISTS => Failure::NodeExists,
        err::BAD_VERSION => Failure::BadVersion,
        err::NOT_EMPTY => Failure::NotEmpty,
        err::NO_CHILDREN_FOR_EPHEMERALS => Failure::NoChildrenForEphemerals,
        err::SESSION_EXPIRED => Failure::SessionExpired,
        err::BAD_ARGUMENTS => Failure::BadArguments,
        err::UNIMPLEMENTED => Failure::Unimplemented,
        err::CONNECTION_LOSS => Failure::Unavailable,
        err::INVALID_ACL => Failure::InvalidAcl,
        err::NO_AUTH => Failure::NoAuth,
        err::AUTH_FAILED => Failure::AuthFailed,
        err::NO_WATCHER => Failure::NoWatcher,
        err::RECONFIG_DISABLED => Failure::ReconfigDisabled,
        err::SYSTEM_ERROR => Failure::SystemError,
        _ => Failure::Other,
    })
}

/// `Stat`, in jute field order.
pub(crate) fn stat(out: &mut Out, s: &Stat) {
    out.long(zxid(s.czxid)).long(zxid(s.mzxid)).long(s.ctime).long(s.mtime);
    out.int(s.version).int(s.cversion).int(s.aversion);
    out.long(s.ephemeral_owner.map_or(0, |id| zxid(id.0)));
    out.int(i32::try_from(s.data_length).unwrap_or(i32::MAX)).int(i32::try_from(s.num_children).unwrap_or(i32::MAX));
    out.long(zxid(s.pzxid));
}

/// Zxids and session ids are longs in ZooKeeper; ours stay far below 2^63.
pub(crate) fn zxid(z: u64) -> i64 {
    i64::try_from(z).unwrap_or(i64::MAX)
}

/// The first frame of a connection.
#[derive(Debug)]
pub(crate) struct ConnectRequest {
    pub(crate) last_zxid_seen: i64,
    pub timeout_ms: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    /// Absent from old clients.
    pub read_only: bool,
}

impl ConnectRequest {
    pub(crate) fn decode(body: &[u8]) -> Result<Self, JuteError> {
        let mut r = In::new(body);
        let _protocol_version = r.int()?;
        let last_zxid_seen = r.long()?;
        let timeout_ms = r.int()?;
        let session_id = r.long()?;
        let passwd = r.buffer()?;
        let read_only = if r.remaining() > 0 { r.bool()? } else { false };
        Ok(ConnectRequest { last_zxid_seen, timeout_ms, session_id, passwd, read_only })
    }
}

/// The answer to a connect. A timeout of 0 tells the client its session expired.
pub(crate) fn connect_response(timeout_ms: u32, session: SessionId, passwd: &[u8]) -> Vec<u8> {
    let mut out = Out::default();
    out.int(0).int(i32::try_from(timeout_ms).unwrap_or(i32::MAX)).long(zxid(session.0)).buffer(passwd).bool(false);
    out.buf
}

/// `ReplyHeader`'s size: xid, zxid and error code.
pub(crate) const REPLY_HEADER_LEN: usize = 16;

/// `ReplyHeader`.
pub(crate) fn reply_header(out: &mut Out, xid: i32, zxid: i64, err: i32) {
    out.int(xid).long(zxid).int(err);
}

/// An `ACL` list: each entry its perms and `Id` (scheme, id).
pub(crate) fn acls(r: &mut In<'_>) -> Result<Vec<Acl>, JuteError> {
    r.vector(|r| {
        let perms = r.int()?;
        let (scheme, id) = (r.string()?, r.string()?);
        Ok(Acl { perms, id: Id { scheme, id } })
    })
}

/// Writes an `ACL` list.
pub(crate) fn write_acls(out: &mut Out, acl: &[Acl]) {
    out.int(i32::try_from(acl.len()).unwrap_or(i32::MAX));
    for entry in acl {
        out.int(entry.perms).string(&entry.id.scheme).string(&entry.id.id);
    }
}

pub(crate) fn event_type(kind: EventKind) -> i32 {
    match kind {
        EventKind::NodeCreated => 1,
        EventKind::NodeDeleted => 2,
        EventKind::NodeDataChanged => 3,
        EventKind::NodeChildrenChanged => 4,
    }
}

/// A notification: header with xid -1 (ZooKeeper 3.8 sends zxid -1 there too), then
/// `WatcherEvent`.
pub(crate) fn notification(event: &WatchEvent) -> Vec<u8> {
    let mut out = Out::default();
    reply_header(&mut out, NOTIFICATION_XID, -1, err::OK);
    out.int(event_type(event.kind)).int(SYNC_CONNECTED).string(&event.path);
    out.buf
}

/// `MultiHeader`: each op of a multi request or response is preceded by one; the list ends
/// with `{-1, true, -1}`.
pub(crate) fn multi_header(out: &mut Out, op: i32, done: bool, err: i32) {
    out.int(op).bool(done).int(err);
}
