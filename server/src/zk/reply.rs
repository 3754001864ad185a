//! Encoding what the shared writer sends on a ZooKeeper connection: replies (a
//! `ReplyHeader`, then the op's response record unless the error code is set) and
//! notifications.

use super::jute::Out;
use super::ops::Render;
use super::records::{code, err, failure, multi_header, notification, op, reply_header, stat};
use super::stats::ConnStats;
use crate::metrics::{Failure, Listener};
use crate::net::writer::Wire;
use crate::watch::Outbound;
use bytes::Bytes;
use std::sync::Arc;
use ward_proto::{ErrorCode, OpResult, Response, Zxid};

/// What the reader attaches to a request.
pub struct ZkTag {
    pub xid: i32,
    pub render: Render,
}

/// A read's answer: an error code, or the response record.
pub struct ZkAnswer {
    pub err: i32,
    pub body: Vec<u8>,
}

impl ZkAnswer {
    pub fn ok(body: Vec<u8>) -> Self {
        ZkAnswer { err: err::OK, body }
    }

    pub fn fail(err: i32) -> Self {
        ZkAnswer { err, body: Vec::new() }
    }
}

pub struct ZkWire {
    pub stats: Arc<ConnStats>,
}

impl ZkWire {
    fn reply(&self, xid: i32, zxid: Zxid, answer: ZkAnswer) -> Bytes {
        let mut out = Out::default();
        reply_header(&mut out, xid, super::records::zxid(zxid), answer.err);
        if answer.err == err::OK {
            out.buf.extend_from_slice(&answer.body);
        }
        self.stats.sent(xid, zxid);
        Bytes::from(out.buf)
    }
}

impl Wire for ZkWire {
    const LISTENER: Listener = Listener::ZooKeeper;
    type Tag = ZkTag;
    type Answer = ZkAnswer;
    type Msg = Bytes;

    fn outbound(&mut self, msg: Outbound) -> Option<Bytes> {
        match msg {
            Outbound::Event(event) => {
                self.stats.sent_event();
                Some(Bytes::from(notification(&event)))
            }
            // A ZooKeeper session never queues as a Ward lock attempt, so it is never granted
            // one; and an expired session is only told when it reconnects (ZooKeeper closes).
            Outbound::LockGranted { .. } | Outbound::Close(_) => None,
        }
    }

    fn read_reply(&mut self, tag: ZkTag, zxid: Zxid, answer: ZkAnswer) -> Bytes {
        self.reply(tag.xid, zxid, answer)
    }

    fn write_reply(&mut self, tag: ZkTag, zxid: Zxid, result: Result<Response, ErrorCode>) -> Bytes {
        self.reply(tag.xid, zxid, render(tag.render, result))
    }

    fn session_expired(&mut self) -> Option<Bytes> {
        None
    }

    fn read_failure(answer: &ZkAnswer) -> Option<Failure> {
        failure(answer.err)
    }

    fn write_failure(tag: &ZkTag, result: &Result<Response, ErrorCode>) -> Option<Failure> {
        match (&tag.render, Failure::of_write(result)) {
            // The check that stands in for an op refused before the log (see `ops::multi`):
            // the reply gives that op's own code.
            (Render::Multi { prefail: Some((_, code)), .. }, Some(Failure::StaleFence)) => failure(*code),
            (_, failed) => failed,
        }
    }
}

fn render(render: Render, result: Result<Response, ErrorCode>) -> ZkAnswer {
    let response = match result {
        Ok(response) => response,
        Err(e) => return ZkAnswer::fail(code(e)),
    };
    let mut out = Out::default();
    match (render, response) {
        (Render::Create { with_stat }, Response::Created { path, stat: s }) => {
            out.string(&path);
            if with_stat {
                stat(&mut out, &s);
            }
        }
        (Render::SetData, Response::DataSet(s)) => stat(&mut out, &s),
        (Render::Delete, Response::Deleted) | (Render::CloseSession, Response::Closed) => {}
        (Render::Check, Response::Multi(results)) => {
            if let Some(OpResult::Error(e)) = results.first() {
                return ZkAnswer::fail(code(*e));
            }
        }
        (Render::Multi { ops, prefail }, Response::Multi(results)) => multi(&mut out, &ops, prefail, &results),
        (render, response) => {
            tracing::error!(?render, ?response, "a write's outcome does not fit its request");
            return ZkAnswer::fail(err::SYSTEM_ERROR);
        }
    }
    ZkAnswer::ok(out.buf)
}

/// A multi's results. On failure ZooKeeper reports 0 for the ops before the failing one, its
/// code for that one, and RUNTIMEINCONSISTENCY for the ops after it.
fn multi(out: &mut Out, ops: &[i32], prefail: Option<(usize, i32)>, results: &[OpResult]) {
    let failed = results.iter().enumerate().find_map(|(i, r)| match r {
        OpResult::Error(ErrorCode::RolledBack) => None,
        OpResult::Error(e) => Some((i, code(*e))),
        _ => None,
    });
    // The always-failing check stands in for the op that failed before the log.
    let failed = match (failed, prefail) {
        (Some((i, _)), Some((at, c))) if i == at => Some((i, c)),
        (failed, _) => failed,
    };
    match failed {
        Some((at, c)) => {
            for i in 0..ops.len() {
                let e = match i.cmp(&at) {
                    std::cmp::Ordering::Less => err::OK,
                    std::cmp::Ordering::Equal => c,
                    std::cmp::Ordering::Greater => err::RUNTIME_INCONSISTENCY,
                };
                multi_header(out, op::ERROR, false, e);
                out.int(e);
            }
        }
        None => {
            for (code, result) in ops.iter().zip(results) {
                multi_header(out, *code, false, err::OK);
                match result {
                    OpResult::Created { path, stat: s } => {
                        out.string(path);
                        if *code != op::CREATE {
                            stat(out, s);
                        }
                    }
                    OpResult::DataSet(s) => stat(out, s),
                    _ => {}
                }
            }
        }
    }
    multi_header(out, -1, true, -1);
}
