//! Reads on a ZooKeeper connection, answered in one view of the state (so a watch armed by
//! a read covers every change after the data it returned). Ward's own reads do the work
//! where the two protocols agree; what only ZooKeeper has is here.

use super::jute::Out;
use super::ops::ReadOp;
use super::records::{code, err, multi_header, op, stat, write_acls};
use super::reply::ZkAnswer;
use crate::acl::access;
use crate::conn::session_conn::SessionConn;
use crate::local::Local;
use crate::read::Reader;
use crate::state::StateMachine;
use crate::watch::Armed;
use ward_proto::{path, perms, Request, Response, WatchEvent, WatchKind, WatchMode};

pub(crate) fn execute(
    ctx: &SessionConn,
    local: &Local,
    state: &StateMachine,
    op: ReadOp,
    events: &mut Vec<WatchEvent>,
) -> ZkAnswer {
    if state.session(ctx.session).is_none() {
        return ZkAnswer::fail(err::SESSION_EXPIRED);
    }
    let identity = ctx.identity();
    let ids = identity.ids();
    let reader = Reader { local, conn: ctx.conn, session: ctx.session, ids };
    let mut out = Out::default();
    match op {
        ReadOp::Ward(Request::Sync { path }) => {
            match reader.execute(state, Request::Sync { path: path.clone() }, events) {
                Ok(_) => {
                    out.string(&path);
                }
                Err(e) => return ZkAnswer::fail(code(e)),
            }
        }
        ReadOp::Ward(request) => {
            let null = matches!(&request, Request::GetData { path, .. } if is_null(state, path));
            match reader.execute(state, request, events) {
                Ok(Response::Exists(Some(s))) => stat(&mut out, &s),
                Ok(Response::Exists(None)) => return ZkAnswer::fail(err::NO_NODE),
                Ok(Response::Data { data, stat: s }) => {
                    out.nullable_buffer((!null).then_some(data.as_slice()));
                    stat(&mut out, &s);
                }
                Ok(_) => return ZkAnswer::fail(err::SYSTEM_ERROR),
                Err(e) => return ZkAnswer::fail(code(e)),
            }
        }
        ReadOp::GetChildren { path, watch, with_stat } => {
            match reader.execute(state, Request::GetChildren { path, watch }, events) {
                Ok(Response::Children { children, stat: s }) => {
                    out.strings(&children);
                    if with_stat {
                        stat(&mut out, &s);
                    }
                }
                Ok(_) => return ZkAnswer::fail(err::SYSTEM_ERROR),
                Err(e) => return ZkAnswer::fail(code(e)),
            }
        }
        ReadOp::Ping => {}
        ReadOp::GetAcl { path } => match reader.acl(state, &path) {
            Ok((acl, s)) => {
                write_acls(&mut out, &acl);
                stat(&mut out, &s);
            }
            Err(e) => return ZkAnswer::fail(code(e)),
        },
        ReadOp::AllChildrenNumber { path } => {
            if let Err(e) = access::node(state.tree(), &path, perms::READ, ids) {
                return ZkAnswer::fail(code(e));
            }
            let Some(node) = state.tree().get(&path) else { return ZkAnswer::fail(err::NO_NODE) };
            let mut count = 0usize;
            let mut stack: Vec<String> = node.children.iter().map(|c| path::join(&path, c)).collect();
            while let Some(p) = stack.pop() {
                count += 1;
                if let Some(n) = state.tree().get(&p) {
                    stack.extend(n.children.iter().map(|c| path::join(&p, c)));
                }
            }
            out.int(i32::try_from(count).unwrap_or(i32::MAX));
        }
        ReadOp::Ephemerals { prefix } => {
            let all = prefix.trim().is_empty() || prefix.trim() == "/";
            let paths: Vec<&str> =
                state.tree().ephemerals(ctx.session).filter(|p| all || p.starts_with(&prefix)).collect();
            out.strings(&paths);
        }
        ReadOp::SetWatches { rel_zxid, data, exist, child, persistent, recursive } => {
            let kinds = [(WatchKind::Data, data), (WatchKind::Exists, exist), (WatchKind::Child, child)];
            let watches = kinds.into_iter().flat_map(|(k, paths)| paths.into_iter().map(move |p| (k, p))).collect();
            if let Err(e) = reader.execute(state, Request::SetWatches { last_zxid: rel_zxid, watches }, events) {
                return ZkAnswer::fail(code(e));
            }
            for (mode, paths) in [(WatchMode::Persistent, persistent), (WatchMode::PersistentRecursive, recursive)] {
                for p in paths {
                    local.watches.add_persistent(ctx.conn, &p, mode);
                }
            }
        }
        ReadOp::AddWatch { path, mode } => {
            let mode = match mode {
                0 => WatchMode::Persistent,
                1 => WatchMode::PersistentRecursive,
                _ => return ZkAnswer::fail(err::BAD_ARGUMENTS),
            };
            local.watches.add_persistent(ctx.conn, &path, mode);
            out.int(0);
        }
        ReadOp::RemoveWatches { path, kind, only_check } => {
            let which = move |armed: Armed| match (kind, armed) {
                // ZooKeeper 3.8 keeps a persistent watch in both its data and child tables.
                (1, Armed::OneShot(WatchKind::Child) | Armed::Persistent(WatchMode::Persistent)) => true,
                (2, Armed::OneShot(WatchKind::Data | WatchKind::Exists) | Armed::Persistent(_)) => true,
                (3, _) => true,
                // 3.9's Persistent and PersistentRecursive watcher types.
                (4, Armed::Persistent(WatchMode::Persistent)) => true,
                (5, Armed::Persistent(WatchMode::PersistentRecursive)) => true,
                _ => false,
            };
            if !(1..=5).contains(&kind) {
                return ZkAnswer::fail(err::BAD_ARGUMENTS);
            }
            let found = if only_check {
                local.watches.armed(ctx.conn, &path).into_iter().any(which)
            } else {
                local.watches.remove(ctx.conn, &path, which)
            };
            if !found {
                return ZkAnswer::fail(err::NO_WATCHER);
            }
        }
        ReadOp::MultiRead(ops) => {
            for (code_, path, watch) in ops {
                let null = code_ == op::GET_DATA && is_null(state, &path);
                let result = match code_ {
                    op::GET_CHILDREN => reader.execute(state, Request::GetChildren { path, watch }, events),
                    op::GET_DATA => reader.execute(state, Request::GetData { path, watch }, events),
                    _ => Err(ward_proto::ErrorCode::BadArguments),
                };
                match result {
                    Ok(Response::Children { children, .. }) => {
                        multi_header(&mut out, code_, false, err::OK);
                        out.strings(&children);
                    }
                    Ok(Response::Data { data, stat: s }) => {
                        multi_header(&mut out, code_, false, err::OK);
                        out.nullable_buffer((!null).then_some(data.as_slice()));
                        stat(&mut out, &s);
                    }
                    other => {
                        let e = other.err().map_or(err::SYSTEM_ERROR, code);
                        multi_header(&mut out, op::ERROR, false, e);
                        out.int(e);
                    }
                }
            }
            multi_header(&mut out, -1, true, -1);
        }
        ReadOp::WhoAmI => {
            // ZooKeeper's `ClientInfo` list: each identity's scheme and user.
            out.int(i32::try_from(ids.len()).unwrap_or(i32::MAX));
            for id in ids {
                out.string(id.scheme()).string(&id.user());
            }
        }
    }
    ZkAnswer::ok(out.buf)
}

/// Whether the node at `path` has null data (a node that is missing has none).
fn is_null(state: &StateMachine, path: &str) -> bool {
    state.tree().get(path).is_some_and(|node| node.is_null())
}
