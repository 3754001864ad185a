//! Encoding what the shared writer sends on a ZooKeeper connection: replies (a
//! `ReplyHeader`, then the op's response record unless the error code is set) and
//! notifications.

use super::jute::Out;
use super::ops::Render;
use super::records::{code, err, failure, multi_header, notification, op, reply_header, stat, REPLY_HEADER_LEN};
use super::stats::ConnStats;
use crate::conn::writer::Wire;
use crate::conn::Outbound;
use crate::metrics::{Failure, Listener};
use bytes::Bytes;
use std::sync::Arc;
use ward_proto::{ErrorCode, OpResult, Response, Zxid};

/// What the reader attaches to a request.
pub(crate) struct ZkTag {
    pub xid: i32,
    pub render: Render,
}

/// A read's answer: an error code, or the response record.
pub(crate) struct ZkAnswer {
    pub err: i32,
    pub body: Vec<u8>,
}

impl ZkAnswer {
    pub(crate) fn ok(body: Vec<u8>) -> Self {
        ZkAnswer { err: err::OK, body }
    }

    pub(crate) fn fail(err: i32) -> Self {
        ZkAnswer { err, body: Vec::new() }
    }

    /// The reply's size if it would exceed `limit` ([`super::MAX_REPLY`]): such a read is
    /// answered `MARSHALLINGERROR` instead. ZooKeeper has no code of its own for it; this one
    /// makes clients raise rather than reconnect (and a retry would fail the same way). Only
    /// reads are measured: a write's reply is bounded by its request.
    pub(crate) fn oversized(&self, limit: usize) -> Option<usize> {
        let len = REPLY_HEADER_LEN + self.body.len();
        (self.err == err::OK && len > limit).then_some(len)
    }
}

