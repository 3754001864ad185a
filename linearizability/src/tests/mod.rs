//! Scenario tests (small hand-written histories) and random histories generated from a
//! sequential execution.

mod brute;
mod random;
mod scenarios;
mod shrink;

use crate::{check, History, Node, Op, OpId, Outcome, Verdict};

/// Enough for every test history here; the large random ones report their use.
const BUDGET: u64 = 10_000_000;

const KEY: &str = "/k";

fn bytes(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn read(value: &str, version: u64) -> Outcome {
    Outcome::Value(Node { value: bytes(value), version })
}

fn write(value: &str) -> Op {
    Op::Write { value: bytes(value) }
}

fn cas(expected_version: u64, value: &str) -> Op {
    Op::Cas { expected_version, value: bytes(value) }
}

/// A history on [`KEY`], which starts out holding "a" at version 0.
struct Script(History);

impl Script {
    fn new() -> Self {
        let mut h = History::new();
        h.set_initial(KEY, Some(Node { value: bytes("a"), version: 0 }));
        Self(h)
    }

    /// An operation that ran from `start` to `end` and returned `outcome`.
    fn done(&mut self, process: u64, op: Op, start: u64, end: u64, outcome: Outcome) -> OpId {
        let id = self.0.invoke(process, KEY, op, start);
        self.0.complete(id, outcome, end).expect("a well-formed completion");
        id
    }

    /// An operation sent at `start` whose outcome never came.
    fn lost(&mut self, process: u64, op: Op, start: u64) -> OpId {
        self.0.invoke(process, KEY, op, start)
    }

    fn verdict(&self) -> Verdict {
        let report = check(&self.0, BUDGET);
        report.get(KEY).expect("the key was checked").verdict.clone()
    }
}
