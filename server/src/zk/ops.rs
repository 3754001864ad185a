//! Parsing ZooKeeper requests into what Ward does with them: a write through the command log
//! (with how to encode its result), or a read answered in a view of the state.

use super::jute::{In, JuteError};
use super::records::{acls, err, op};
use crate::metrics::Op as MetricOp;
use ward_proto::{path, CreateMode, Credentials, Op, Request, Zxid, MAX_TTL_MS};

/// What one request becomes.
pub(crate) enum Action {
    /// Goes through the command log; `render` says how to encode the outcome. `nulls`: the
    /// ops (indices into a multi, 0 for a lone op) whose data the client sent as null.
    Write { request: Request, render: Render, nulls: Vec<u32> },
    /// Answered from the state after the session's earlier writes.
    Read(ReadOp),
    /// Answered with this error code, in order, without touching anything.
    Fail(i32),
    /// An auth packet (`addAuth`): changes the connection's identities; a failure closes
    /// the connection, as ZooKeeper's does.
    Auth { scheme: String, credentials: Credentials },
}

/// How a write's outcome becomes ZooKeeper's reply.
#[derive(Debug)]
pub(crate) enum Render {
    /// Not a write (reads carry this).
    None,
    /// The answer to an auth packet.
    Auth,
    /// `create` answers with the path; `create2` and `createContainer` add the stat.
    Create {
        with_stat: bool,
    },
    Delete,
    SetData,
    SetAcl,
    Check,
    CloseSession,
    /// One opcode per op. `prefail`: the op at this index failed ZooKeeper's checks before
    /// the log (its code is reported); the ops before it were submitted in front of a check
    /// that always fails, so apply decides whether an earlier one fails first.
    Multi {
        ops: Vec<i32>,
        prefail: Option<(usize, i32)>,
    },
}

/// The reads, and the requests that only touch this server's watch registry.
pub(crate) enum ReadOp {
    Ward(Request),
    GetChildren {
        path: String,
        watch: bool,
        with_stat: bool,
    },
    Ping,
    GetAcl {
        path: String,
    },
    AllChildrenNumber {
        path: String,
    },
    Ephemerals {
        prefix: String,
    },
    SetWatches {
        rel_zxid: Zxid,
        data: Vec<String>,
        exist: Vec<String>,
        child: Vec<String>,
        persistent: Vec<String>,
        recursive: Vec<String>,
    },
    AddWatch {
        path: String,
        mode: i32,
    },
    RemoveWatches {
        path: String,
        kind: i32,
        only_check: bool,
    },
    MultiRead(Vec<(i32, String, bool)>),
    WhoAmI,
}