pub(crate) struct ZkWire {
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
            // A ZooKeeper connection is registered for one notification per change
            // (`Delivery::OneEvent`), so streamed events never reach it; say so anyway.
            Outbound::Event(event) | Outbound::Streamed(ward_proto::StreamEvent { event, .. }) => {
                self.stats.sent_event();
                Some(Bytes::from(notification(&event)))
            }
            // A ZooKeeper session never queues as a Ward lock attempt, so it is never granted
            // one; and an expired session is only told when it reconnects (ZooKeeper closes).
            Outbound::LockGranted { .. } | Outbound::Close(_) => None,
        }
    }

    fn read_reply(&mut self, tag: ZkTag, zxid: Zxid, answer: ZkAnswer) -> Bytes {
        if let Render::Auth = tag.render {
            // ZooKeeper answers an auth packet with zxid 0, outside its request pipeline.
            let mut out = Out::default();
            reply_header(&mut out, tag.xid, 0, answer.err);
            self.stats.sent_event();
            return Bytes::from(out.buf);
        }
        self.reply(tag.xid, zxid, answer)
    }

    fn write_reply(&mut self, tag: ZkTag, zxid: Zxid, result: Result<Response, ErrorCode>) -> Bytes {
        self.reply(tag.xid, zxid, render(tag.render, result))
    }

    fn session_expired(&mut self) -> Option<Bytes> {
        None
    }

    fn answer_weight(answer: &ZkAnswer) -> u64 {
        (std::mem::size_of::<ZkAnswer>() + answer.body.len()) as u64
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
        (Render::SetData, Response::DataSet(s)) | (Render::SetAcl, Response::AclSet(s)) => stat(&mut out, &s),
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
                let kind = result_type(*code);
                multi_header(out, kind, false, err::OK);
                match result {
                    OpResult::Created { path, stat: s } => {
                        out.string(path);
                        if kind == op::CREATE2 {
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

/// The type of an applied op's result in a multi reply, as ZooKeeper 3.8's
/// `FinalRequestProcessor` gives it: a plain create answers `create` (the path alone), every
/// other create `create2` (path and stat). The Java client's `MultiResponse` knows no other
/// create type and drops the connection on one.
fn result_type(code: i32) -> i32 {
    match code {
        op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => op::CREATE2,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::jute::In;
    use ward_proto::Stat;

    /// The reply limit (docs/zookeeper-compat.md): a read's reply up to it goes out whole,
    /// one over it is answered MARSHALLINGERROR; an error is never over it.
    #[test]
    fn a_reply_over_the_limit_is_oversized() {
        let limit = REPLY_HEADER_LEN + 100;
        assert_eq!(ZkAnswer::ok(vec![1; 100]).oversized(limit), None);
        assert_eq!(ZkAnswer::ok(vec![1; 101]).oversized(limit), Some(limit + 1));
        assert_eq!(ZkAnswer::fail(err::NO_NODE).oversized(0), None);
    }

    /// A `Stat`, in jute field order.
    fn skip_stat(r: &mut In<'_>) {
        let longs_and_ints = [8, 8, 8, 8, 4, 4, 4, 8, 4, 4, 8];
        for size in longs_and_ints {
            let read = if size == 8 { r.long().map(drop) } else { r.int().map(drop) };
            read.expect("stat");
        }
    }

    /// Multi result types (docs/zookeeper-compat.md): a plain create answers `create` with
    /// the path; create2, createContainer and createTTL answer `create2` with path and stat.
    #[test]
    fn creates_in_a_multi_answer_with_zookeepers_result_types() {
        let codes = [op::CREATE, op::CREATE2, op::CREATE_CONTAINER, op::CREATE_TTL, op::SET_DATA, op::DELETE];
        let created = |p: &str| OpResult::Created { path: p.into(), stat: Stat::default() };
        let results = vec![
            created("/a"),
            created("/b"),
            created("/c"),
            created("/d"),
            OpResult::DataSet(Stat::default()),
            OpResult::Deleted,
        ];
        let answer = render(Render::Multi { ops: codes.to_vec(), prefail: None }, Ok(Response::Multi(results)));
        assert_eq!(answer.err, err::OK);
        let mut r = In::new(&answer.body);
        let mut types = Vec::new();
        loop {
            let (kind, done, _) = (r.int().expect("type"), r.bool().expect("done"), r.int().expect("err"));
            if done {
                break;
            }
            types.push(kind);
            match kind {
                op::CREATE => drop(r.string().expect("path")),
                op::CREATE2 => {
                    r.string().expect("path");
                    skip_stat(&mut r);
                }
                op::SET_DATA => skip_stat(&mut r),
                _ => {}
            }
        }
        assert_eq!(types, [op::CREATE, op::CREATE2, op::CREATE2, op::CREATE2, op::SET_DATA, op::DELETE]);
        assert_eq!(r.remaining(), 0);
    }
}

#[cfg(test)]
mod counted_tests {
    //! `conn::counted::Counted` under both listeners' wires (tested here, above both).
    use super::ZkWire;
    use crate::conn::counted::Counted;
    use crate::metrics::Metrics;
    use crate::net::connection::WardWire;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // Each server counts its own: two servers' figures in one process stay apart.
    #[tokio::test]
    async fn counts_what_is_read_and_written_into_its_own_servers_figures() {
        let (one, other) = (Arc::new(Metrics::default()), Arc::new(Metrics::default()));
        let (a, b) = tokio::io::duplex(64);
        let mut a = Counted::<_, ZkWire>::new(a, one.clone());
        let mut b = Counted::<_, WardWire>::new(b, other.clone());
        a.write_all(b"hello").await.expect("write");
        let mut got = [0u8; 5];
        b.read_exact(&mut got).await.expect("read");
        assert_eq!(one.zookeeper.bytes_out.load(Ordering::Relaxed), 5);
        assert_eq!(other.ward.bytes_in.load(Ordering::Relaxed), 5);
        assert_eq!(one.ward.bytes_in.load(Ordering::Relaxed), 0, "the other server's reads");
        assert_eq!(other.zookeeper.bytes_out.load(Ordering::Relaxed), 0, "the other server's writes");
        let pointer = std::mem::size_of::<usize>();
        assert_eq!(std::mem::size_of::<Counted<u64, WardWire>>(), std::mem::size_of::<u64>() + pointer, "one pointer");
    }
}
