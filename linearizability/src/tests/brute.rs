//! The search against brute force: on many tiny random histories, `check` must agree with a
//! plain enumeration of every order (which knows nothing of the memo, the entry list, value
//! interning, or the shortcuts for safe and pending operations).

use crate::model::apply;
use crate::sample::Rng;
use crate::{check, History, Node, Op, Outcome, Record, Verdict};

/// Whether some order of the completed operations, with any of the pending ones that take
/// effect, respects real time and the model.
fn linearizable(records: &[Record], initial: Option<Node>) -> bool {
    let completed = records.iter().filter(|r| r.completion.is_some()).count();
    place(records, &mut vec![false; records.len()], initial, completed)
}

fn place(records: &[Record], used: &mut Vec<bool>, state: Option<Node>, left: usize) -> bool {
    if left == 0 {
        return true;
    }
    for (i, r) in records.iter().enumerate() {
        // Next only if no unplaced completed operation returned before it was invoked.
        let blocked = records
            .iter()
            .enumerate()
            .any(|(j, o)| !used[j] && o.completion.as_ref().is_some_and(|c| c.at < r.invoked));
        if used[i] || blocked {
            continue;
        }
        let (after, outcome) = apply(&state, &r.op);
        let fits = match &r.completion {
            Some(c) => c.outcome == outcome,
            None => outcome.is_effect(),
        };
        if fits {
            used[i] = true;
            let now_left = left - usize::from(r.completion.is_some());
            if place(records, used, after, now_left) {
                return true;
            }
            used[i] = false;
        }
    }
    false
}

/// Up to 7 operations with values from a set of three and clashing intervals, from a
/// sequential run, half of them then given one wrong outcome.
fn tiny(rng: &mut Rng) -> History {
    let value = |rng: &mut Rng| vec![b"abc"[rng.below(3) as usize]];
    let mut h = History::new();
    let mut state = (rng.below(2) == 0).then(|| Node { value: value(rng), version: rng.below(2) });
    h.set_initial("/t", state.clone());
    let n = 1 + rng.below(7);
    let corrupt = (rng.below(2) == 0).then(|| rng.below(n));
    for i in 0..n {
        let op = match rng.below(5) {
            0 | 1 => Op::Read,
            2 => Op::Write { value: value(rng) },
            3 => Op::Cas { expected_version: rng.below(3), value: value(rng) },
            _ if rng.below(2) == 0 => Op::Create { value: value(rng) },
            _ => Op::Delete { expected_version: (rng.below(2) == 0).then(|| rng.below(3)) },
        };
        let at = 10 * i + 30;
        let (after, mut outcome) = apply(&state, &op);
        let pending = op != Op::Read && rng.below(4) == 0;
        if !pending || rng.below(2) == 0 {
            state = after;
        }
        if corrupt == Some(i) {
            outcome = match outcome {
                Outcome::Value(node) => Outcome::Value(Node { value: value(rng), version: node.version }),
                Outcome::Written { version } => Outcome::Written { version: version + 1 },
                Outcome::NoNode if op == Op::Read => Outcome::Value(Node { value: value(rng), version: 0 }),
                other => other,
            };
        }
        let id = h.invoke(i, "/t", op, at - rng.below(25));
        if !pending {
            h.complete(id, outcome, at + rng.below(25)).expect("well formed");
        }
    }
    h
}

#[test]
fn search_agrees_with_brute_force() {
    let mut rng = Rng(0x5eed);
    let (mut yes, mut no) = (0, 0);
    for case in 0..20_000 {
        let h = tiny(&mut rng);
        let expected = linearizable(h.records(), h.initial("/t").cloned());
        let got = check(&h, u64::MAX).get("/t").map(|k| k.verdict.clone());
        let got = match got {
            Some(Verdict::Linearizable) => true,
            Some(Verdict::Violation(_)) => false,
            other => panic!("case {case}: {other:?}"),
        };
        assert_eq!(got, expected, "case {case}: {:#?}", h.records());
        if expected {
            yes += 1;
        } else {
            no += 1;
        }
    }
    // Both verdicts well represented.
    assert!(yes > 5_000 && no > 3_000, "{yes} linearizable, {no} not");
}
