//! The snapshot file's format: `postcard((SnapshotMeta, StateMachine))` in the checksummed
//! wrapper of [`super::fsutil`], its versions, and how a payload of any of them is decoded as
//! it is read (docs/storage.md, "Vote and snapshot").

use super::error::OpenError;
use super::fsutil::CheckedReader;
use super::padded_reader::PaddedReader;
use super::types::SnapshotMeta;
use crate::state::StateMachine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Read;

/// The current snapshot version. Versions 2 and 3 each appended one map to the end of the
/// state machine, which ends the body: 2 each session's last write
/// ([`crate::state::LastWrite`]), 3 each session's latest attachment. Version 4 added no
/// bytes: a node's owner word may now mark a container or a TTL node
/// ([`crate::tree::NodeKind`]), which an older server would take for an ephemeral's owner,
/// so it must refuse such a body. Version 5 added no bytes either: a node with null data
/// (only ZooKeeper clients write it) has owner tag 2 or 3 where an `Option` has 0 or 1
/// (`tree::znode`'s `Owner`); a node with data is written as before. Version 6 appended the
/// nodes' ACLs (two lists: the ACL table's slots, and the nodes pointing to them; see
/// `crate::state`'s `StoredAcls`), and a node's owner word may mark a lock contender held over
/// for its lock-delay ([`crate::tree::NodeKind::LockDelay`]), which an older server would take
/// for an ephemeral's owner. Older versions are still read ([`decode_from`]).
pub(super) const SNAPSHOT_VERSION: u8 = 6;

/// The empty collections a body of `version` lacks at its end: versions 2 and 3 each
/// appended a map, version 6 two lists. Each is one zero byte when empty.
pub(super) fn missing_maps(version: u8) -> usize {
    let acls = if version < 6 { 2 } else { 0 };
    acls + match version {
        0 | 1 => 2,
        2 => 1,
        _ => 0,
    }
}

/// The kind of file a snapshot is: its magic is this and the version's digit.
pub(super) const KIND: &[u8; 7] = b"WARDSNP";

/// The file header of snapshot version `version`: `WARDSNP` and the version's digit.
pub(super) fn magic(version: u8) -> [u8; 8] {
    super::fsutil::magic(KIND, version)
}

/// The snapshot's content, as built (borrowing a copy of the state)...
#[derive(Serialize)]
pub(super) struct BodyRef<'a> {
    pub(crate) meta: &'a SnapshotMeta,
    pub state: &'a StateMachine,
}

/// ...and as read back.
#[derive(Deserialize)]
pub(super) struct Body {
    pub(crate) meta: SnapshotMeta,
    pub state: StateMachine,
}

/// Decodes a `T` from the start of a snapshot file's `payload`, which lacks `missing` zero
/// bytes at its end. An older body is the current one without the maps later versions
/// appended, and an empty map is one zero byte in postcard: so it decodes as the current
/// version once those bytes are added. No string in a payload is longer than `longest`.
pub(super) fn decode_from<T: DeserializeOwned>(
    payload: impl Read,
    missing: usize,
    longest: u64,
) -> Result<T, postcard::Error> {
    let padded = PaddedReader::new(payload, missing as u64);
    // postcard reads each string into this before copying it out, always at its start: only
    // as much of it is touched as the longest string needs (a path, an ACL's id; none is
    // longer than a client's request frame). A zeroed allocation this large is mapped
    // lazily, so the untouched rest costs address space, not memory.
    let longest = longest.min(ward_proto::MAX_REPLY_FRAME as u64) as usize;
    let mut scratch = vec![0; longest];
    postcard::from_io::<T, _>((padded, &mut scratch)).map(|(decoded, _)| decoded)
}

