//! The console's actions, for an authenticated admin only ([`super::token`]): expire a
//! session (`POST /api/sessions/expire?id=ID`), delete a node
//! (`POST /api/tree/delete?path=P[&version=V]`). Each goes through the command log like
//! any other change, so it works the same on every member of an ensemble (a follower
//! forwards it to the leader), and each is logged with who asked, from where, and how it
//! ended.

use super::http::{error, json, Query, Refusal, Reply};
use super::token::{AdminToken, Verdict};
use crate::command::{Command, CommandOp, Outcome};
use crate::replication::Rejected;
use crate::Server;
use hyper::StatusCode;
use serde::Serialize;
use std::net::SocketAddr;
use ward_proto::{ErrorCode, Request, SessionId, SessionSecret};

/// Who asked for an action: the credential that let them, and their address.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Actor {
    pub peer: SocketAddr,
}

#[derive(Serialize)]
struct Done {
    done: &'static str,
    target: String,
    zxid: u64,
}

/// Judges the request's credentials: `Ok` for the admin, else why not.
pub(crate) fn authorize(
    server: &Server,
    authorization: Option<&[u8]>,
    peer: SocketAddr,
    action: &str,
) -> Result<Actor, Refusal> {
    let verdict = AdminToken::judge(server.config.admin_token.as_ref(), authorization);
    if verdict == Verdict::Admin {
        return Ok(Actor { peer });
    }
    tracing::warn!(%peer, action, ?verdict, "console action refused: no admin credentials");
    Err(match (verdict, server.config.admin_token.is_some()) {
        (_, false) => Refusal::new(
            StatusCode::UNAUTHORIZED,
            "actions are off on this server: start it with --admin-token-file to allow them",
        ),
        (Verdict::Wrong, true) => Refusal::new(StatusCode::FORBIDDEN, "that is not the admin token"),
        _ => Refusal::new(StatusCode::UNAUTHORIZED, "actions need the admin token (Authorization: Bearer TOKEN)"),
    })
}

/// Expires a session as its heartbeats stopping would: its ephemerals go, its locks pass to
/// their next waiters, its client is told its session expired.
pub(crate) async fn expire(server: &Server, actor: Actor, query: &Query) -> Reply {
    let Some(session) = query.get("id").and_then(super::clients::parse_session) else {
        return error(StatusCode::BAD_REQUEST, "id must be a session id (0x... or decimal)");
    };
    tracing::info!(peer = %actor.peer, credential = "admin token", %session, "console: expiring a session");
    let cmd = Command { time_ms: crate::now_ms(), session, xid: 0, op: CommandOp::ExpireSession };
    let done = server.replication.submit(cmd).await;
    let reply = match done {
        Ok(applied) => match applied.outcome {
            Outcome::Reply(Ok(_)) => json(&Done { done: "expired", target: session.to_string(), zxid: applied.zxid }),
            Outcome::Reply(Err(ErrorCode::SessionExpired)) => {
                error(StatusCode::NOT_FOUND, &format!("no session {session}: it has ended already"))
            }
            other => error(StatusCode::INTERNAL_SERVER_ERROR, &format!("unexpected outcome {other:?}")),
        },
        Err(rejected) => refused(&rejected),
    };
    tracing::info!(peer = %actor.peer, %session, status = reply.status().as_u16(), "console: session expiry done");
    reply
}

/// Deletes one node (not its children: a node with children is refused, as any delete is).
/// The delete runs in a session of its own, opened and closed for it, as a client's would.
pub(crate) async fn delete(server: &Server, actor: Actor, query: &Query) -> Reply {
    let Some(path) = query.get("path").map(str::to_string) else {
        return error(StatusCode::BAD_REQUEST, "path is missing");
    };
    let version = match query.get("version").filter(|v| !v.is_empty()).map(str::parse::<i32>) {
        None => None,
        Some(Ok(v)) if v >= 0 => Some(v),
        Some(Ok(_)) => None,
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "version must be a number"),
    };
    let op = match crate::prep::prep(Request::Delete { path: path.clone(), version }, server.config.max_data_len) {
        Ok(op) => op,
        Err(_) => return error(StatusCode::BAD_REQUEST, &format!("{path:?} cannot be deleted (not a valid path)")),
    };
    tracing::info!(peer = %actor.peer, credential = "admin token", %path, ?version, "console: deleting a node");
    let reply = match in_session(server, op).await {
        Ok((zxid, Ok(()))) => json(&Done { done: "deleted", target: path.clone(), zxid }),
        Ok((_, Err(code))) => {
            let status = match code {
                ErrorCode::NoNode => StatusCode::NOT_FOUND,
                ErrorCode::NotEmpty | ErrorCode::BadVersion => StatusCode::CONFLICT,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            error(status, &format!("cannot delete {path}: {code}"))
        }
        Err(reply) => reply,
    };
    tracing::info!(peer = %actor.peer, %path, status = reply.status().as_u16(), "console: node deletion done");
    reply
}

/// Runs `op` in a fresh session that is closed afterwards: its zxid and its result.
async fn in_session(server: &Server, op: CommandOp) -> Result<(u64, Result<(), ErrorCode>), Reply> {
    let mut secret = [0u8; 16];
    getrandom::getrandom(&mut secret)
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, &format!("no randomness for a session secret: {e}")))?;
    let timeout_ms = server.config.negotiate_timeout(10_000);
    let open = CommandOp::CreateSession { timeout_ms, secret: SessionSecret(secret), owner: None };
    let command = |session, xid, op| Command { time_ms: crate::now_ms(), session, xid, op };
    let created = server.replication.submit(command(SessionId(0), 0, open)).await.map_err(|r| refused(&r))?;
    let Outcome::SessionCreated(session) = created.outcome else {
        return Err(error(StatusCode::INTERNAL_SERVER_ERROR, "the console's session was not created"));
    };
    let applied = server.replication.submit(command(session, 1, op)).await;
    // Closed whatever happened; left open, it would expire by itself within its timeout.
    if let Err(rejected) = server.replication.submit(command(session, 0, CommandOp::CloseSession)).await {
        tracing::warn!(%session, %rejected, "console: its session could not be closed; it will expire");
    }
    let applied = applied.map_err(|r| refused(&r))?;
    match applied.outcome {
        Outcome::Reply(Ok(_)) => Ok((applied.zxid, Ok(()))),
        Outcome::Reply(Err(code)) => Ok((applied.zxid, Err(code))),
        other => Err(error(StatusCode::INTERNAL_SERVER_ERROR, &format!("unexpected outcome {other:?}"))),
    }
}

fn refused(rejected: &Rejected) -> Reply {
    let status = match rejected {
        Rejected::NotApplied(_) | Rejected::Stopped => StatusCode::SERVICE_UNAVAILABLE,
        Rejected::Unknown(_) => StatusCode::GATEWAY_TIMEOUT,
    };
    error(status, &format!("the log did not take it: {rejected}"))
}