/// Reads the request body of opcode `code`. An error means the frame is malformed and the
/// connection is dropped, as ZooKeeper does.
pub(crate) fn parse(code: i32, r: &mut In<'_>) -> Result<Action, JuteError> {
    let read = |op: ReadOp| Ok(Action::Read(op));
    match code {
        op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => {
            let Parsed { op, null, prefail } = create(code, r)?;
            match prefail {
                Some(code) => Ok(Action::Fail(code)),
                None => {
                    let Op::CreateWithAcl { path, data, mode, acl } = op else {
                        return Ok(Action::Fail(err::BAD_ARGUMENTS));
                    };
                    let render = Render::Create { with_stat: code != op::CREATE };
                    Ok(write(Request::CreateWithAcl { path, data, mode, acl }, render, null))
                }
            }
        }
        op::DELETE => {
            let (path, version) = (r.string()?, version(r.int()?));
            Ok(write(Request::Delete { path, version }, Render::Delete, false))
        }
        op::SET_DATA => {
            let (path, data, version) = (r.string()?, r.nullable_buffer()?, version(r.int()?));
            let null = data.is_none();
            Ok(write(Request::SetData { path, data: data.unwrap_or_default(), version }, Render::SetData, null))
        }
        op::CHECK => {
            let (path, version) = (r.string()?, version(r.int()?));
            Ok(write(Request::Multi(vec![Op::Check { path, version }]), Render::Check, false))
        }
        op::MULTI => multi(r),
        op::CLOSE_SESSION => Ok(write(Request::CloseSession, Render::CloseSession, false)),
        op::EXISTS => read(ReadOp::Ward(Request::Exists { path: r.string()?, watch: r.bool()? })),
        op::GET_DATA => read(ReadOp::Ward(Request::GetData { path: r.string()?, watch: r.bool()? })),
        op::GET_CHILDREN | op::GET_CHILDREN2 => {
            read(ReadOp::GetChildren { path: r.string()?, watch: r.bool()?, with_stat: code == op::GET_CHILDREN2 })
        }
        op::SYNC => read(ReadOp::Ward(Request::Sync { path: r.string()? })),
        op::PING => read(ReadOp::Ping),
        op::GET_ACL => read(ReadOp::GetAcl { path: r.string()? }),
        op::SET_ACL => {
            let (path, acl, version) = (r.string()?, acls(r)?, version(r.int()?));
            Ok(write(Request::SetAcl { path, acl, version }, Render::SetAcl, false))
        }
        op::GET_ALL_CHILDREN_NUMBER => read(ReadOp::AllChildrenNumber { path: r.string()? }),
        op::GET_EPHEMERALS => read(ReadOp::Ephemerals { prefix: r.string()? }),
        op::SET_WATCHES | op::SET_WATCHES2 => {
            let rel_zxid = u64::try_from(r.long()?).unwrap_or(0);
            let (data, exist, child) = (r.vector(In::string)?, r.vector(In::string)?, r.vector(In::string)?);
            let (persistent, recursive) = if code == op::SET_WATCHES2 {
                (r.vector(In::string)?, r.vector(In::string)?)
            } else {
                (Vec::new(), Vec::new())
            };
            read(ReadOp::SetWatches { rel_zxid, data, exist, child, persistent, recursive })
        }
        op::ADD_WATCH => read(ReadOp::AddWatch { path: r.string()?, mode: r.int()? }),
        op::REMOVE_WATCHES | op::CHECK_WATCHES => {
            read(ReadOp::RemoveWatches { path: r.string()?, kind: r.int()?, only_check: code == op::CHECK_WATCHES })
        }
        op::MULTI_READ => {
            let mut ops = Vec::new();
            loop {
                let (code, done, _err) = (r.int()?, r.bool()?, r.int()?);
                if done {
                    break;
                }
                ops.push((code, r.string()?, r.bool()?));
            }
            read(ReadOp::MultiRead(ops))
        }
        op::AUTH => {
            let (_type, scheme, credentials) = (r.int()?, r.string()?, r.buffer()?);
            Ok(Action::Auth { scheme, credentials: Credentials(credentials) })
        }
        op::WHO_AM_I => read(ReadOp::WhoAmI),
        // A standalone server with dynamic reconfiguration off says exactly this.
        op::RECONFIG => Ok(Action::Fail(err::RECONFIG_DISABLED)),
        _ => Ok(Action::Fail(err::UNIMPLEMENTED)),
    }
}

/// The request metrics' name for opcode `code`: Ward's name for the same operation.
pub(crate) fn metric_op(code: i32) -> MetricOp {
    match code {
        op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => MetricOp::Create,
        op::DELETE => MetricOp::Delete,
        op::SET_DATA => MetricOp::Set,
        op::GET_DATA => MetricOp::Get,
        op::EXISTS => MetricOp::Exists,
        op::GET_CHILDREN | op::GET_CHILDREN2 => MetricOp::Children,
        op::MULTI => MetricOp::Multi,
        op::SYNC => MetricOp::Sync,
        op::PING => MetricOp::Ping,
        op::CLOSE_SESSION => MetricOp::Close,
        op::SET_WATCHES | op::SET_WATCHES2 => MetricOp::SetWatches,
        op::CHECK => MetricOp::Check,
        op::MULTI_READ => MetricOp::MultiRead,
        op::GET_ACL | op::SET_ACL => MetricOp::Acl,
        op::ADD_WATCH => MetricOp::AddWatch,
        op::REMOVE_WATCHES | op::CHECK_WATCHES => MetricOp::RemoveWatches,
        op::AUTH => MetricOp::Auth,
        op::WHO_AM_I => MetricOp::WhoAmI,
        op::GET_ALL_CHILDREN_NUMBER => MetricOp::ChildrenCount,
        op::GET_EPHEMERALS => MetricOp::Ephemerals,
        op::RECONFIG => MetricOp::Reconfig,
        _ => MetricOp::Other,
    }
}

