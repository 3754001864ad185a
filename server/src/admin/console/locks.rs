//! `GET /api/locks`: every lock directory with its queue in order, holders first as the
//! queue's rule has it ([`ward_proto::lock::holders`]): for each contender its session, the
//! session's owner name and client, the context data it queued with, its fencing token, and
//! how long it has held or waited.
//!
//! A lock directory is a node with lock contenders among its children, found as `/metrics`
//! finds them: contenders are ephemeral, so the ephemeral index is walked, not the tree.

use super::clients::{Clients, Who};
use super::http::{json, Data, Query, Reply};
use super::Console;
use crate::tree::DataTree;
use crate::Server;
use serde::Serialize;
use std::collections::BTreeSet;
use ward_proto::{lock, path};

/// Lock directories per answer unless `limit` asks otherwise, and at most.
const PAGE: usize = 200;
const MAX_PAGE: usize = 5_000;
/// Contenders listed per directory (the counts cover all of them).
const MAX_QUEUE: usize = 100;
/// Bytes of each contender's context data shown.
const MAX_DATA: usize = 256;

#[derive(Serialize)]
struct Answer {
    now_ms: i64,
    /// Lock directories under the prefix.
    total: usize,
    directories: Vec<Directory>,
    /// Pass as `after` for the next page; `None`: this was the last.
    next: Option<String>,
}

#[derive(Serialize)]
struct Directory {
    path: String,
    /// `exclusive`, `read/write`, `semaphore` or `election` (Curator's leader latch; Ward's
    /// and kazoo's elections are exclusive locks whose holder leads).
    kind: &'static str,
    permits: Option<u32>,
    holders: usize,
    waiters: usize,
    /// The first [`MAX_QUEUE`] contenders in queue order.
    queue: Vec<Contender>,
}

#[derive(Serialize)]
struct Contender {
    name: String,
    /// `exclusive`, `shared` or `permit`.
    wants: &'static str,
    holds: bool,
    #[serde(flatten)]
    who: Who,
    data: Data,
    /// The fencing token a holder presents (the node's mzxid).
    token: u64,
    /// When it joined the queue (ms since the epoch).
    queued_ms: i64,
    /// When it began to hold, as this server saw it (see docs/console.md, "The API").
    held_since_ms: Option<i64>,
}

/// Lock directories with contenders, sorted by path.
pub(crate) fn directories(tree: &DataTree) -> BTreeSet<&str> {
    tree.all_ephemerals().filter(|p| *p != "/" && lock::sequence(path::name(p)).is_some()).map(path::parent).collect()
}

/// `dir`'s contenders in queue order, each with whether it holds.
pub(crate) fn queue<'a>(tree: &'a DataTree, dir: &str) -> Vec<(&'a str, bool)> {
    let Some(node) = tree.get(dir) else { return Vec::new() };
    let queue = lock::queue(node.children.iter());
    let flags = lock::holders(&queue, crate::lock::permits(tree, dir));
    queue.into_iter().zip(flags).collect()
}

pub(crate) fn answer(server: &Server, console: &Console, query: &Query) -> Reply {
    let limit = match query.limit("limit", PAGE, MAX_PAGE) {
        Ok(limit) => limit,
        Err(refusal) => return refusal.reply(),
    };
    let prefix = query.get("prefix").unwrap_or("/");
    let after = query.get("after").filter(|a| !a.is_empty());
    let clients = Clients::new(server);
    let held_since = console.held_since_map();
    // A holder the sampler has not seen yet began to hold after its last look.
    let looked_ms = console.looked_ms();
    let answer = server.core.read(|state| {
        let tree = state.tree();
        let all = directories(tree);
        let matching: Vec<&str> = all.into_iter().filter(|d| d.starts_with(prefix)).collect();
        let start = after.map_or(0, |a| matching.partition_point(|d| *d <= a));
        let page = &matching[start..(start + limit).min(matching.len())];
        let directories = page
            .iter()
            .map(|dir| {
                let queue = queue(tree, dir);
                let permits = tree.get(dir).and_then(|n| lock::parse_semaphore_header(n.data()));
                let listed = queue.iter().take(MAX_QUEUE).filter_map(|(name, holds)| {
                    let path = path::join(dir, name);
                    let node = tree.get(&path)?;
                    let session = node.ephemeral_owner()?;
                    Some(Contender {
                        name: name.to_string(),
                        wants: lock::contender_kind(name),
                        holds: *holds,
                        who: clients.who(state, session),
                        data: Data::of(node.data(), MAX_DATA),
                        token: node.mzxid,
                        queued_ms: node.ctime,
                        held_since_ms: holds
                            .then(|| held_since.get(path.as_str()).copied().unwrap_or(node.ctime.max(looked_ms))),
                    })
                });
                let queue_list: Vec<Contender> = listed.collect();
                let holders = queue.iter().filter(|(_, h)| *h).count();
                Directory {
                    path: dir.to_string(),
                    kind: kind(permits, &queue),
                    permits,
                    holders,
                    waiters: queue.len() - holders,
                    queue: queue_list,
                }
            })
            .collect();
        let next = (start + limit < matching.len()).then(|| page.last().map(|d| d.to_string())).flatten();
        Answer { now_ms: crate::now_ms(), total: matching.len(), directories, next }
    });
    json(&answer)
}

fn kind(permits: Option<u32>, queue: &[(&str, bool)]) -> &'static str {
    if permits.is_some() {
        "semaphore"
    } else if queue.iter().any(|(name, _)| lock::contender_kind(name) == "shared") {
        "read/write"
    } else if queue.iter().any(|(name, _)| name.contains("-latch-")) {
        "election"
    } else {
        "exclusive"
    }
}
