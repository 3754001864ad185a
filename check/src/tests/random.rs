//! Large histories generated from a sequential execution: operation i takes effect at time
//! 100 i, and is recorded as invoked and completed a random while before and after that, so
//! that the execution is a linearization and neighbours overlap at random. A few operations
//! time out (their effect applied or not). Then one read is made stale on purpose.

use std::time::Instant;

use super::BUDGET;
use crate::model::apply;
use crate::{check, History, Node, Op, Outcome};

const OPS: usize = 4000;
const KEYS: usize = 4;
const PROCESSES: u64 = 8;
/// How far an interval may reach either side of its operation's effect: up to 60 operations
/// (15 on its key) overlap each one.
const REACH: u64 = 3000;

/// xorshift64*: seeded, good enough to scatter intervals.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One generated operation; `completion` is `None` for a timed-out one.
struct Planned {
    key: String,
    op: Op,
    invoked: u64,
    completion: Option<(Outcome, u64)>,
    /// The state it left, if it changed the register.
    effect: Option<Option<Node>>,
}

fn generate(seed: u64, ops: usize) -> Vec<Planned> {
    let mut rng = Rng(seed);
    let mut states: Vec<Option<Node>> = vec![None; KEYS];
    (0..ops)
        .map(|i| {
            let k = rng.below(KEYS as u64) as usize;
            let state = &states[k];
            let version = state.as_ref().map_or(0, |n| n.version);
            let value = format!("v{i}").into_bytes();
            let op = match rng.below(10) {
                0..=3 => Op::Read,
                4 | 5 => Op::Write { value },
                // Mostly the current version, so that most succeed.
                6 | 7 => Op::Cas { expected_version: version.saturating_sub(rng.below(3) / 2), value },
                8 => Op::Create { value },
                _ => Op::Delete { expected_version: (rng.below(2) == 0).then_some(version) },
            };
            let at = 100 * (i as u64 + 1) + REACH;
            let invoked = at - rng.below(REACH);
            let timed_out = op != Op::Read && rng.below(100) == 0;
            let (after, outcome) = apply(state, &op);
            let changed = outcome.is_effect() && (!timed_out || rng.below(2) == 0);
            if changed {
                states[k] = after.clone();
            }
            let completion = (!timed_out).then(|| (outcome, at + rng.below(REACH)));
            Planned { key: format!("/key{k}"), op, invoked, completion, effect: changed.then_some(after) }
        })
        .collect()
}

fn record(plan: &[Planned]) -> History {
    let mut h = History::new();
    for (i, p) in plan.iter().enumerate() {
        let id = h.invoke(i as u64 % PROCESSES, p.key.as_str(), p.op.clone(), p.invoked);
        if let Some((outcome, at)) = &p.completion {
            h.complete(id, outcome.clone(), *at).expect("generated completions are well formed");
        }
    }
    h
}

/// Makes some read return a value overwritten before it started: a completed operation X
/// left the node in that state, then a completed W changed it, X having returned before W
/// was sent and W before the read was. Values are unique, so no order can bring X's state
/// back after W. Returns the read's index.
fn make_a_read_stale(plan: &mut [Planned]) -> usize {
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

/// The speed figure: a valid history of 10,000 operations (over 4 keys, 8 processes, up to
/// 15 overlapping operations per key, some of unknown outcome) is checked, and the rate is
/// printed (`cargo test -p ward-check --release ten_thousand -- --nocapture`). No timing is
/// asserted; the step count is, as a machine-independent bound on the work.
#[test]
fn ten_thousand_operations_checked_with_their_speed_printed() {
    const N: usize = 10_000;
    let history = record(&generate(11, N));
    let start = Instant::now();
    let report = check(&history, BUDGET);
    let elapsed = start.elapsed();
    let steps: u64 = report.keys.iter().map(|k| k.steps).sum();
    let rate = N as f64 / elapsed.as_secs_f64().max(1e-9);
    println!("{N} operations checked in {elapsed:?}: {rate:.0} operations/s, {steps} search steps");
    assert!(report.is_linearizable(), "{report}");
    assert!(steps < 100 * N as u64, "{steps} steps");
}
