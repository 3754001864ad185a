//! The first exchange on a connection: version check, then a new or resumed session.

use super::connection::{Reader, Writer};
use crate::command::{Command, CommandOp, Outcome};
use crate::conn::{Attached, ConnId, OutboundTx};
use crate::{now_ms, Server};
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::time::Duration;
use ward_proto::{
    ClientMessage, CodecError, ErrorCode, HelloPrefix, ServerMessage, SessionId, SessionSecret, Welcome, Zxid, MAGIC,
    PROTOCOL_VERSION,
};

/// Reads the hello and answers it. Returns the session now bound to this connection, or
/// `None` when the connection must close (the reason is logged and, where the peer can
/// understand it, sent as `Refused`).
pub(crate) async fn run(
    server: &Server,
    reader: &mut Reader,
    writer: &mut Writer,
    peer: SocketAddr,
    conn: ConnId,
    tx: &OutboundTx,
) -> Option<Attached> {
    let hello = match reader.next().await? {
        Ok(ClientMessage::Hello(hello)) => hello,
        Ok(ClientMessage::Request { .. }) => {
            return refuse(writer, peer, ErrorCode::BadArguments, "the first frame must be a hello".into()).await;
        }
        Err(CodecError::Malformed { frame, error }) => {
            let prefix = HelloPrefix::peek(&frame).filter(|p| p.tag == 0 && p.magic == MAGIC);
            if let Some(prefix) = prefix.filter(|p| p.version != PROTOCOL_VERSION) {
                return refuse_version(writer, peer, prefix.version).await;
            }
            tracing::warn!(%peer, %error, "closing connection: malformed hello");
            return None;
        }
        Err(error) => {
            tracing::warn!(%peer, %error, "closing connection: bad hello frame");
            return None;
        }
    };
    if hello.magic != MAGIC || hello.version != PROTOCOL_VERSION {
        return refuse_version(writer, peer, hello.version).await;
    }
    let last_zxid = server.core.read(|s| s.last_zxid());
    let known = hello.resume.is_some_and(|(id, _)| server.core.read(|s| s.session(id).is_some()));
    // An unknown session is expired whatever this server's zxid; a known one must not be
    // shown state older than what its client has already seen.
    if known && hello.last_zxid_seen > last_zxid {
        let why = format!("client has seen zxid {} but this server is at {last_zxid}", hello.last_zxid_seen);
        return refuse(writer, peer, ErrorCode::Unavailable, why).await;
    }
    let welcome = match hello.resume {
        Some((session, secret)) => resume(server, session, secret, conn, tx).await,
        None => create(server, hello.timeout_ms, hello.owner.clone(), conn, tx).await,
    };
    match welcome {
        Ok((welcome, epoch)) => {
            let session = welcome.session_id;
            tracing::debug!(%peer, %session, resumed = welcome.resumed, "session attached");
            writer.send(ServerMessage::Welcome(welcome)).await.ok()?;
            Some(Attached { session, epoch })
        }
        Err((code, why)) => refuse(writer, peer, code, why).await,
    }
}

/// Resumes `session` on connection `conn` if `secret` is its secret and it is not expiring.
/// Shared with the ZooKeeper listener.
///
/// The welcome is sent only once this server's contact with the leader is confirmed after
/// the hello arrived, as a pong is (R3): a client may count its session alive for a
/// timeout from when it sent the hello.
///
/// In an ensemble the attachment is logged first (`CommandOp::Attach`), and its zxid is
/// the epoch returned with the welcome: a write this session sent through an earlier
/// connection, here or at another member, that reaches the log after it is refused.
pub(crate) async fn resume(
    server: &Server,
    session: SessionId,
    secret: SessionSecret,
    conn: ConnId,
    tx: &OutboundTx,
) -> Result<(Welcome, Zxid), (ErrorCode, String)> {
    refuse_out_of_contact(server)?;
    let look = || {
        server.core.read(|s| {
            (s.session(session).map(|r| (r.secret == secret, r.timeout_ms)), s.last_zxid(), s.attached_at(session))
        })
    };
    let (mut known, last_zxid, mut attached_at) = look();
    // A session's id is the zxid that created it. A member of an ensemble that has not
    // applied that far (restarted and still replaying, lagging, or cut off) cannot tell a
    // session it has not seen yet from one that never existed here (another history of the
    // ensemble, a restored backup, a made-up id). Its client's earlier welcome came after
    // the creation committed, so once this member has applied everything committed before
    // now (a read index), an id still missing is expired for good.
    if known.is_none() && session.0 > last_zxid && server.replication.replicated() {
        match tokio::time::timeout(CATCH_UP_WAIT, server.replication.barrier()).await {
            Ok(Ok(())) => (known, _, attached_at) = look(),
            Ok(Err(why)) => return Err(newer_than_here(session, last_zxid, &why.to_string())),
            Err(_) => return Err(newer_than_here(session, last_zxid, "no answer in time")),
        }
    }
    match known {
        Some((true, timeout_ms)) if server.local.sessions.attach(session, conn, tx.clone()) => {
            let attached = async {
                server.replication.confirm_contact().await.map_err(|r| (ErrorCode::Unavailable, r.to_string()))?;
                if !server.local.sessions.may_confirm(session) {
                    return Err((ErrorCode::Unavailable, format!("session {session} may be expiring; try another")));
                }
                if server.replication.replicated() {
                    log_attachment(server, session, attached_at).await
                } else {
                    Ok(0)
                }
            };
            match attached.await {
                Ok(epoch) => {
                    let welcome =
                        Welcome { version: PROTOCOL_VERSION, session_id: session, secret, timeout_ms, resumed: true };
                    Ok((welcome, epoch))
                }
                Err(refused) => {
                    // This handshake's connection closes: it must not stay the session's.
                    server.local.sessions.detach(session, conn);
                    Err(refused)
                }
            }
        }
        // Known and live in the state, but this member proposed its expiry: only the expiry
        // applied decides it, and a member of an ensemble may have proposed it while it
        // led and then lost the lead (or been cut off), while the leader keeps the session.
        Some((true, _)) if server.replication.replicated() => Err((
            ErrorCode::Unavailable,
            format!("session {session} may be expiring; this member cannot tell yet: try another"),
        )),
        // A wrong secret gets the same answer as an unknown session: no probing for ids.
        _ => Err((ErrorCode::SessionExpired, format!("session {session} has expired or is unknown"))),
    }
}

