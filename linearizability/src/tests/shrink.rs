//! The shortest failing slice: small, still failing on its own, and holding the operation
//! that shows the fault.

use super::random::make_a_read_stale;
use super::{cas, read, write, Script, BUDGET, KEY};
use crate::sample::{generate, record, Rng};
use crate::{check, shrink, Op, Outcome};

#[test]
fn a_stale_read_among_many_operations_shrinks_to_a_few() {
    let mut s = Script::new();
    // Forty quiet writes and reads, then the stale read, then forty more.
    for i in 0..40u64 {
        let value = format!("w{i}");
        s.done(1, write(&value), 100 * i, 100 * i + 10, Outcome::Written { version: i + 1 });
        s.done(2, Op::Read, 100 * i + 20, 100 * i + 30, read(&value, i + 1));
    }
    let stale = s.done(3, Op::Read, 4000, 4010, read("w38", 39));
    for i in 40..80u64 {
        s.done(1, write(&format!("w{i}")), 100 * i + 50, 100 * i + 60, Outcome::Written { version: i + 1 });
    }
    let slice = shrink(&s.0, KEY, BUDGET).expect("a failing slice");
    assert!(slice.ops.contains(&stale), "{slice:?}");
    assert!(slice.ops.len() <= 3, "{} operations: {:?}", slice.ops.len(), slice.ops);
    assert!(!check(&slice.history, BUDGET).is_linearizable(), "the slice fails on its own");
}

/// `ward check` records each client's operations together, not in invocation order.
#[test]
fn a_history_recorded_client_by_client_shrinks_as_well() {
    let mut s = Script::new();
    for i in 0..40u64 {
        s.done(1, write(&format!("w{i}")), 100 * i, 100 * i + 10, Outcome::Written { version: i + 1 });
    }
    for i in 0..40u64 {
        s.done(2, Op::Read, 100 * i + 20, 100 * i + 30, read(&format!("w{i}"), i + 1));
    }
    let stale = s.done(2, Op::Read, 4000, 4010, read("w30", 31));
    let slice = shrink(&s.0, KEY, BUDGET).expect("a failing slice");
    assert!(slice.ops.contains(&stale) && slice.ops.len() <= 3, "{slice:?}");
    let invoked: Vec<u64> = slice.ops.iter().filter_map(|&id| s.0.get(id)).map(|r| r.invoked).collect();
    assert!(invoked.windows(2).all(|w| w[0] <= w[1]), "in invocation order: {invoked:?}");
    assert!(!check(&slice.history, BUDGET).is_linearizable());
}

#[test]
fn a_linearizable_key_has_no_slice() {
    let mut s = Script::new();
    s.done(1, write("b"), 10, 20, Outcome::Written { version: 1 });
    s.done(2, Op::Read, 30, 40, read("b", 1));
    assert!(shrink(&s.0, KEY, BUDGET).is_none());
}

/// A register history as `ward check`'s clients make one: reads, writes and compare-and-sets
/// of unique values, each overlapping its neighbours a little, with one read near the end
/// made to return a value overwritten long before.
#[test]
fn a_stale_read_in_a_long_register_history_shrinks_to_a_few_operations() {
    let mut rng = Rng(0x5eed);
    let mut s = Script::new();
    let (mut value, mut version) = ("a".to_owned(), 0);
    let mut stale = None;
    for i in 0..3000u64 {
        let (invoked, effect) = (10 * i + rng.below(5), 10 * i + 5);
        let completed = effect + rng.below(9);
        let process = i % 4;
        match rng.below(3) {
            0 if i == 2900 => {
                stale = Some(s.done(process, Op::Read, invoked, completed, read("w100", 101)));
            }
            0 => {
                s.done(process, Op::Read, invoked, completed, read(&value, version));
            }
            1 => {
                (value, version) = (format!("w{i}"), version + 1);
                s.done(process, write(&value), invoked, completed, Outcome::Written { version });
            }
            _ => {
                let expected = version - rng.below(2).min(version);
                let outcome = if expected == version {
                    (value, version) = (format!("w{i}"), version + 1);
                    Outcome::Written { version }
                } else {
                    Outcome::BadVersion
                };
                s.done(process, cas(expected, &format!("w{i}")), invoked, completed, outcome);
            }
        }
    }
    let stale = stale.expect("op 2900 is a read with this seed");
    let slice = shrink(&s.0, KEY, BUDGET).expect("a failing slice");
    println!("slice of {} of 3000: {:?}", slice.ops.len(), slice.ops);
    assert!(slice.ops.contains(&stale), "{slice:?}");
    assert!(slice.ops.len() <= 10, "{} operations", slice.ops.len());
    assert!(slice.initial_from.is_some(), "it starts after the write that left its state");
    assert!(!check(&slice.history, BUDGET).is_linearizable());
}

/// In a dense random history (creates, deletes, writes of unknown outcome: no quiet moment)
/// only the end and the observations can go; the slice still fails on its own.
#[test]
fn a_planted_stale_read_in_a_dense_history_still_fails_once_shrunk() {
    let mut plan = generate(7, 2000);
    let stale = make_a_read_stale(&mut plan);
    let history = record(&plan);
    let key = &plan[stale].key;
    let slice = shrink(&history, key, BUDGET).expect("a failing slice");
    let on_key = plan.iter().filter(|p| p.key == *key).count();
    println!("{on_key} operations on {key}, slice of {}", slice.ops.len());
    assert!(slice.ops.len() * 2 < on_key, "{} of {on_key}", slice.ops.len());
    assert!(slice.ops.iter().any(|id| id.index() == stale), "{slice:?}");
    assert!(!check(&slice.history, BUDGET).is_linearizable());
}