/// Decodes a `T` from the start of the snapshot file `reader` reads (a whole [`Body`], or
/// its first field, the meta), then checks the whole payload ([`CheckedReader::finish`]):
/// damage is reported as such, not as whatever the decoder made of it. Gives the file back.
pub(super) fn read_checked<T: DeserializeOwned>(mut reader: CheckedReader) -> Result<(T, File), OpenError> {
    let (missing, len, path) = (missing_maps(reader.version()), reader.len(), reader.path().to_path_buf());
    let decoded = decode_from(&mut reader, missing, len);
    let file = reader.finish()?;
    let decoded = decoded.map_err(|source| OpenError::Decode { what: path.display().to_string(), source })?;
    Ok((decoded, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, CommandOp};
    use ward_proto::{Acl, CreateMode, Op, SessionId, SessionSecret};

    /// Decodes a snapshot file's payload of `version`, as opening the file does.
    fn decode(version: u8, bytes: &[u8]) -> Result<Body, postcard::Error> {
        decode_from(bytes, missing_maps(version), bytes.len() as u64)
    }

    fn command(time_ms: i64, session: u64, xid: u64, op: CommandOp) -> Command {
        Command { time_ms, session: SessionId(session), xid, op }
    }

    /// A state with a session, its ephemeral `/a`, and (with `xid` not 0) a last write.
    fn state(xid: u64) -> StateMachine {
        let mut state = StateMachine::default();
        let open = CommandOp::CreateSession { timeout_ms: 4000, secret: SessionSecret([1; 16]), owner: None };
        state.apply_command(&command(1, 0, 0, open));
        let create = Op::Create { path: "/a".into(), data: b"x".to_vec(), mode: CreateMode::Ephemeral };
        state.apply_command(&command(2, 1, xid, CommandOp::Op(create)));
        state
    }

    /// A body of the current version with the `n` zero bytes its last, empty collections
    /// take cut off its end: what an older version wrote for the same state.
    fn older_body(state: &StateMachine, n: usize) -> Vec<u8> {
        let mut body = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state }).expect("encode");
        assert_eq!(body.split_off(body.len() - n), vec![0; n], "empty collections end the body");
        body
    }

    /// A data directory written by an older version still loads: version 2 only appended
    /// the per-session last writes, version 3 the attachments and version 6 the ACLs, each
    /// empty collection of which is one zero byte at the end of the body; a version 3 body
    /// is a version 5 one without containers, TTL nodes or null data.
    #[test]
    fn older_snapshots_still_decode() {
        let v2 = older_body(&state(7), 3);
        let body = decode(2, &v2).expect("decode version 2");
        assert_eq!(body.state.last_zxid(), 2);
        assert_eq!(body.state.tree().get("/a").map(|n| n.data().to_vec()), Some(b"x".to_vec()));
        assert!(body.state.session(SessionId(1)).is_some());
        let resent = command(3, 1, 7, CommandOp::Op(Op::Delete { path: "/a".into(), version: None }));
        let mut decoded = body.state;
        assert_eq!(decoded.apply_command(&resent).0.zxid, 2, "the last write survived: xid 7 is answered, not applied");

        let v1 = older_body(&state(0), 4);
        let body = decode(1, &v1).expect("decode version 1");
        assert_eq!(body.state.last_zxid(), 2);
        assert!(body.state.session(SessionId(1)).is_some());
        assert!(decode(2, &v1).is_err(), "a version 1 body is not a version 2 one");

        for version in 3..=5 {
            let body = decode(version, &older_body(&state(7), 2)).expect("decode versions 3 to 5");
            assert_eq!(body.state.tree().get("/a").map(|n| n.data().to_vec()), Some(b"x".to_vec()));
            assert_eq!(body.state.attached_at(SessionId(1)), 1);
            let root = body.state.tree().get("/").expect("root");
            assert_eq!(body.state.tree().acl(root), Acl::open(), "an older snapshot's nodes are open");
        }
        assert_eq!(magic(SNAPSHOT_VERSION), *b"WARDSNP6");
    }

    /// ACLs survive a snapshot: each node its own list and aversion, lists shared by many
    /// nodes stored once, and a snapshot pointing a node at a slot it lacks is refused.
    #[test]
    fn a_snapshot_keeps_acls_and_aversions() {
        use ward_proto::{perms, Acl};
        let mut state = state(0);
        let guarded = vec![Acl::new(perms::ALL, "digest", "alice:hash="), Acl::new(perms::READ, "ip", "10.0.0.0/8")];
        for path in ["/g1", "/g2"] {
            let create = Op::CreateWithAcl {
                path: path.into(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
                acl: guarded.clone(),
            };
            state.apply_command(&command(3, 1, 0, CommandOp::Op(create)));
        }
        let set = Op::SetAcl { path: "/a".into(), acl: Acl::read_only(), version: Some(0) };
        state.apply_command(&command(4, 1, 0, CommandOp::Op(set)));
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &state }).expect("encode");
        let back = decode(SNAPSHOT_VERSION, &bytes).expect("decode").state;
        let acl = |path: &str| {
            let node = back.tree().get(path).expect("node");
            (back.tree().acl(node).to_vec(), back.tree().stat(node).aversion)
        };
        assert_eq!(acl("/g1"), (guarded.clone(), 0));
        assert_eq!(acl("/g2"), (guarded, 0));
        assert_eq!(acl("/a"), (Acl::read_only(), 1));
        assert_eq!(acl("/"), (Acl::open(), 0));
        assert_eq!(back.tree().acl_table().len(), 3, "open, the shared list, and /a's");

        let mut forged = state.clone();
        forged.tree.acls = crate::acl::table::AclTable::default();
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &forged }).expect("encode");
        assert!(decode(SNAPSHOT_VERSION, &bytes).is_err(), "nodes pointing to slots the snapshot lacks");
    }

    /// Containers and TTL nodes keep their kind through a snapshot, and the cleanup's index
    /// of them, which no snapshot holds, is rebuilt when one is read.
    #[test]
    fn a_snapshot_keeps_containers_and_ttl_nodes() {
        let mut state = state(0);
        for (path, mode) in [("/c", CreateMode::Container), ("/t", CreateMode::PersistentWithTtl { ttl_ms: 50 })] {
            let create = Op::Create { path: path.into(), data: Vec::new(), mode };
            state.apply_command(&command(3, 1, 0, CommandOp::Op(create)));
        }
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &state }).expect("encode");
        let tree = decode(SNAPSHOT_VERSION, &bytes).expect("decode").state.tree;
        assert_eq!(tree.get("/c").map(|n| n.kind()), Some(crate::tree::NodeKind::Container));
        assert_eq!(tree.get("/t").map(|n| n.kind()), Some(crate::tree::NodeKind::Ttl(50)));
        assert_eq!(tree.swept_len(), 2, "the index is rebuilt");
        assert_eq!(tree.unused_nodes(1_000, 0, 10), ["/t"], "the TTL node is due; the container never had a child");
    }

    /// A lock holder's contender held over for its lock-delay keeps its kind through a
    /// snapshot, and the lock-delay task's index is rebuilt.
    #[test]
    fn a_snapshot_keeps_a_held_over_lock_contender() {
        let mut state = state(0);
        let dir = Op::Create { path: "/l".into(), data: Vec::new(), mode: CreateMode::Persistent };
        state.apply_command(&command(3, 1, 0, CommandOp::Op(dir)));
        let acquire = CommandOp::LockAcquireDelayed {
            dirs: vec!["/l".into()],
            tag: 1,
            kind: ward_proto::LockKind::Exclusive,
            data: Vec::new(),
            lock_delay_ms: 100,
        };
        state.apply_command(&command(4, 1, 0, acquire));
        state.apply_command(&command(5, 1, 0, CommandOp::ExpireSession));
        let bytes = postcard::to_allocvec(&BodyRef { meta: &SnapshotMeta::default(), state: &state }).expect("encode");
        let tree = decode(SNAPSHOT_VERSION, &bytes).expect("decode").state.tree;
        let held: Vec<(String, crate::tree::NodeKind, i64)> =
            tree.lock_delayed().map(|(path, node)| (path.to_string(), node.kind(), node.mtime)).collect();
        assert_eq!(held.len(), 1, "the index is rebuilt");
        assert_eq!(
            (held[0].1, held[0].2),
            (crate::tree::NodeKind::LockDelay(100), 5),
            "its delay runs from the expiry"
        );
    }

    /// Null data survives a snapshot: the node is written with the owner tag that marks it
    /// (see `tree::znode`), and read back null, not empty.
    #[test]
    fn null_data_survives_a_snapshot() {
        let mut state = state(0);
        let create = Op::Create { path: "/n".into(), data: Vec::new(), mode: CreateMode::Ephemeral };
        let null = CommandOp::NullData { nulls: vec![0], op: Box::new(CommandOp::Op(create)) };
        state.apply_command(&command(3, 1, 0, null));
        let meta = SnapshotMeta::default();
        let bytes = postcard::to_allocvec(&BodyRef { meta: &meta, state: &state }).expect("encode");
        let body = decode(SNAPSHOT_VERSION, &bytes).expect("decode");
        let node = |path: &str| body.state.tree().get(path).map(|n| (n.is_null(), n.ephemeral_owner()));
        assert_eq!(node("/n"), Some((true, Some(SessionId(1)))));
        assert_eq!(node("/a"), Some((false, Some(SessionId(1)))));
    }
}
