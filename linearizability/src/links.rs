//! The completed operations' call and return entries as a doubly linked list in time order,
//! from which the search lifts an operation's two entries and puts them back in reverse
//! order (Knuth's dancing links: undoing is two relinks, no copying).

use crate::timeline::{Entry, Timeline};

/// Node 0 is the head, nodes `1..=n` the entries in order, node `n + 1` the tail.
pub(crate) struct List<'t> {
    t: &'t Timeline,
    next: Vec<usize>,
    prev: Vec<usize>,
    tail: usize,
}

impl<'t> List<'t> {
    pub fn new(t: &'t Timeline) -> Self {
        let tail = t.entries.len() + 1;
        let next = (1..=tail).chain([tail]).collect();
        let prev = [0].into_iter().chain(0..tail).collect();
        Self { t, next, prev, tail }
    }

    pub fn first(&self) -> usize {
        self.next[0]
    }

    pub fn next(&self, node: usize) -> usize {
        self.next[node]
    }

    /// The entry at `node`; `None` at the tail.
    pub fn entry(&self, node: usize) -> Option<Entry> {
        node.checked_sub(1).and_then(|i| self.t.entries.get(i)).copied()
    }

    /// The operation whose call entry is at `node`, if it is one.
    pub fn call(&self, node: usize) -> Option<usize> {
        self.entry(node).filter(|e| e.call).map(|e| e.op)
    }

    /// Takes a call entry and its operation's return entry out of the list.
    pub fn lift(&mut self, call: usize) {
        self.unlink(call);
        self.unlink(self.return_node(call));
    }

    /// Undoes the latest `lift`, which must have been of `call`.
    pub fn unlift(&mut self, call: usize) {
        self.relink(self.return_node(call));
        self.relink(call);
    }

    fn return_node(&self, call: usize) -> usize {
        self.entry(call).map_or(self.tail, |e| self.t.return_entry[e.op] + 1)
    }

    fn unlink(&mut self, node: usize) {
        let (prev, next) = (self.prev[node], self.next[node]);
        self.next[prev] = next;
        self.prev[next] = prev;
    }

    /// A node unlinked last comes back where it was: its own links were left untouched.
    fn relink(&mut self, node: usize) {
        let (prev, next) = (self.prev[node], self.next[node]);
        self.next[prev] = node;
        self.prev[next] = node;
    }
}
