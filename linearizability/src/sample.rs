//! Seeded histories that have a linearization by construction: for benchmarks, and for the
//! tests that plant one fault in an otherwise valid history.
//!
//! Operation i takes effect at time 100 i and is recorded as invoked and completed a random
//! while before and after that, so that the sequential execution is a linearization and
//! neighbours overlap at random; about one write in a hundred times out (its effect applied
//! or not).

use crate::model::apply;
use crate::{History, Node, Op, Outcome};

/// Keys the operations are spread over.
pub const KEYS: usize = 4;
/// Processes the operations are attributed to, in turn.
pub const PROCESSES: u64 = 8;
/// How far an interval may reach either side of its operation's effect: up to 60
/// operations (15 on its key) overlap each one.
const REACH: u64 = 3000;

/// xorshift64*: seeded, good enough to scatter intervals.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One generated operation; `completion` is `None` for a timed-out one.
pub(crate) struct Planned {
    pub key: String,
    pub op: Op,
    pub invoked: u64,
    pub completion: Option<(Outcome, u64)>,
    /// The state it left, if it changed the register (the tests that plant a stale read
    /// look for one).
    #[cfg_attr(not(test), allow(dead_code))]
    pub effect: Option<Option<Node>>,
}

/// `ops` operations (reads, writes, compare-and-sets, creates, deletes) from `seed`.
pub(crate) fn generate(seed: u64, ops: usize) -> Vec<Planned> {
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

/// The history of `plan`.
pub(crate) fn record(plan: &[Planned]) -> History {
    let mut h = History::new();
    for (i, p) in plan.iter().enumerate() {
        let id = h.invoke(i as u64 % PROCESSES, p.key.as_str(), p.op.clone(), p.invoked);
        if let Some((outcome, at)) = &p.completion {
            // Generated from a sequential execution: every completion fits its operation.
            let _ = h.complete(id, outcome.clone(), *at);
        }
    }
    h
}

/// A history of `ops` operations over [`KEYS`] keys (absent at first) and [`PROCESSES`]
/// processes that has a linearization: the same seed, the same history.
pub fn valid_history(seed: u64, ops: usize) -> History {
    record(&generate(seed, ops))
}