/// How long a handshake waits for its member to catch up with the leader before it can
/// call an unknown session expired: well within the connect timeouts of ZooKeeper clients
/// (kazoo's and Curator's are seconds), which then try another member.
const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

/// The answer of a member that could not catch up with the leader to a session newer than
/// its state: calling it expired would end, for good, a session the leader may keep alive.
fn newer_than_here(session: SessionId, last_zxid: Zxid, why: &str) -> (ErrorCode, String) {
    let reason = format!(
        "session {session} is newer than this member's state (zxid {last_zxid}), which could not catch up \
         with the leader ({why}); try another"
    );
    (ErrorCode::Unavailable, reason)
}

/// Logs that `session` attached here, unless it attached anywhere since `seen` (its
/// attachment when this handshake looked); returns the zxid of that entry.
async fn log_attachment(server: &Server, session: SessionId, seen: Zxid) -> Result<Zxid, (ErrorCode, String)> {
    let cmd = Command { time_ms: now_ms(), session, xid: 0, op: CommandOp::AttachIf { expected: seen } };
    match server.replication.submit(cmd).await {
        Ok(applied) => match applied.outcome {
            Outcome::Attached => Ok(applied.zxid),
            // Another handshake attached it first, or this member had not yet applied the
            // latest attachment: the client tries again, and finds it applied.
            Outcome::Reply(Err(ErrorCode::SessionMoved)) => Err((
                ErrorCode::Unavailable,
                format!("session {session} attached elsewhere while this handshake ran; try again"),
            )),
            _ => Err((ErrorCode::SessionExpired, format!("session {session} ended while it attached"))),
        },
        Err(rejected) => Err((ErrorCode::Unavailable, format!("could not log the session's attachment: {rejected}"))),
    }
}

/// R6: a member out of contact with a leader cannot keep sessions alive; its clients must
/// go to one that can.
fn refuse_out_of_contact(server: &Server) -> Result<(), (ErrorCode, String)> {
    if server.replication.in_contact() {
        Ok(())
    } else {
        Err((ErrorCode::Unavailable, "this member is out of contact with a leader; try another".into()))
    }
}

/// Orders a new session with a fresh random secret and binds it to connection `conn`. Shared
/// with the ZooKeeper listener.
pub(crate) async fn create(
    server: &Server,
    requested_timeout_ms: u32,
    owner: Option<String>,
    conn: ConnId,
    tx: &OutboundTx,
) -> Result<(Welcome, Zxid), (ErrorCode, String)> {
    refuse_out_of_contact(server)?;
    let mut secret = [0u8; 16];
    getrandom::getrandom(&mut secret)
        .map_err(|e| (ErrorCode::Unavailable, format!("no randomness for a secret: {e}")))?;
    let secret = SessionSecret(secret);
    let timeout_ms = server.config.negotiate_timeout(requested_timeout_ms);
    let cmd = Command {
        time_ms: now_ms(),
        session: SessionId(0),
        xid: 0,
        op: CommandOp::CreateSession { timeout_ms, secret, owner },
    };
    let unavailable = |why: &str| (ErrorCode::Unavailable, why.to_string());
    let applied = server.replication.submit(cmd).await.map_err(|_| unavailable("could not order the new session"))?;
    let Outcome::SessionCreated(session) = applied.outcome else {
        return Err(unavailable("session creation had an unexpected outcome"));
    };
    if !server.local.sessions.attach(session, conn, tx.clone()) {
        return Err((ErrorCode::SessionExpired, "session ended before it was attached".into()));
    }
    // A session's first attachment is its creation, whose zxid is its id.
    let epoch = if server.replication.replicated() { session.0 } else { 0 };
    Ok((Welcome { version: PROTOCOL_VERSION, session_id: session, secret, timeout_ms, resumed: false }, epoch))
}

async fn refuse_version(writer: &mut Writer, peer: SocketAddr, version: u32) -> Option<Attached> {
    let why = format!("client speaks protocol version {version}, this server speaks {PROTOCOL_VERSION}");
    refuse(writer, peer, ErrorCode::ProtocolVersion, why).await
}

async fn refuse(writer: &mut Writer, peer: SocketAddr, code: ErrorCode, reason: String) -> Option<Attached> {
    tracing::info!(%peer, ?code, %reason, "refusing connection");
    let _ = writer.send(ServerMessage::Refused { code, reason }).await;
    None
}
