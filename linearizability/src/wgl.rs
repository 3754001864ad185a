//! The search for a linearization of one key: Wing & Gong's algorithm with Lowe's memo, as
//! in Porcupine.
//!
//! Walking the list of entries ([`List`]) from the head, each call entry met before the first
//! return entry is an operation that may take effect next; linearizing one lifts its two
//! entries out of the list and restarts the walk. Reaching a return entry means that
//! operation cannot wait any longer: the latest choice is undone and the walk resumes after
//! it. A set of linearized operations with the state it led to is visited once (`seen`): the
//! same pair can only fail the same way again.
//!
//! Operations of unknown outcome have no return entry: Porcupine's "returns at infinity".
//! They are tried last, only once the walk reaches a return entry, and only if invoked by then
//! (so a timed-out write costs nothing until some completed operation needs its effect). The
//! search succeeds as soon as every completed operation is linearized: an unknown operation
//! not linearized by then is put after all of them, where it is unobservable, which is
//! exactly "it never took effect" (or failed).
//!
//! One more reduction: a completed operation that may go next, fits the state and leaves it
//! unchanged (a read, a failed write) is taken without trying anything else first. Any
//! linearization from here can be rearranged to put it next: it changes no state that others
//! see, and none of the remaining operations returned before it was invoked (its call
//! precedes every remaining return). So if that fails, everything from here fails. This keeps
//! concurrent reads from multiplying the orders tried.

use std::collections::HashSet;

use crate::links::List;
use crate::timeline::{State, Timeline};

/// How a search ended.
pub(crate) enum Found {
    Linearizable,
    /// No order fits; the deepest dead end met.
    Violation(DeadEnd),
    /// The budget ran out; `deepest` operations were linearized at most.
    OutOfBudget {
        deepest: usize,
    },
}

pub(crate) struct Searched {
    pub found: Found,
    pub steps: u64,
}

/// Where the search got furthest before failing (operations as local indices).
pub(crate) struct DeadEnd {
    /// How many completed operations were linearized: the depth.
    pub completed: usize,
    /// How many of unknown outcome: the fewer the better among equally deep dead ends (it
    /// is simpler to read, and they are tried last anyway).
    pub pending: usize,
    /// The last few operations linearized, in order.
    pub tail: Vec<usize>,
    /// The state they led to.
    pub state: State,
    /// The completed operation that could not be put before its return.
    pub blocked: Option<usize>,
    /// Completed operations that could still have gone first (the first few).
    pub candidates: Vec<usize>,
}

/// How many operations a dead end keeps of its order and of its candidates: enough to read
/// what went wrong, and cheap to take at every new depth.
const SHOWN: usize = 12;

/// Where the walk is: looking for a safe operation, looking for any other, or past the list
/// among the pending operations, having stopped at return entry `stop`.
#[derive(Clone, Copy)]
enum Cursor {
    Safe(usize),
    List(usize),
    Pending { index: usize, stop: usize },
}

/// What to do after a step.
enum Next {
    Walk(Cursor),
    /// An operation was linearized: walk again from the start.
    Entered,
    /// Undo the latest choice; at a dead end, the return entry the walk stopped at.
    Back {
        stop: Option<usize>,
    },
}

/// A choice made, to undo on backtracking: where the walk was, and the state before.
struct Frame {
    at: Cursor,
    before: State,
}

/// `budget`: how many steps (one entry or pending operation looked at, or one backtrack)
/// before giving up.
pub(crate) fn search(t: &Timeline, budget: u64) -> Searched {
    let mut s = Search::new(t);
    let mut cursor = Cursor::Safe(s.list.first());
    let mut steps = 0;
    let mut deepest = 0;
    loop {
        if s.done == t.completed() {
            return Searched { found: Found::Linearizable, steps };
        }
        if steps >= budget {
            return Searched { found: Found::OutOfBudget { deepest }, steps };
        }
        steps += 1;
        deepest = deepest.max(s.stack.len());
        cursor = match s.step(cursor) {
            Next::Walk(cursor) => cursor,
            Next::Entered => Cursor::Safe(s.list.first()),
            Next::Back { stop } => {
                if let Some(stop) = stop {
                    s.note_dead_end(stop);
                }
                match s.backtrack() {
                    Some(cursor) => cursor,
                    None => {
                        // A dead end is always met before the stack empties.
                        let dead_end = s.dead_end.take().unwrap_or_else(|| s.dead_end_at(s.list.first()));
                        return Searched { found: Found::Violation(dead_end), steps };
                    }
                }
            }
        };
    }
}

struct Search<'t> {
    t: &'t Timeline,
    list: List<'t>,
    state: State,
    linearized: Bitset,
    /// How many completed operations are linearized.
    done: usize,
    stack: Vec<Frame>,
    seen: HashSet<(Bitset, State)>,
    dead_end: Option<DeadEnd>,
}

