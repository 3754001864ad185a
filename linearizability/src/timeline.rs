//! One key's operations made ready for the search: values interned, completed operations as
//! a time-ordered list of call and return entries, operations of unknown outcome apart.
//!
//! Two reductions keep the search small without changing its answer:
//! * Values no completed operation ever returned all become one id, [`UNOBSERVED`]: the
//!   outcomes depend on a value only through a read returning it, so states that differ only
//!   in unobserved values are interchangeable, and the memo may merge them.
//! * Operations of unknown outcome that are then identical (say, writes of unobserved values)
//!   are used in invocation order only ([`Pending::after`]): such operations have no
//!   deadline, so any linearization that uses some of them can use the earliest-invoked ones
//!   instead. Without this, k timed-out writes cost up to 2^k orders at every dead end.

use std::collections::HashMap;

use crate::history::{History, OpId, Record};
use crate::model::{apply, Node, Op, Outcome};

/// A value as the search sees it: an index into the key's distinct observed values.
pub(crate) type Value = usize;
pub(crate) type State = Option<Node<Value>>;

/// Stands for every value that no completed operation returned.
pub(crate) const UNOBSERVED: Value = 0;

/// A call or return entry of a completed operation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// The operation's local index.
    pub op: usize,
    pub call: bool,
    pub time: u64,
}

/// An operation of unknown outcome, to be linearized only if that helps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub op: usize,
    pub invoked: u64,
    /// An identical pending operation invoked earlier, which must be linearized first.
    pub after: Option<usize>,
}

/// One key's operations. Local indices: the completed operations are `0..completed`, those
/// of unknown outcome follow, in invocation order.
pub(crate) struct Timeline {
    /// Local index to the operation in the history.
    pub ids: Vec<OpId>,
    ops: Vec<Op<Value>>,
    /// The observed outcome of each completed operation.
    outcomes: Vec<Outcome<Value>>,
    pub initial: State,
    /// Call and return entries of the completed operations, by time; at equal times calls
    /// come first, so that touching intervals count as concurrent (clock resolution).
    pub entries: Vec<Entry>,
    /// The position in `entries` of each completed operation's return.
    pub return_entry: Vec<usize>,
    pub pending: Vec<Pending>,
    /// The observed values, by id (from 1).
    observed: Vec<Vec<u8>>,
}

impl Timeline {
    /// `ids`: the key's operations in the history.
    pub fn build(history: &History, key: &str, ids: &[OpId]) -> Self {
        let mut records: Vec<(OpId, &Record)> = ids
            .iter()
            .filter_map(|&id| history.get(id).map(|r| (id, r)))
            // A read of unknown outcome changed nothing and told nothing.
            .filter(|(_, r)| r.completion.is_some() || r.op != Op::Read)
            .collect();
        // The local order: completed operations, then pending ones by invocation.
        records.sort_by_key(|&(id, r)| match r.completion {
            Some(_) => (false, 0, id),
            None => (true, r.invoked, id),
        });
        let values = Interner::observed(records.iter().filter_map(|(_, r)| match r.completion.as_ref()?.outcome {
            Outcome::Value(ref node) => Some(node.value.as_slice()),
            _ => None,
        }));

        let ops: Vec<Op<Value>> = records.iter().map(|(_, r)| r.op.map(|v| values.id(v))).collect();
        let mut outcomes = Vec::new();
        let mut entries = Vec::new();
        let mut pending = Vec::new();
        let mut last_alike: HashMap<Op<Value>, usize> = HashMap::new();
        for (local, (_, r)) in records.iter().enumerate() {
            match &r.completion {
                Some(done) => {
                    outcomes.push(done.outcome.map(|v| values.id(v)));
                    entries.push(Entry { op: local, call: true, time: r.invoked });
                    entries.push(Entry { op: local, call: false, time: done.at });
                }
                None => {
                    let after = last_alike.insert(ops[local], local);
                    pending.push(Pending { op: local, invoked: r.invoked, after });
                }
            }
        }
        entries.sort_by_key(|e| (e.time, !e.call, e.op));
        let mut return_entry = vec![0; outcomes.len()];
        for (position, entry) in entries.iter().enumerate().filter(|(_, e)| !e.call) {
            return_entry[entry.op] = position;
        }

        let initial = history.initial(key).map(|node| Node { value: values.id(&node.value), version: node.version });
        let ids = records.iter().map(|&(id, _)| id).collect();
        Self { ids, ops, outcomes, initial, entries, return_entry, pending, observed: values.by_id() }
    }

    /// The bytes of an observed value; `None` for [`UNOBSERVED`].
    pub fn value(&self, id: Value) -> Option<&[u8]> {
        self.observed.get(id.checked_sub(1)?).map(Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn completed(&self) -> usize {
        self.outcomes.len()
    }

    /// The state after linearizing operation `op` in `state`, if it can take effect there:
    /// a completed operation only with the outcome it was seen to have, one of unknown
    /// outcome only if it changes the register (failing is the same as never running).
    pub fn step(&self, op: usize, state: &State) -> Option<State> {
        let (after, outcome) = apply(state, self.ops.get(op)?);
        let fits = match self.outcomes.get(op) {
            Some(seen) => *seen == outcome,
            None => outcome.is_effect(),
        };
        fits.then_some(after)
    }
}

/// Observed values to small ids; [`UNOBSERVED`] for the rest.
struct Interner<'a> {
    ids: HashMap<&'a [u8], Value>,
}

impl<'a> Interner<'a> {
    fn observed(values: impl Iterator<Item = &'a [u8]>) -> Self {
        let mut ids = HashMap::new();
        for value in values {
            let next = ids.len() + 1;
            ids.entry(value).or_insert(next);
        }
        Self { ids }
    }

    fn by_id(&self) -> Vec<Vec<u8>> {
        let mut values = vec![Vec::new(); self.ids.len()];
        for (value, &id) in &self.ids {
            values[id - 1] = value.to_vec();
        }
        values
    }

    fn id(&self, value: &[u8]) -> Value {
        self.ids.get(value).copied().unwrap_or(UNOBSERVED)
    }
}