/// A lone write; `null`: its data is null.
fn write(request: Request, render: Render, null: bool) -> Action {
    Action::Write { request, render, nulls: if null { vec![0] } else { Vec::new() } }
}

/// ZooKeeper's -1 is "any version".
fn version(v: i32) -> Option<i32> {
    (v != -1).then_some(v)
}

/// One op of a write as read off the wire.
struct Parsed {
    op: Op,
    /// Its data was sent as null.
    null: bool,
    /// The code it fails with before the log, if any.
    prefail: Option<i32>,
}

impl Parsed {
    fn checked(op: Op, path_ok: bool) -> Parsed {
        Parsed { op, null: false, prefail: (!path_ok).then_some(err::BAD_ARGUMENTS) }
    }
}

/// A create request of any of the four create opcodes, and ZooKeeper's checks before the
/// log, in its order (mode, TTL, path; the ACL is apply's: it depends on the identities
/// the write carries). ZooKeeper accepts TTL nodes only with
/// `zookeeper.extendedTypesEnabled`; Ward always does.
fn create(code: i32, r: &mut In<'_>) -> Result<Parsed, JuteError> {
    let (path, data, acl, flags) = (r.string()?, r.nullable_buffer()?, acls(r)?, r.int()?);
    // ZooKeeper reads a create without a TTL as one with TTL -1.
    let ttl = if code == op::CREATE_TTL { r.long()? } else { -1 };
    let mode = create_mode(code, flags, ttl);
    let valid = match mode {
        Some(m) if m.is_sequential() => path::validate_sequential_prefix(&path).is_ok(),
        _ => path::validate(&path).is_ok(),
    };
    let prefail = (mode.is_none() || !valid).then_some(err::BAD_ARGUMENTS);
    let null = data.is_none();
    let mode = mode.unwrap_or(CreateMode::Persistent);
    let op = Op::CreateWithAcl { path, data: data.unwrap_or_default(), mode, acl };
    Ok(Parsed { op, null, prefail })
}

/// The mode of a create, or `None` where ZooKeeper answers `BADARGUMENTS`: flags it does not
/// know, a TTL mode without a TTL in range, or a TTL given with a mode that takes none.
/// As in ZooKeeper, `createContainer` makes a container and the container flag (4) alone
/// does not: the Java client sends it with that opcode.
fn create_mode(code: i32, flags: i32, ttl: i64) -> Option<CreateMode> {
    let ttl_ms = u64::try_from(ttl).ok().filter(|t| (1..=MAX_TTL_MS).contains(t));
    match (flags, ttl_ms) {
        (5 | 6, None) => return None,
        (5 | 6, Some(_)) => {}
        _ if ttl >= 0 => return None,
        _ => {}
    }
    match flags {
        _ if code == op::CREATE_CONTAINER => Some(CreateMode::Container),
        0 | 4 => Some(CreateMode::Persistent),
        1 => Some(CreateMode::Ephemeral),
        2 => Some(CreateMode::PersistentSequential),
        3 => Some(CreateMode::EphemeralSequential),
        5 => ttl_ms.map(|ttl_ms| CreateMode::PersistentWithTtl { ttl_ms }),
        6 => ttl_ms.map(|ttl_ms| CreateMode::PersistentSequentialWithTtl { ttl_ms }),
        _ => None,
    }
}

