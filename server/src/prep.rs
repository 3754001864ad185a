//! Prep: the pure checks a write passes before it is logged (path syntax, sizes, modes, a
//! TTL's range).
//! Checks that depend on the tree (exists, versions, ACLs) happen in apply, in log order;
//! so does checking an ACL a client gives, which depends on the identities it travels with.

use crate::command::CommandOp;
use ward_proto::{path, CreateMode, ErrorCode, LockKind, Op, Request, MAX_LOCK_DELAY_MS, MAX_TTL_MS};

/// Turns a write request into the command op to log, or refuses it.
pub(crate) fn prep(request: Request, max_data: usize) -> Result<CommandOp, ErrorCode> {
    match request {
        Request::Create { path, data, mode } => Ok(CommandOp::Op(check_op(Op::Create { path, data, mode }, max_data)?)),
        Request::Delete { path, version } => Ok(CommandOp::Op(check_op(Op::Delete { path, version }, max_data)?)),
        Request::SetData { path, data, version } => {
            Ok(CommandOp::Op(check_op(Op::SetData { path, data, version }, max_data)?))
        }
        Request::CreateWithAcl { path, data, mode, acl } => {
            Ok(CommandOp::Op(check_op(Op::CreateWithAcl { path, data, mode, acl }, max_data)?))
        }
        Request::SetAcl { path, acl, version } => {
            Ok(CommandOp::Op(check_op(Op::SetAcl { path, acl, version }, max_data)?))
        }
        Request::Multi(ops) => {
            let total: usize = ops.iter().map(Op::data_len).sum();
            if total > max_data {
                return Err(ErrorCode::BadArguments);
            }
            let ops = ops.into_iter().map(|op| check_op(op, max_data)).collect::<Result<_, _>>()?;
            Ok(CommandOp::Multi(ops))
        }
        Request::CloseSession => Ok(CommandOp::CloseSession),
        // Only plain writes are resent: lock requests find their earlier attempt by tag.
        Request::Resend(inner) => match *inner {
            request @ (Request::Create { .. }
            | Request::Delete { .. }
            | Request::SetData { .. }
            | Request::Multi(_)
            | Request::CreateWithAcl { .. }
            | Request::SetAcl { .. }) => Ok(CommandOp::Resent(Box::new(prep(request, max_data)?))),
            _ => Err(ErrorCode::BadArguments),
        },
        Request::LockAcquire { dirs, tag, kind, data } => {
            valid_acquire(&dirs, kind, &data, max_data)?;
            Ok(CommandOp::LockAcquire { dirs, tag, kind, data })
        }
        Request::LockAcquireDelayed { dirs, tag, kind, data, lock_delay_ms } => {
            valid_acquire(&dirs, kind, &data, max_data)?;
            if lock_delay_ms == 0 || lock_delay_ms > MAX_LOCK_DELAY_MS {
                return Err(ErrorCode::BadArguments);
            }
            Ok(CommandOp::LockAcquireDelayed { dirs, tag, kind, data, lock_delay_ms })
        }
        Request::LockRelease { dirs, tag } => {
            valid_dirs(&dirs)?;
            Ok(CommandOp::LockRelease { dirs, tag })
        }
        _ => Err(ErrorCode::BadArguments),
    }
}

fn check_op(op: Op, max_data: usize) -> Result<Op, ErrorCode> {
    let path_ok = match op.create_mode() {
        Some(mode) if mode.is_sequential() => path::validate_sequential_prefix(op.path()),
        _ => path::validate(op.path()),
    };
    path_ok.map_err(|_| ErrorCode::BadArguments)?;
    let bad_ttl = |ttl| ttl == 0 || ttl > MAX_TTL_MS;
    if op.create_mode().and_then(CreateMode::ttl_ms).is_some_and(bad_ttl) {
        return Err(ErrorCode::BadArguments);
    }
    if op.data_len() > max_data {
        return Err(ErrorCode::BadArguments);
    }
    Ok(op)
}

/// A lock attempt's directories, data and kind.
fn valid_acquire(dirs: &[String], kind: LockKind, data: &[u8], max_data: usize) -> Result<(), ErrorCode> {
    valid_dirs(dirs)?;
    if data.len() > max_data || matches!(kind, LockKind::Semaphore { permits: 0 }) {
        return Err(ErrorCode::BadArguments);
    }
    Ok(())
}

/// A lock attempt names at least one directory, each once.
fn valid_dirs(dirs: &[String]) -> Result<(), ErrorCode> {
    let distinct: std::collections::HashSet<&String> = dirs.iter().collect();
    if dirs.is_empty() || distinct.len() != dirs.len() {
        return Err(ErrorCode::BadArguments);
    }
    dirs.iter().try_for_each(|dir| path::validate(dir).map_err(|_| ErrorCode::BadArguments))
}
