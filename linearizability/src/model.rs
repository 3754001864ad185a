//! The sequential specification: one register per key, with ZooKeeper's version rules.
//!
//! A key is absent or holds a [`Node`]: a value and a version. Create sets version 0, each
//! write (conditional or not) adds one, delete makes the key absent again (so a later create
//! starts over at 0). Every operation is deterministic: `apply` gives the one outcome an
//! operation has in a state, which is all the checker needs to test an observed outcome.
//!
//! The types are generic over the value so that the search can run on small interned value
//! ids (`timeline`); callers use the default, `Vec<u8>`.

/// What a present key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node<V = Vec<u8>> {
    pub value: V,
    pub version: u64,
}

/// An operation on one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op<V = Vec<u8>> {
    /// getData: [`Outcome::Value`] or [`Outcome::NoNode`].
    Read,
    /// create: [`Outcome::Created`] (version 0) or [`Outcome::NodeExists`].
    Create { value: V },
    /// setData with version -1: [`Outcome::Written`] or [`Outcome::NoNode`].
    Write { value: V },
    /// setData with an expected version: [`Outcome::Written`], [`Outcome::BadVersion`] or
    /// [`Outcome::NoNode`].
    Cas { expected_version: u64, value: V },
    /// delete, conditional when `expected_version` is given: [`Outcome::Deleted`],
    /// [`Outcome::BadVersion`] or [`Outcome::NoNode`].
    Delete { expected_version: Option<u64> },
}

/// What an operation returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome<V = Vec<u8>> {
    Value(Node<V>),
    Created,
    /// The version the write produced.
    Written {
        version: u64,
    },
    Deleted,
    BadVersion,
    NoNode,
    NodeExists,
}

impl<V> Outcome<V> {
    /// Whether the operation changed the register (the only outcomes an operation of unknown
    /// outcome matters by: a failed one is the same as one that never ran).
    pub(crate) fn is_effect(&self) -> bool {
        matches!(self, Outcome::Created | Outcome::Written { .. } | Outcome::Deleted)
    }
}

/// Whether `outcome` is one `op` can have at all (a `Read` cannot return `Created`): a caller
/// mistake, refused when the history is recorded rather than reported as a violation.
pub(crate) fn fits<V>(op: &Op<V>, outcome: &Outcome<V>) -> bool {
    use Outcome as O;
    match op {
        Op::Read => matches!(outcome, O::Value(_) | O::NoNode),
        Op::Create { .. } => matches!(outcome, O::Created | O::NodeExists),
        Op::Write { .. } => matches!(outcome, O::Written { .. } | O::NoNode),
        Op::Cas { .. } => matches!(outcome, O::Written { .. } | O::BadVersion | O::NoNode),
        Op::Delete { expected_version } => {
            matches!(outcome, O::Deleted | O::NoNode)
                || (expected_version.is_some() && matches!(outcome, O::BadVersion))
        }
    }
}

/// The state after `op` in `state`, and what `op` returns there.
pub(crate) fn apply<V: Clone>(state: &Option<Node<V>>, op: &Op<V>) -> (Option<Node<V>>, Outcome<V>) {
    let unchanged = |outcome| (state.clone(), outcome);
    match (op, state) {
        (Op::Read, Some(node)) => unchanged(Outcome::Value(node.clone())),
        (Op::Read, None) => unchanged(Outcome::NoNode),
        (Op::Create { value }, None) => (Some(Node { value: value.clone(), version: 0 }), Outcome::Created),
        (Op::Create { .. }, Some(_)) => unchanged(Outcome::NodeExists),
        (Op::Write { value }, Some(node)) => written(value, node.version),
        (Op::Cas { expected_version, value }, Some(node)) if node.version == *expected_version => {
            written(value, node.version)
        }
        (Op::Cas { .. }, Some(_)) => unchanged(Outcome::BadVersion),
        (Op::Delete { expected_version }, Some(node)) => match expected_version {
            Some(expected) if *expected != node.version => unchanged(Outcome::BadVersion),
            _ => (None, Outcome::Deleted),
        },
        (Op::Write { .. } | Op::Cas { .. } | Op::Delete { .. }, None) => unchanged(Outcome::NoNode),
    }
}

fn written<V: Clone>(value: &V, old_version: u64) -> (Option<Node<V>>, Outcome<V>) {
    // ZooKeeper's version is an i32 that wraps; a history never gets near either limit.
    let version = old_version.wrapping_add(1);
    (Some(Node { value: value.clone(), version }), Outcome::Written { version })
}

impl<V> Op<V> {
    /// The same operation over other values (interning).
    pub(crate) fn map<W>(&self, f: impl FnOnce(&V) -> W) -> Op<W> {
        match self {
            Op::Read => Op::Read,
            Op::Create { value } => Op::Create { value: f(value) },
            Op::Write { value } => Op::Write { value: f(value) },
            Op::Cas { expected_version, value } => Op::Cas { expected_version: *expected_version, value: f(value) },
            Op::Delete { expected_version } => Op::Delete { expected_version: *expected_version },
        }
    }
}

impl<V> Outcome<V> {
    /// The same outcome over other values (interning).
    pub(crate) fn map<W>(&self, f: impl FnOnce(&V) -> W) -> Outcome<W> {
        match self {
            Outcome::Value(node) => Outcome::Value(Node { value: f(&node.value), version: node.version }),
            Outcome::Created => Outcome::Created,
            Outcome::Written { version } => Outcome::Written { version: *version },
            Outcome::Deleted => Outcome::Deleted,
            Outcome::BadVersion => Outcome::BadVersion,
            Outcome::NoNode => Outcome::NoNode,
            Outcome::NodeExists => Outcome::NodeExists,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(value: u32, version: u64) -> Option<Node<u32>> {
        Some(Node { value, version })
    }

    #[test]
    fn versions_follow_zookeeper() {
        let (s, out) = apply(&None, &Op::Create { value: 1 });
        assert_eq!((s, out), (node(1, 0), Outcome::Created));
        let (s, out) = apply(&s, &Op::Write { value: 2 });
        assert_eq!((s, out), (node(2, 1), Outcome::Written { version: 1 }));
        assert_eq!(apply(&s, &Op::Cas { expected_version: 0, value: 3 }).1, Outcome::BadVersion);
        let (s, out) = apply(&s, &Op::Cas { expected_version: 1, value: 3 });
        assert_eq!((s, out), (node(3, 2), Outcome::Written { version: 2 }));
        assert_eq!(apply(&s, &Op::Delete { expected_version: Some(1) }).1, Outcome::BadVersion);
        let (s, out) = apply(&s, &Op::Delete { expected_version: None });
        assert_eq!((s, out), (None, Outcome::Deleted));
        assert_eq!(apply(&s, &Op::Write { value: 4 }).1, Outcome::NoNode);
        assert_eq!(apply(&s, &Op::Create { value: 5 }).0, node(5, 0));
    }
}
