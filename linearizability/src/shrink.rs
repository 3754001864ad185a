//! The shortest slice of one key's history that still has no linearization: a violation
//! shown with a handful of operations rather than the thousands of a run.
//!
//! Each step removes only what cannot turn a linearizable history into one that fails, so
//! the slice failing proves that the whole history fails:
//! 1. **The end.** The history up to a time T: operations invoked after T left out, and one
//!    still running at T taken as one of unknown outcome. Operations and outcomes only add
//!    constraints, so a prefix that fails means the whole fails; the shortest is found by
//!    bisection.
//! 2. **The start.** At a quiet moment S (nothing with a known outcome running, no create or
//!    delete before it) every operation known to have ended before S is ordered before
//!    every one after it, and the register holds what the write with the highest
//!    acknowledged version left (each write adds one to the version), or that and then
//!    one of the operations of unknown outcome invoked before S. The slice from S starts in
//!    that state and keeps those operations (still of unknown outcome: each may take
//!    effect first, later or never); the latest S that still fails is found by bisection (a
//!    later S drops constraints only).
//! 3. **Observations.** A read, or a write that failed (bad version, no node), changes
//!    nothing: one whose removal keeps the slice failing is not needed to show the violation.
//!    Removed in halving chunks, as delta debugging does; before step 2 as well, since fewer
//!    operations leave more quiet moments.

use crate::history::{Completion, History, OpId, Record};
use crate::model::{Node, Op, Outcome};
use crate::{check, Verdict};

/// At most this many searches go into one slice; past it the slice found so far is kept.
const MAX_SEARCHES: usize = 400;

/// A failing slice of one key's history.
#[derive(Clone, Debug)]
pub struct Slice {
    pub key: String,
    /// What the key held at the start of the slice.
    pub initial: Option<Node>,
    /// The acknowledged write that left `initial`, when the slice starts after it (`None`:
    /// the history's own initial state).
    pub initial_from: Option<OpId>,
    /// The slice's operations as ids into the history it was cut from, in invocation order.
    pub ops: Vec<OpId>,
    /// The operations of `ops` that the slice takes as of unknown outcome (they were still
    /// running at its end).
    pub cut_open: Vec<OpId>,
    /// The slice on its own, ids from 0 in the order of `ops`: check it, or print it.
    pub history: History,
}

/// The state a slice starts in, and the write that left it.
type Start = (Option<Node>, Option<OpId>);

/// One operation of the slice: which, and its completion as the slice sees it.
#[derive(Clone)]
struct Part<'a> {
    id: OpId,
    record: &'a Record,
    completion: Option<&'a Completion>,
}

struct Shrinker<'a> {
    key: &'a str,
    budget: u64,
    searches: usize,
}

impl Shrinker<'_> {
    fn history(&self, initial: &Option<Node>, parts: &[Part<'_>]) -> History {
        let mut h = History::new();
        h.set_initial(self.key, initial.clone());
        for p in parts {
            let id = h.invoke(p.record.process, self.key, p.record.op.clone(), p.record.invoked);
            if let Some(done) = p.completion {
                // Taken from a well-formed history.
                let _ = h.complete(id, done.outcome.clone(), done.at);
            }
        }
        h
    }

    /// Whether the slice is shown to fail (a search out of budget shows nothing).
    fn fails(&mut self, initial: &Option<Node>, parts: &[Part<'_>]) -> bool {
        self.searches += 1;
        let report = check(&self.history(initial, parts), self.budget);
        report.keys.iter().any(|k| matches!(k.verdict, Verdict::Violation(_)))
    }

    fn spent(&self) -> bool {
        self.searches >= MAX_SEARCHES
    }
}

/// The operations of `all` invoked by `end`, those running past it cut open.
fn prefix<'a>(all: &[Part<'a>], end: u64) -> Vec<Part<'a>> {
    all.iter()
        .filter(|p| p.record.invoked <= end)
        .map(|p| Part { completion: p.completion.filter(|c| c.at <= end), ..p.clone() })
        .collect()
}

