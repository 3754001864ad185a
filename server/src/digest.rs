//! A digest of the replicated state: every node (path, data, stat) in path order and every
//! session, hashed into 64 bits, with the zxid it was taken at. Two members that have applied
//! the same log to the same zxid report the same digest; `ward check`'s convergence checker
//! compares them after healing (`GET /digest` on the admin listener, docs/operations.md).
//!
//! It walks the whole tree under the state's read lock, so it costs what a snapshot's
//! serialization costs: for checks and diagnosis, not for scraping.

use crate::state::StateMachine;
use ward_proto::{Stat, Zxid};

/// What `GET /digest` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StateDigest {
    pub zxid: Zxid,
    pub nodes: u64,
    pub sessions: u64,
    pub digest: u64,
}

impl StateDigest {
    /// `zxid 123 nodes 45 sessions 6 digest 0123456789abcdef`
    pub(crate) fn line(&self) -> String {
        format!("zxid {} nodes {} sessions {} digest {:016x}\n", self.zxid, self.nodes, self.sessions, self.digest)
    }
}

/// FNV-1a, 64 bits: simple, stable across builds and platforms (std's hasher is neither
/// promised to be), and collisions do not matter for comparing a handful of members.
struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// A length first, so that adjacent fields cannot trade bytes.
    fn field(&mut self, bytes: &[u8]) {
        self.u64(bytes.len() as u64);
        self.bytes(bytes);
    }

    fn u64(&mut self, n: u64) {
        self.bytes(&n.to_le_bytes());
    }
}

fn stat(h: &mut Fnv, s: &Stat) {
    for n in [s.czxid, s.mzxid, s.pzxid, s.ctime as u64, s.mtime as u64] {
        h.u64(n);
    }
    for n in [s.version, s.cversion, s.aversion] {
        h.u64(n as u64);
    }
    h.u64(s.ephemeral_owner.map_or(0, |o| o.0));
    h.u64(u64::from(s.data_length));
    h.u64(u64::from(s.num_children));
}

/// The digest of `state` now.
pub(crate) fn digest(state: &StateMachine) -> StateDigest {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let tree = state.tree();
    let mut nodes = 0;
    // Depth first from the root, children in name order: one order on every member.
    let mut stack = vec!["/".to_owned()];
    while let Some(path) = stack.pop() {
        let Some(node) = tree.get(&path) else { continue };
        nodes += 1;
        h.field(path.as_bytes());
        h.u64(u64::from(node.is_null()));
        h.field(node.data());
        stat(&mut h, &tree.stat(node));
        // The ACL too: members must agree on who may do what, not only on the data.
        for entry in tree.acl(node) {
            h.u64(u64::from(entry.perms as u32));
            h.field(entry.id.scheme.as_bytes());
            h.field(entry.id.id.as_bytes());
        }
        let base = if path == "/" { "" } else { path.as_str() };
        let children: Vec<String> = node.children.iter().map(|name| format!("{base}/{name}")).collect();
        stack.extend(children.into_iter().rev());
    }
    let mut sessions = 0;
    for (id, record) in state.sessions() {
        sessions += 1;
        h.u64(id.0);
        h.u64(u64::from(record.timeout_ms));
        h.bytes(&record.secret.0);
        h.field(record.owner.as_deref().unwrap_or("").as_bytes());
        h.u64(u64::from(record.owner.is_some()));
    }
    StateDigest { zxid: state.last_zxid(), nodes, sessions, digest: h.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, CommandOp};
    use ward_proto::{CreateMode, Op, SessionId, SessionSecret};

    fn apply_all(state: &mut StateMachine, data: &[u8]) {
        let open = CommandOp::CreateSession { timeout_ms: 10_000, secret: SessionSecret([7; 16]), owner: None };
        state.apply_command(&Command { time_ms: 1, session: SessionId(0), xid: 0, op: open });
        let session = SessionId(1);
        for (xid, path) in ["/a", "/a/b", "/c"].into_iter().enumerate() {
            let op = Op::Create { path: path.into(), data: data.to_vec(), mode: CreateMode::Persistent };
            state.apply_command(&Command { time_ms: 2, session, xid: xid as u64 + 1, op: CommandOp::Op(op) });
        }
    }

    #[test]
    fn the_same_commands_give_the_same_digest_and_any_difference_another() {
        let (mut one, mut two, mut other) = (StateMachine::default(), StateMachine::default(), StateMachine::default());
        apply_all(&mut one, b"x");
        apply_all(&mut two, b"x");
        apply_all(&mut other, b"y");
        assert_eq!(digest(&one), digest(&two));
        assert_eq!((digest(&one).nodes, digest(&one).sessions, digest(&one).zxid), (4, 1, 4));
        assert_ne!(digest(&one).digest, digest(&other).digest);
        assert_ne!(digest(&one).digest, digest(&StateMachine::default()).digest);
        assert!(digest(&one).line().starts_with("zxid 4 nodes 4 sessions 1 digest "), "{}", digest(&one).line());
    }
}
