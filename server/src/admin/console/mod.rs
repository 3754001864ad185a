//! The built-in web console: a page served by the admin listener at `/`, from assets
//! embedded in the binary, and the JSON API under `/api/` that feeds it (and scripts).
//! docs/console.md documents both.
//!
//! Reads need no credentials, as `/metrics` needs none (the admin listener binds to
//! 127.0.0.1 unless told otherwise); actions need the admin token.
//!
//! # Layout
//! * [`assets`]: the page, its scripts and styles, embedded at build time.
//! * [`http`]: query strings, JSON answers and refusals.
//! * [`token`]: the admin token and how a request's credentials are judged.
//! * [`clients`]: who a session is (owner, client address, protocol, last heard).
//! * [`locks`], [`tree`], [`sessions`], [`ensemble`]: the read API.
//! * [`samples`]: the charts' ring buffer and the arithmetic of a sample;
//!   [`sampler`]: the task that fills it each second.
//! * [`actions`]: expire a session, delete a node.

pub(crate) mod actions;
pub(crate) mod assets;
pub(crate) mod clients;
pub(crate) mod ensemble;
pub(crate) mod http;
pub(crate) mod locks;
pub(crate) mod sampler;
pub(crate) mod samples;
pub(crate) mod sessions;
pub mod token;
pub(crate) mod tree;

pub use token::AdminToken;

use crate::Server;
use ensemble::LeaderChange;
use http::{error, json, Query, Reply};
use hyper::header::AUTHORIZATION;
use hyper::{Method, Request, StatusCode};
use samples::{Ring, Sample};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Leader changes remembered.
const LEADER_CHANGES: usize = 100;

/// What the console keeps between requests, filled by the [`sampler`]. Std mutexes: each is
/// held for a copy or a push, never across an await.
#[derive(Default)]
pub(crate) struct Console {
    samples: Mutex<Ring>,
    leaders: Mutex<VecDeque<LeaderChange>>,
    /// Each holding contender's path, and since when it holds (ms since the epoch).
    holding: Mutex<HashMap<Box<str>, i64>>,
    /// When the sampler last noted the holders (ms since the epoch).
    looked_ms: AtomicI64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each update is a single push or replace: a panic cannot leave them half-done.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Console {
    pub(crate) fn push_sample(&self, sample: Sample) {
        lock(&self.samples).push(sample);
    }

    /// Records the leader seen now, if it is not the last one recorded.
    pub(crate) fn note_leader(&self, seen: LeaderChange) {
        let mut leaders = lock(&self.leaders);
        let same = leaders.back().is_some_and(|last| (last.term, last.leader) == (seen.term, seen.leader));
        if !same {
            if leaders.len() == LEADER_CHANGES {
                leaders.pop_front();
            }
            leaders.push_back(seen);
        }
    }

    pub(crate) fn leader_changes(&self) -> Vec<LeaderChange> {
        lock(&self.leaders).iter().cloned().collect()
    }

    pub(crate) fn holding(&self) -> MutexGuard<'_, HashMap<Box<str>, i64>> {
        lock(&self.holding)
    }

    pub(crate) fn looked_ms(&self) -> i64 {
        self.looked_ms.load(Ordering::Relaxed)
    }

    pub(crate) fn set_looked_ms(&self, ms: i64) {
        self.looked_ms.store(ms, Ordering::Relaxed);
    }

    /// A copy of when each holder began to hold.
    pub(crate) fn held_since_map(&self) -> HashMap<Box<str>, i64> {
        self.holding().clone()
    }
}

#[derive(Serialize)]
struct Charts {
    every_ms: u64,
    keep: usize,
    samples: Vec<Sample>,
}

/// The console's answer to `request`, or `None` when the path is none of its.
pub(crate) async fn respond<B>(
    server: &Server,
    console: &Console,
    peer: SocketAddr,
    request: &Request<B>,
) -> Option<Reply> {
    let path = request.uri().path();
    let query = Query::parse(request.uri().query());
    let method = request.method();
    if !path.starts_with("/api/") {
        return match method {
            &Method::GET | &Method::HEAD => assets::serve(path),
            _ => assets::serve(path).map(|_| error(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD")),
        };
    }
    let read = method == Method::GET || method == Method::HEAD;
    let reply = match (path, read) {
        ("/api/locks", true) => locks::answer(server, console, &query),
        ("/api/tree", true) => tree::answer(server, &query),
        ("/api/sessions", true) => sessions::list(server, &query),
        ("/api/session", true) => sessions::one(server, &query),
        ("/api/ensemble", true) => ensemble::answer(server, console).await,
        ("/api/charts", true) => {
            let since = query.get("since").and_then(|s| s.parse().ok()).unwrap_or(i64::MIN);
            let samples = lock(&console.samples).since(since);
            let every_ms = u64::try_from(sampler::EVERY.as_millis()).unwrap_or(1000);
            json(&Charts { every_ms, keep: samples::KEEP, samples })
        }
        ("/api/sessions/expire" | "/api/tree/delete", false) if method == Method::POST => {
            let authorization = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
            match actions::authorize(server, authorization, peer, path) {
                Err(refusal) => refusal.reply(),
                Ok(actor) if path == "/api/sessions/expire" => actions::expire(server, actor, &query).await,
                Ok(actor) => actions::delete(server, actor, &query).await,
            }
        }
        ("/api/sessions/expire" | "/api/tree/delete", true) => {
            error(StatusCode::METHOD_NOT_ALLOWED, "actions are POST requests")
        }
        (_, false) => error(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD, and POST for actions"),
        _ => error(StatusCode::NOT_FOUND, "no such API: see docs/console.md"),
    };
    Some(reply)
}
