//! Large histories generated from a sequential execution: operation i takes effect at time
//! 100 i, and is recorded as invoked and completed a random while before and after that, so
//! that the execution is a linearization and neighbours overlap at random. A few operations
//! time out (their effect applied or not). Then one read is made stale on purpose.

use std::time::Instant;

use super::BUDGET;
use crate::sample::{generate, record, Planned};
use crate::{check, Op, Outcome};

const OPS: usize = 4000;
const KEYS: usize = crate::sample::KEYS;

/// Makes some read return a value overwritten before it started: a completed operation X
/// left the node in that state, then a completed W changed it, X having returned before W
/// was sent and W before the read was. Values are unique, so no order can bring X's state
/// back after W. Returns the read's index.
pub(super) fn make_a_read_stale(plan: &mut [Planned]) -> usize {
    for r in plan.len() / 2..plan.len() {
        if plan[r].op != Op::Read || plan[r].completion.is_none() {
            continue;
        }
        let changes: Vec<usize> = (0..r).filter(|&i| plan[i].key == plan[r].key && plan[i].effect.is_some()).collect();
        for pair in changes.windows(2).rev() {
            let (x, w) = (&plan[pair[0]], &plan[pair[1]]);
            let (Some((_, x_end)), Some((_, w_end))) = (&x.completion, &w.completion) else { continue };
            let Some(Some(stale)) = x.effect.clone() else { continue };
            if *x_end < w.invoked && *w_end < plan[r].invoked {
                if let Some((outcome, _)) = &mut plan[r].completion {
                    *outcome = Outcome::Value(stale);
                }
                return r;
            }
        }
    }
    panic!("no read to make stale");
}

#[test]
fn large_linearizable_history_passes() {
    let plan = generate(7, OPS);
    let history = record(&plan);
    let start = Instant::now();
    let report = check(&history, BUDGET);
    let elapsed = start.elapsed();
    eprintln!("{OPS} ops over {KEYS} keys, checked in {elapsed:?}:\n{report}");
    assert!(report.is_linearizable(), "{report}");
    let steps: u64 = report.keys.iter().map(|k| k.steps).sum();
    assert!(steps < 100 * OPS as u64, "{steps} steps");
}

#[test]
fn large_history_with_one_stale_read_is_rejected() {
    let mut plan = generate(7, OPS);
    let stale = make_a_read_stale(&mut plan);
    let history = record(&plan);
    let start = Instant::now();
    let report = check(&history, BUDGET);
    let elapsed = start.elapsed();
    eprintln!("op #{stale} made stale, checked in {elapsed:?}:\n{report}");
    let violations: Vec<_> = report.violations().collect();
    assert_eq!(violations.len(), 1, "{report}");
    // The explanation points at the culprit.
    assert_eq!(violations[0].blocked.map(|id| id.index()), Some(stale), "{report}");
    assert!(report.keys.iter().all(|k| k.key == plan[stale].key || k.verdict == crate::Verdict::Linearizable));
}

/// The speed figure: a valid history of 10,000 operations (over 4 keys, 8 processes, up to 15
/// overlapping operations per key, some of unknown outcome) is checked, and the rate is
/// printed (`cargo test -p ward-linearizability --release ten_thousand -- --nocapture`). No
/// timing is asserted; the step count is, as a machine-independent bound on the work.
#[test]
fn ten_thousand_operations_checked_with_their_speed_printed() {
    const N: usize = 10_000;
    let history = crate::sample::valid_history(11, N);
    let start = Instant::now();
    let report = check(&history, BUDGET);
    let elapsed = start.elapsed();
    let steps: u64 = report.keys.iter().map(|k| k.steps).sum();
    let rate = N as f64 / elapsed.as_secs_f64().max(1e-9);
    println!("{N} operations checked in {elapsed:?}: {rate:.0} operations/s, {steps} search steps");
    assert!(report.is_linearizable(), "{report}");
    assert!(steps < 100 * N as u64, "{steps} steps");
}