impl<'t> Search<'t> {
    fn new(t: &'t Timeline) -> Self {
        let (list, state, linearized) = (List::new(t), t.initial, Bitset::new(t.len()));
        Self { t, list, state, linearized, done: 0, stack: Vec::new(), seen: HashSet::new(), dead_end: None }
    }

    /// Looks at the operation under the cursor.
    fn step(&mut self, cursor: Cursor) -> Next {
        let t = self.t;
        match cursor {
            Cursor::Safe(node) => match self.list.call(node) {
                None => Next::Walk(Cursor::List(self.list.first())),
                Some(op) => match t.step(op, &self.state) {
                    Some(after) if after == self.state => match self.enter(op, after, cursor) {
                        true => Next::Entered,
                        // Tried before from this very state and set, and failed: so does this.
                        false => Next::Back { stop: None },
                    },
                    _ => Next::Walk(Cursor::Safe(self.list.next(node))),
                },
            },
            Cursor::List(node) => match self.list.call(node) {
                // The first return entry: only operations of unknown outcome are left to try.
                None => Next::Walk(Cursor::Pending { index: 0, stop: node }),
                Some(op) => match t.step(op, &self.state) {
                    Some(after) if after != self.state && self.enter(op, after, cursor) => Next::Entered,
                    _ => Next::Walk(Cursor::List(self.list.next(node))),
                },
            },
            Cursor::Pending { index, stop } => {
                let bound = self.list.entry(stop).map_or(u64::MAX, |e| e.time);
                let Some(p) = t.pending.get(index).filter(|p| p.invoked <= bound) else {
                    return Next::Back { stop: Some(stop) };
                };
                let ready = !self.linearized.get(p.op) && p.after.is_none_or(|a| self.linearized.get(a));
                match ready.then(|| t.step(p.op, &self.state)).flatten() {
                    Some(after) if self.enter(p.op, after, cursor) => Next::Entered,
                    _ => Next::Walk(Cursor::Pending { index: index + 1, stop }),
                }
            }
        }
    }

    /// Linearizes `op`, leading to `after`, unless that set and state were seen before.
    fn enter(&mut self, op: usize, after: State, at: Cursor) -> bool {
        self.linearized.set(op);
        if !self.seen.insert((self.linearized.clone(), after)) {
            self.linearized.clear(op);
            return false;
        }
        self.stack.push(Frame { at, before: self.state });
        self.state = after;
        if let Cursor::Safe(node) | Cursor::List(node) = at {
            self.list.lift(node);
            self.done += 1;
        }
        true
    }

    /// Undoes choices up to the latest one that has alternatives; where to walk next from
    /// there, or `None` if there is none.
    fn backtrack(&mut self) -> Option<Cursor> {
        loop {
            let frame = self.stack.pop()?;
            self.state = frame.before;
            match frame.at {
                Cursor::Safe(node) | Cursor::List(node) => {
                    self.list.unlift(node);
                    self.linearized.clear(self.list.call(node)?);
                    self.done -= 1;
                }
                Cursor::Pending { index, .. } => self.linearized.clear(self.t.pending.get(index)?.op),
            }
            match frame.at {
                // A safe operation was the only choice worth making there.
                Cursor::Safe(_) => continue,
                Cursor::List(node) => return Some(Cursor::List(self.list.next(node))),
                Cursor::Pending { index, stop } => return Some(Cursor::Pending { index: index + 1, stop }),
            }
        }
    }

    /// Keeps this dead end for the explanation if it is the deepest yet.
    fn note_dead_end(&mut self, stop: usize) {
        let pending = self.stack.len() - self.done;
        if self.dead_end.as_ref().is_none_or(|d| (self.done, d.pending) > (d.completed, pending)) {
            self.dead_end = Some(self.dead_end_at(stop));
        }
    }

    fn dead_end_at(&self, stop: usize) -> DeadEnd {
        let op_of = |frame: &Frame| match frame.at {
            Cursor::Safe(node) | Cursor::List(node) => self.list.call(node),
            Cursor::Pending { index, .. } => self.t.pending.get(index).map(|p| p.op),
        };
        let tail = self.stack[self.stack.len().saturating_sub(SHOWN)..].iter().filter_map(op_of).collect();
        let mut candidates = Vec::new();
        let mut node = self.list.first();
        while let (Some(op), true) = (self.list.call(node), candidates.len() < SHOWN) {
            candidates.push(op);
            node = self.list.next(node);
        }
        DeadEnd {
            completed: self.done,
            pending: self.stack.len() - self.done,
            tail,
            state: self.state,
            blocked: self.list.entry(stop).map(|e| e.op),
            candidates,
        }
    }
}

/// Which operations are linearized.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Bitset(Vec<u64>);

impl Bitset {
    fn new(len: usize) -> Self {
        Self(vec![0; len.div_ceil(64)])
    }

    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}
