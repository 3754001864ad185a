//! The linearizability checker's speed: valid histories of 10,000 and 50,000 operations
//! (4 keys, 8 processes, up to 15 overlapping operations per key, about 1 % of the writes
//! of unknown outcome) checked, the rate printed. A program, not a timed test:
//! `cargo bench -p ward-linearizability` (docs/benchmarks.md).

use std::time::Instant;
use ward_linearizability::{check, sample};

/// Enough for a valid history of these sizes; a run that reports `unknown` needs more.
const BUDGET: u64 = 50_000_000;

fn main() {
    for (ops, seed) in [(10_000, 11), (50_000, 12)] {
        let history = sample::valid_history(seed, ops);
        let mut best = f64::MAX;
        let mut steps = 0;
        let mut linearizable = true;
        for _ in 0..3 {
            let start = Instant::now();
            let report = check(&history, BUDGET);
            best = best.min(start.elapsed().as_secs_f64());
            steps = report.keys.iter().map(|k| k.steps).sum::<u64>();
            linearizable &= report.is_linearizable();
        }
        println!(
            "{ops} operations: best of 3 {:.1} ms, {:.0} operations/s, {steps} search steps, {}",
            best * 1e3,
            ops as f64 / best.max(1e-9),
            if linearizable { "linearizable" } else { "NOT linearizable (a bug)" }
        );
    }
}