/// If every operation before `parts[from]` either ended before it began or is of unknown
/// outcome (as the slice sees it), and none is a create or delete: the state there, and the
/// slice from there (see the module's doc), which keeps the operations of unknown outcome:
/// each may still take effect, or may have taken effect last before the quiet moment (the
/// slice can apply it first).
fn quiet<'a>(parts: &[Part<'a>], from: usize, initial: &Start) -> Option<(Start, Vec<Part<'a>>)> {
    let start = parts.get(from)?.record.invoked;
    let mut state = initial.clone();
    let mut carried = Vec::new();
    for p in &parts[..from] {
        let Some(done) = p.completion else {
            carried.push(p.clone());
            continue;
        };
        if done.at >= start {
            return None;
        }
        match (&p.record.op, &done.outcome) {
            (Op::Create { .. } | Op::Delete { .. }, _) => return None,
            (Op::Write { value } | Op::Cas { value, .. }, Outcome::Written { version })
                if state.0.as_ref().is_none_or(|n| *version > n.version) =>
            {
                state = (Some(Node { value: value.clone(), version: *version }), Some(p.id));
            }
            _ => {}
        }
    }
    if carried.iter().any(|p| matches!(p.record.op, Op::Create { .. } | Op::Delete { .. })) {
        return None;
    }
    carried.extend_from_slice(&parts[from..]);
    Some((state, carried))
}

/// The shortest failing slice of `key` in `history` found within a few hundred searches of
/// `budget` steps each; `None` when the key's whole history is not shown to fail.
pub fn shrink(history: &History, key: &str, budget: u64) -> Option<Slice> {
    let mut s = Shrinker { key, budget, searches: 0 };
    let all: Vec<Part<'_>> = history
        .records()
        .iter()
        .enumerate()
        .filter(|(_, r)| r.key == key)
        .map(|(i, r)| Part { id: OpId::at(i), record: r, completion: r.completion.as_ref() })
        .collect();
    // Recorded in any order (per client, say): the steps below read it in invocation order.
    let mut all = all;
    all.sort_by_key(|p| (p.record.invoked, p.id));
    let mut start: Start = (history.initial(key).cloned(), None);
    let initial = &start.0;
    if !s.fails(initial, &all) {
        return None;
    }
    // 1. The end: the first completion at which the prefix fails.
    let mut ends: Vec<u64> = all.iter().filter_map(|p| p.completion.map(|c| c.at)).collect();
    ends.sort_unstable();
    ends.dedup();
    let (mut lo, mut hi) = (0, ends.len().saturating_sub(1));
    while lo < hi && !s.spent() {
        let mid = (lo + hi) / 2;
        if s.fails(initial, &prefix(&all, ends[mid])) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut parts = match ends.get(hi) {
        Some(&end) if hi + 1 < ends.len() => prefix(&all, end),
        _ => all.clone(),
    };
    // 3. Observations, before the start: fewer operations leave more quiet moments.
    drop_observations(&mut s, &start.0, &mut parts);
    // 2. The start: the latest quiet moment from which the slice still fails.
    let quiet: Vec<(Start, Vec<Part<'_>>)> = (1..parts.len()).filter_map(|i| quiet(&parts, i, &start)).collect();
    let (mut lo, mut hi) = (0, quiet.len());
    while lo < hi && !s.spent() {
        let mid = (lo + hi) / 2;
        let (state, from_there) = &quiet[mid];
        if s.fails(&state.0, from_there) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if let Some((state, from_there)) = lo.checked_sub(1).and_then(|i| quiet.get(i)) {
        parts = from_there.clone();
        start = state.clone();
        drop_observations(&mut s, &start.0, &mut parts);
    }
    let cut_open = parts.iter().filter(|p| p.completion.is_none() && p.record.completion.is_some()).map(|p| p.id);
    let cut_open = cut_open.collect();
    let history = s.history(&start.0, &parts);
    let (initial, initial_from) = start;
    Some(Slice {
        key: key.to_owned(),
        initial,
        initial_from,
        ops: parts.iter().map(|p| p.id).collect(),
        cut_open,
        history,
    })
}

/// Whether the operation, as the slice sees it, changed nothing: a read (answered or not),
/// or a write that failed (bad version, no node, node exists).
fn observation(part: &Part<'_>) -> bool {
    part.record.op == Op::Read || part.completion.is_some_and(|c| !c.outcome.is_effect())
}

/// Leaves out the observations the slice does not need to fail, in halving chunks.
fn drop_observations(s: &mut Shrinker<'_>, initial: &Option<Node>, parts: &mut Vec<Part<'_>>) {
    let mut chunk = parts.len().div_ceil(2).max(1);
    loop {
        let mut at = 0;
        while at < parts.len() && !s.spent() {
            let chosen: Vec<usize> = (at..parts.len()).filter(|&i| observation(&parts[i])).take(chunk).collect();
            let Some(&last) = chosen.last() else { break };
            let kept: Vec<Part<'_>> =
                parts.iter().enumerate().filter(|(i, _)| !chosen.contains(i)).map(|(_, p)| p.clone()).collect();
            if s.fails(initial, &kept) {
                *parts = kept;
            } else {
                at = last + 1;
            }
        }
        if chunk == 1 || s.spent() {
            return;
        }
        chunk = chunk.div_ceil(2);
    }
}
