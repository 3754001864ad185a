use super::{Finding, Verdict};
use ward_check::History;

/// Steps the search may take per key: a linearizable key of a few thousand operations at a
/// handful of clients takes a few times its size.
pub const BUDGET: u64 = 50_000_000;

/// Linearizability of each key of `history`; the explanation of a violation is ward-check's
/// (the longest order found, and the operation that cannot take effect after it).
pub fn linearizability(history: &History) -> Verdict {
    let mut verdict = Verdict::new("linearizability");
    verdict.operations = history.records().len();
    let report = ward_check::check(history, BUDGET);
    for key in &report.keys {
        match &key.verdict {
            ward_check::Verdict::Linearizable => {}
            ward_check::Verdict::Violation(v) => super::push(
                &mut verdict,
                Finding {
                    what: format!("{}: no linearization of its {} operations", key.key, key.completed + key.pending),
                    slice: v.explanation.lines().map(str::to_owned).collect(),
                },
            ),
            ward_check::Verdict::Unknown { reason } => verdict.undecided.push(format!("{}: {reason}", key.key)),
        }
    }
    verdict
}
