//! `GET /api/tree?path=P`: one node, read lazily so a large tree costs what is looked at:
//! its data (text and hex), its full stat, its ACL, its ephemeral owner, and one page of its
//! children (`after`, `limit`), sorted by name.

use super::clients::{Clients, Who};
use super::http::{error, json, Data, Query, Reply};
use crate::tree::NodeKind;
use crate::Server;
use hyper::StatusCode;
use serde::Serialize;
use ward_proto::acl::{perm_string, Acl};
use ward_proto::Stat;

const PAGE: usize = 200;
const MAX_PAGE: usize = 10_000;
/// Bytes of data shown (a node may hold a megabyte).
const MAX_DATA: usize = 64 * 1024;

#[derive(Serialize)]
struct Node {
    path: String,
    /// `persistent`, `ephemeral`, `container` or `ttl`.
    kind: &'static str,
    ttl_ms: Option<u64>,
    stat: StatJson,
    data: Data,
    /// ZooKeeper's ACL entries as `scheme:id:perms`.
    acl: Vec<String>,
    ephemeral_owner: Option<Who>,
    children: Children,
}

/// ZooKeeper's stat, under its own field names.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatJson {
    czxid: u64,
    mzxid: u64,
    pzxid: u64,
    ctime: i64,
    mtime: i64,
    version: i32,
    cversion: i32,
    aversion: i32,
    ephemeral_owner: String,
    data_length: u32,
    num_children: u32,
}

impl From<Stat> for StatJson {
    fn from(s: Stat) -> StatJson {
        StatJson {
            czxid: s.czxid,
            mzxid: s.mzxid,
            pzxid: s.pzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: format!("{:#x}", s.ephemeral_owner.map_or(0, |o| o.0)),
            data_length: s.data_length,
            num_children: s.num_children,
        }
    }
}

#[derive(Serialize)]
struct Children {
    total: usize,
    names: Vec<String>,
    /// Pass as `after` for the next page; `None`: this was the last.
    next: Option<String>,
}

pub(crate) fn answer(server: &Server, query: &Query) -> Reply {
    let limit = match query.limit("limit", PAGE, MAX_PAGE) {
        Ok(limit) => limit,
        Err(refusal) => return refusal.reply(),
    };
    let path = query.get("path").unwrap_or("/");
    if ward_proto::path::validate(path).is_err() {
        return error(StatusCode::BAD_REQUEST, &format!("{path:?} is not a valid path"));
    }
    let after = query.get("after").filter(|a| !a.is_empty());
    let clients = Clients::new(server);
    let node = server.core.read(|state| {
        let node = state.tree().get(path)?;
        let (kind, ttl_ms) = match node.kind() {
            NodeKind::Persistent => ("persistent", None),
            NodeKind::Ephemeral(_) => ("ephemeral", None),
            NodeKind::Container => ("container", None),
            NodeKind::Ttl(ttl) => ("ttl", Some(ttl)),
            // A lock holder whose session ended, kept for its lock-delay.
            NodeKind::LockDelay(_) => ("lock-delay", None),
        };
        let names: Vec<String> = node.children.iter_after(after).take(limit).map(String::from).collect();
        let more = names.last().is_some_and(|last| node.children.iter_after(Some(last)).next().is_some());
        let next = more.then(|| names.last().cloned()).flatten();
        Some(Node {
            path: path.to_string(),
            kind,
            ttl_ms,
            stat: state.tree().stat(node).into(),
            data: Data::of(node.data(), MAX_DATA),
            acl: acl(state.tree().acl(node)),
            ephemeral_owner: node.ephemeral_owner().map(|s| clients.who(state, s)),
            children: Children { total: node.children.len(), names, next },
        })
    });
    match node {
        Some(node) => json(&node),
        None => error(StatusCode::NOT_FOUND, &format!("no node at {path}")),
    }
}

/// A node's ACL in zkCli's notation, digests without their hash: whoever reaches the admin
/// listener is not thereby an ADMIN of the node (getACL masks them the same way).
fn acl(acl: &[Acl]) -> Vec<String> {
    acl.iter().map(|entry| format!("{}:{}", entry.id.redacted(), perm_string(entry.perms))).collect()
}
