//! What a check found, per key, and the words that explain a violation.

use std::fmt;

use crate::history::{History, OpId, Record};
use crate::model::{Op, Outcome};
use crate::timeline::{State, Timeline};
use crate::wgl::{DeadEnd, Found, Searched};

/// The verdicts on every key of a history.
#[derive(Clone, Debug)]
pub struct Report {
    /// In key order.
    pub keys: Vec<KeyReport>,
}

#[derive(Clone, Debug)]
pub struct KeyReport {
    pub key: String,
    /// Operations with a known outcome.
    pub completed: usize,
    /// Operations of unknown outcome that could have changed the register.
    pub pending: usize,
    /// Steps the search took (see [`crate::check`]'s budget).
    pub steps: u64,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    Violation(Violation),
    /// The search ran out of budget before deciding.
    Unknown {
        reason: String,
    },
}

/// A key's history has no linearization. The search's deepest dead end: an order that fits,
/// with `linearized` completed operations, after which the completed operation `blocked` must
/// take effect before it returns and cannot, whichever operation still allowed goes first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub linearized: usize,
    /// The last operations of that order (a dozen at most).
    pub tail: Vec<OpId>,
    pub blocked: Option<OpId>,
    /// The same, with each operation written out.
    pub explanation: String,
}

impl Report {
    /// Whether every key was found linearizable (not `Unknown`, not `Violation`).
    pub fn is_linearizable(&self) -> bool {
        self.keys.iter().all(|k| k.verdict == Verdict::Linearizable)
    }

    pub fn get(&self, key: &str) -> Option<&KeyReport> {
        self.keys.iter().find(|k| k.key == key)
    }

    pub fn violations(&self) -> impl Iterator<Item = &Violation> {
        self.keys.iter().filter_map(|k| match &k.verdict {
            Verdict::Violation(v) => Some(v),
            _ => None,
        })
    }
}

impl KeyReport {
    pub(crate) fn new(history: &History, key: &str, t: &Timeline, searched: Searched) -> Self {
        let verdict = match searched.found {
            Found::Linearizable => Verdict::Linearizable,
            Found::OutOfBudget { deepest } => Verdict::Unknown {
                reason: format!(
                    "gave up after {} steps with at most {deepest} of {} operations linearized",
                    searched.steps,
                    t.len()
                ),
            },
            Found::Violation(dead_end) => Verdict::Violation(violation(history, key, t, &dead_end)),
        };
        let (completed, pending) = (t.completed(), t.pending.len());
        Self { key: key.to_owned(), completed, pending, steps: searched.steps, verdict }
    }
}

fn violation(history: &History, key: &str, t: &Timeline, dead_end: &DeadEnd) -> Violation {
    let id = |local: usize| t.ids[local];
    let describe = |local: usize| {
        let line = history.get(id(local)).map_or_else(String::new, |r| record(id(local), r));
        format!("  {line}")
    };
    let mut lines = vec![format!("{key}: not linearizable.")];
    if !dead_end.tail.is_empty() {
        let (n, all) = (dead_end.completed, t.completed());
        lines.push(format!("The longest order found takes {n} of {all} completed operations, ending with:"));
        lines.extend(dead_end.tail.iter().map(|&op| describe(op)));
    }
    lines.push(format!("From {}, this must take effect before it returns, and cannot:", state(t, &dead_end.state)));
    lines.extend(dead_end.blocked.map(describe));
    let others: Vec<_> = dead_end.candidates.iter().filter(|&&c| Some(c) != dead_end.blocked).collect();
    if !others.is_empty() {
        lines.push("not even after any of these, which could still go first:".to_owned());
        lines.extend(others.into_iter().map(|&op| describe(op)));
    }
    Violation {
        linearized: dead_end.completed,
        tail: dead_end.tail.iter().map(|&op| id(op)).collect(),
        blocked: dead_end.blocked.map(id),
        explanation: lines.join("\n"),
    }
}

/// `#12 p3 write "b" -> version 2 [1000, 1500]`; `-> ? [1000, ...)` for an unknown outcome.
fn record(id: OpId, r: &Record) -> String {
    let op = match &r.op {
        Op::Read => "read".to_owned(),
        Op::Create { value } => format!("create {}", bytes(value)),
        Op::Write { value } => format!("write {}", bytes(value)),
        Op::Cas { expected_version, value } => format!("write {} if v{expected_version}", bytes(value)),
        Op::Delete { expected_version: None } => "delete".to_owned(),
        Op::Delete { expected_version: Some(v) } => format!("delete if v{v}"),
    };
    let (outcome, end) = match &r.completion {
        None => ("?".to_owned(), "...)".to_owned()),
        Some(done) => (outcome(&done.outcome), format!("{}]", done.at)),
    };
    format!("#{} p{} {op} -> {outcome} [{}, {end}", id.index(), r.process, r.invoked)
}

fn outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Value(node) => format!("{} v{}", bytes(&node.value), node.version),
        Outcome::Created => "created".to_owned(),
        Outcome::Written { version } => format!("version {version}"),
        Outcome::Deleted => "deleted".to_owned(),
        Outcome::BadVersion => "bad version".to_owned(),
        Outcome::NoNode => "no node".to_owned(),
        Outcome::NodeExists => "node exists".to_owned(),
    }
}

fn state(t: &Timeline, state: &State) -> String {
    match state {
        None => "the key absent".to_owned(),
        Some(node) => match t.value(node.value) {
            Some(value) => format!("{} v{}", bytes(value), node.version),
            None => format!("a value never read, v{}", node.version),
        },
    }
}

/// Printable ASCII quoted, anything else in hex; long values cut.
fn bytes(value: &[u8]) -> String {
    const MAX: usize = 24;
    let shown = &value[..value.len().min(MAX)];
    let more = if value.len() > MAX { "..." } else { "" };
    if shown.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("{:?}{more}", String::from_utf8_lossy(shown))
    } else {
        let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}{more}")
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for k in &self.keys {
            let (c, p, s) = (k.completed, k.pending, k.steps);
            write!(f, "{}: {c} completed, {p} unknown, {s} steps: ", k.key)?;
            match &k.verdict {
                Verdict::Linearizable => writeln!(f, "linearizable")?,
                Verdict::Violation(v) => writeln!(f, "VIOLATION\n{}", v.explanation)?,
                Verdict::Unknown { reason } => writeln!(f, "unknown ({reason})")?,
            }
        }
        Ok(())
    }
}
