//! What a run found: one [`Verdict`] per checker, with counts, and each violation with the
//! shortest slice of history that shows it. Text for people, JSON for tools.

use super::nemesis::FaultEvent;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// One checker's verdict.
#[derive(Clone, Debug)]
pub struct Verdict {
    pub checker: &'static str,
    /// The operations it looked at.
    pub operations: usize,
    pub violations: Vec<Finding>,
    /// What it could not decide (a search out of budget, a member that did not answer):
    /// not a pass.
    pub undecided: Vec<String>,
}

impl Verdict {
    pub fn new(checker: &'static str) -> Verdict {
        Verdict { checker, operations: 0, violations: Vec::new(), undecided: Vec::new() }
    }

    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.undecided.is_empty()
    }

    pub fn status(&self) -> &'static str {
        match (self.violations.is_empty(), self.undecided.is_empty()) {
            (false, _) => "FAILED",
            (true, false) => "UNDECIDED",
            (true, true) => "passed",
        }
    }
}

/// A violation: what is wrong, the history lines that show it, and where on the run's
/// timeline it happened.
#[derive(Clone, Debug)]
pub struct Finding {
    pub what: String,
    pub slice: Vec<String>,
    pub marks: Vec<Mark>,
}

/// Where a violation shows on the timeline: a process's operation (or, without a
/// process, every lane), over `[from, to]` on the run's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    pub process: Option<u64>,
    pub from: u64,
    pub to: u64,
}

impl Finding {
    pub fn new(what: impl Into<String>, slice: Vec<String>) -> Finding {
        Finding { what: what.into(), slice, marks: Vec::new() }
    }

    /// Marks `process`'s operation over `[from, to]`.
    pub fn at(mut self, process: u64, from: u64, to: u64) -> Finding {
        self.marks.push(Mark { process: Some(process), from, to: to.max(from) });
        self
    }

    /// Marks a moment of the run as a whole (`at`, on the run's clock).
    pub fn when(mut self, at: u64) -> Finding {
        self.marks.push(Mark { process: None, from: at, to: at });
        self
    }
}

#[derive(Clone, Debug)]
pub struct Report {
    pub seed: u64,
    /// How long the workloads ran.
    pub ran: Duration,
    /// Operations in the history (register operations and lock holds).
    pub operations: usize,
    pub faults: Vec<FaultEvent>,
    /// One line of figures per workload.
    pub workloads: Vec<String>,
    /// What was not checked, and why.
    pub notes: Vec<String>,
    pub verdicts: Vec<Verdict>,
    /// The history, as JSON lines.
    pub history: PathBuf,
}

impl Report {
    /// True only when every checker passed.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(Verdict::passed)
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        let faults = self.faults.len();
        let _ = writeln!(
            out,
            "ran {:.1?} with seed {}: {} operations, {faults} faults",
            self.ran, self.seed, self.operations
        );
        for line in &self.workloads {
            let _ = writeln!(out, "  {line}");
        }
        if faults > 0 {
            let mut kinds: Vec<(&str, usize)> = Vec::new();
            for f in &self.faults {
                match kinds.iter_mut().find(|(k, _)| *k == f.kind.name()) {
                    Some((_, n)) => *n += 1,
                    None => kinds.push((f.kind.name(), 1)),
                }
            }
            let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let _ = writeln!(out, "  faults: {}", kinds.join(", "));
        }
        for note in &self.notes {
            let _ = writeln!(out, "  {note}");
        }
        for v in &self.verdicts {
            let _ = writeln!(
                out,
                "{}: {} ({} operations, {} violations, {} undecided)",
                v.checker,
                v.status(),
                v.operations,
                v.violations.len(),
                v.undecided.len()
            );
            for f in &v.violations {
                let _ = writeln!(out, "  violation: {}", f.what);
                for line in &f.slice {
                    let _ = writeln!(out, "    {line}");
                }
            }
            for u in &v.undecided {
                let _ = writeln!(out, "  undecided: {u}");
            }
        }
        let _ = writeln!(out, "history: {}", self.history.display());
        let _ = write!(out, "verdict: {}", if self.passed() { "PASSED" } else { "FAILED" });
        out
    }

    pub fn json(&self) -> Value {
        let checkers: Vec<Value> = self
            .verdicts
            .iter()
            .map(|v| {
                let violations: Vec<Value> = v
                    .violations
                    .iter()
                    .map(|f| {
                        let marks: Vec<Value> = f
                            .marks
                            .iter()
                            .map(|m| json!({ "process": m.process, "from_ns": m.from, "to_ns": m.to }))
                            .collect();
                        json!({ "what": f.what, "slice": f.slice, "marks": marks })
                    })
                    .collect();
                json!({
                    "checker": v.checker,
                    "passed": v.passed(),
                    "operations": v.operations,
                    "violations": violations,
                    "undecided": v.undecided,
                })
            })
            .collect();
        json!({
            "passed": self.passed(),
            "seed": self.seed,
            "ran_ms": self.ran.as_millis() as u64,
            "operations": self.operations,
            "faults": self.faults.len(),
            "workloads": self.workloads,
            "notes": self.notes,
            "checkers": checkers,
            "history": self.history.display().to_string(),
        })
    }
}

/// Nanoseconds on the run's clock as milliseconds, for history slices.
pub fn ms(ns: u64) -> String {
    format!("{}.{:03}ms", ns / 1_000_000, (ns / 1_000) % 1_000)
}
