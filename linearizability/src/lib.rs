//! A linearizability checker for histories of operations on registers: one register per key
//! (a znode path), with ZooKeeper's versions, created, written, compared-and-set, deleted.
//!
//! ```
//! use ward_linearizability::{check, History, Op, Outcome, Node};
//!
//! let mut h = History::new();
//! h.set_initial("/k", Some(Node { value: b"a".to_vec(), version: 0 }));
//! let w = h.invoke(1, "/k", Op::Write { value: b"b".to_vec() }, 10);
//! h.complete(w, Outcome::Written { version: 1 }, 20).unwrap();
//! // Starts after the write returned, yet sees the value before it: a stale read.
//! let r = h.invoke(2, "/k", Op::Read, 30);
//! h.complete(r, Outcome::Value(Node { value: b"a".to_vec(), version: 0 }), 40).unwrap();
//! assert!(!check(&h, 1_000_000).is_linearizable());
//! ```
//!
//! # Layout
//! * [`model`]: the sequential specification: [`Op`], [`Outcome`], [`Node`].
//! * [`history`]: recording: [`History`], invocations and completions on a [`Clock`].
//! * `timeline`: one key's operations prepared for the search (entries, interned values,
//!   operations of unknown outcome).
//! * `links`: the time-ordered list of call and return entries the search walks (dancing
//!   links).
//! * `wgl`: the search (Wing & Gong, Lowe's memo, as in Porcupine), within a step budget.
//! * [`report`]: per-key [`Verdict`]s and the explanation of a violation.
//! * [`sample`]: seeded valid histories, for benchmarks.
//! * [`mod@shrink`]: the shortest failing slice of a key's history, to show a violation with a
//!   handful of operations.
//!
//! Linearizability is local (Herlihy & Wing): a history is linearizable if and only if each
//! key's part is, so keys are checked one by one.

pub mod history;
mod links;
pub mod model;
pub mod report;
pub mod sample;
pub mod shrink;
mod timeline;
mod wgl;

#[cfg(test)]
mod tests;

pub use history::{Clock, Completion, History, HistoryError, OpId, Record};
pub use model::{Node, Op, Outcome};
pub use report::{KeyReport, Report, Verdict, Violation};
pub use shrink::{shrink, Slice};

/// Checks each key of `history`. `budget` bounds the search per key, in steps (one step looks
/// at one candidate operation; a linearizable history of n operations takes a few n when its
/// concurrency is low): a key whose search runs out is reported [`Verdict::Unknown`] rather
/// than left running.
pub fn check(history: &History, budget: u64) -> Report {
    let keys = history
        .by_key()
        .into_iter()
        .map(|(key, ids)| {
            let timeline = timeline::Timeline::build(history, key, &ids);
            let searched = wgl::search(&timeline, budget);
            KeyReport::new(history, key, &timeline, searched)
        })
        .collect();
    Report { keys }
}