fn multi(r: &mut In<'_>) -> Result<Action, JuteError> {
    let mut ops = Vec::new();
    let mut codes = Vec::new();
    let mut nulls = Vec::new();
    let mut prefail = None;
    loop {
        let (code, done, _err) = (r.int()?, r.bool()?, r.int()?);
        if done {
            break;
        }
        let parsed = match code {
            op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => create(code, r)?,
            op::DELETE => {
                let path = r.string()?;
                let ok = path::validate(&path).is_ok();
                Parsed::checked(Op::Delete { path, version: version(r.int()?) }, ok)
            }
            op::SET_DATA => {
                let path = r.string()?;
                let ok = path::validate(&path).is_ok();
                let (data, version) = (r.nullable_buffer()?, version(r.int()?));
                let null = data.is_none();
                Parsed { null, ..Parsed::checked(Op::SetData { path, data: data.unwrap_or_default(), version }, ok) }
            }
            op::CHECK => {
                let path = r.string()?;
                let ok = path::validate(&path).is_ok();
                Parsed::checked(Op::Check { path, version: version(r.int()?) }, ok)
            }
            // Any other op has no place in a transaction; ZooKeeper drops the connection.
            _ => return Err(JuteError::BadLength(code)),
        };
        if prefail.is_none() {
            if let Some(fail) = parsed.prefail {
                prefail = Some((ops.len(), fail));
            }
        }
        if parsed.null {
            nulls.push(u32::try_from(ops.len()).unwrap_or(u32::MAX));
        }
        ops.push(parsed.op);
        codes.push(code);
    }
    if let Some((index, _)) = prefail {
        // The prefix, then a check that cannot pass: `/` never holds a lock.
        ops.truncate(index);
        ops.push(Op::CheckFence { path: "/".into(), token: 0 });
        nulls.retain(|&i| usize::try_from(i).is_ok_and(|i| i < index));
    }
    Ok(Action::Write { request: Request::Multi(ops), render: Render::Multi { ops: codes, prefail }, nulls })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZooKeeper's `CreateMode.fromFlag` and `EphemeralType.validateTTL`, with
    /// `extendedTypesEnabled`: a TTL mode needs a TTL of 1 to 2^40 - 1 ms, any other mode
    /// none (ZooKeeper reads a create without one as TTL -1).
    #[test]
    fn create_flags_and_ttls_make_zookeepers_modes() {
        let ttl = |ttl_ms| Some(CreateMode::PersistentWithTtl { ttl_ms });
        let cases = [
            (op::CREATE, 0, -1, Some(CreateMode::Persistent)),
            (op::CREATE2, 3, -1, Some(CreateMode::EphemeralSequential)),
            (op::CREATE_CONTAINER, 4, -1, Some(CreateMode::Container)),
            // The container flag on a plain create is a persistent node in ZooKeeper too.
            (op::CREATE2, 4, -1, Some(CreateMode::Persistent)),
            (op::CREATE_TTL, 5, 1000, ttl(1000)),
            (op::CREATE_TTL, 5, MAX_TTL_MS as i64, ttl(MAX_TTL_MS)),
            (op::CREATE_TTL, 6, 1, Some(CreateMode::PersistentSequentialWithTtl { ttl_ms: 1 })),
            (op::CREATE_TTL, 5, 0, None),
            (op::CREATE_TTL, 5, MAX_TTL_MS as i64 + 1, None),
            (op::CREATE_TTL, 0, 1000, None),
            (op::CREATE_TTL, 0, -1, Some(CreateMode::Persistent)),
            (op::CREATE2, 5, -1, None),
            (op::CREATE_CONTAINER, 5, -1, None),
            (op::CREATE, 7, -1, None),
        ];
        for (code, flags, ttl, mode) in cases {
            assert_eq!(create_mode(code, flags, ttl), mode, "opcode {code}, flags {flags}, ttl {ttl}");
        }
    }
}
