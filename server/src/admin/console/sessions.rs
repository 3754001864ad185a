//! `GET /api/sessions`: every session, with what this server knows of it (client address,
//! protocol and last heard, where it is connected here) and what it owns (ephemerals,
//! watches, locks held and waited for). `GET /api/session?id=ID`: one session with its
//! ephemeral nodes listed (also as the `detail` of the list, with `detail=ID`: one request,
//! and no 404 for a session that has just ended).

use super::clients::{parse_session, Clients};
use super::http::{error, json, Query, Reply};
use crate::state::StateMachine;
use crate::Server;
use hyper::StatusCode;
use serde::Serialize;
use ward_proto::{lock, path, SessionId};

const PAGE: usize = 500;
const MAX_PAGE: usize = 10_000;
/// Ephemeral nodes listed for one session (the count covers all of them).
const MAX_EPHEMERALS: usize = 1_000;

#[derive(Serialize)]
struct Answer {
    total: usize,
    sessions: Vec<Session>,
    next: Option<String>,
    /// The session `detail` asked for, `None` if it does not exist (or none was asked for).
    detail: Option<Detail>,
}

#[derive(Serialize)]
struct Session {
    id: String,
    owner: Option<String>,
    protocol: Option<&'static str>,
    client: Option<String>,
    timeout_ms: u32,
    /// Since this server last heard from the session (`None`: not tracked here).
    heard_ms_ago: Option<u64>,
    /// Its client is connected to this server.
    connected: bool,
    /// An expiry has been proposed.
    expiring: bool,
    ephemerals: usize,
    /// Watches armed through its connection to this server.
    watches: usize,
    locks_held: usize,
    locks_waiting: usize,
}

#[derive(Serialize)]
struct Detail {
    #[serde(flatten)]
    session: Session,
    /// Its first [`MAX_EPHEMERALS`] ephemeral nodes, sorted.
    ephemeral_paths: Vec<Ephemeral>,
}

#[derive(Serialize)]
struct Ephemeral {
    path: String,
    /// `holds`, `waits`, or `None` for a node that is no lock contender.
    lock: Option<&'static str>,
}

pub(crate) fn list(server: &Server, query: &Query) -> Reply {
    let limit = match query.limit("limit", PAGE, MAX_PAGE) {
        Ok(limit) => limit,
        Err(refusal) => return refusal.reply(),
    };
    let after = query.get("after").and_then(parse_session);
    let wanted = query.get("detail").and_then(parse_session);
    let clients = Clients::new(server);
    let answer = server.core.read(|state| {
        let ids: Vec<SessionId> = state.sessions().map(|(id, _)| id).collect();
        let start = after.map_or(0, |a| ids.partition_point(|id| *id <= a));
        let page = &ids[start..(start + limit).min(ids.len())];
        let sessions = page.iter().filter_map(|id| session(server, &clients, state, *id)).collect();
        let next = (start + limit < ids.len()).then(|| page.last().map(|id| id.to_string())).flatten();
        let detail = wanted.and_then(|id| detail(server, &clients, state, id));
        Answer { total: ids.len(), sessions, next, detail }
    });
    json(&answer)
}

pub(crate) fn one(server: &Server, query: &Query) -> Reply {
    let Some(id) = query.get("id").and_then(parse_session) else {
        return error(StatusCode::BAD_REQUEST, "id must be a session id (0x... or decimal)");
    };
    let clients = Clients::new(server);
    match server.core.read(|state| detail(server, &clients, state, id)) {
        Some(detail) => json(&detail),
        None => error(StatusCode::NOT_FOUND, &format!("no session {id}")),
    }
}

fn detail(server: &Server, clients: &Clients<'_>, state: &StateMachine, id: SessionId) -> Option<Detail> {
    let session = session(server, clients, state, id)?;
    let tree = state.tree();
    let ephemeral_paths = tree
        .ephemerals(id)
        .take(MAX_EPHEMERALS)
        .map(|p| Ephemeral {
            path: p.to_string(),
            lock: lock::sequence(path::name(p)).map(|_| match crate::lock::is_holder(tree, p) {
                true => "holds",
                false => "waits",
            }),
        })
        .collect();
    Some(Detail { session, ephemeral_paths })
}

fn session(server: &Server, clients: &Clients<'_>, state: &StateMachine, id: SessionId) -> Option<Session> {
    let record = state.session(id)?;
    let tree = state.tree();
    let (mut ephemerals, mut held, mut waiting) = (0, 0, 0);
    for p in tree.ephemerals(id) {
        ephemerals += 1;
        if lock::sequence(path::name(p)).is_some() {
            match crate::lock::is_holder(tree, p) {
                true => held += 1,
                false => waiting += 1,
            }
        }
    }
    let connection = clients.connection(id);
    Some(Session {
        id: id.to_string(),
        owner: record.owner.clone(),
        protocol: connection.map(|(_, p)| p),
        client: connection.map(|(a, _)| a.to_string()),
        timeout_ms: record.timeout_ms,
        heard_ms_ago: clients.heard_ms_ago(id),
        connected: connection.is_some(),
        expiring: clients.expiring(id),
        ephemerals,
        watches: clients.conn_id(id).map_or(0, |conn| server.local.watches.count_of(conn)),
        locks_held: held,
        locks_waiting: waiting,
    })
}
