//! Hand-built histories each checker must reject (and their healthy twins it must pass).

use super::*;
use crate::check::locks::{FencedWrite, Hold, WriteOutcome};
use crate::check::registers::{RegisterOp, INITIAL};
use ward_linearizability::{Op, Outcome};

/// A hold of `process` with `token` over `[from, to]` that read `n` (version n) and wrote
/// n + 1, accepted as version n + 1 unless `version` says otherwise.
fn hold(process: u64, token: u64, from: u64, to: u64, n: u64, version: Option<u64>) -> Hold {
    let outcome = WriteOutcome::Accepted { version: version.unwrap_or(n + 1) };
    let write = FencedWrite { value: n + 1, invoked: from + 1, outcome, completed: to - 1 };
    Hold { process, token, acquired: from, released: to, lost: false, read: Some((n, n)), write: Some(write) }
}

fn healthy() -> Vec<Hold> {
    vec![hold(1, 10, 0, 10, 0, None), hold(2, 20, 20, 30, 1, None), hold(1, 30, 40, 50, 2, None)]
}

#[test]
fn lock_safety_passes_exclusive_holds_in_token_order() {
    assert!(lock_safety(&healthy()).passed());
}

#[test]
fn lock_safety_rejects_overlapping_holds_unless_one_knew_it_was_lost() {
    let mut holds = healthy();
    holds[1].acquired = 5;
    let verdict = lock_safety(&holds);
    assert_eq!(verdict.violations.len(), 1, "{verdict:?}");
    assert!(verdict.violations[0].what.contains("overlap"));
    assert_eq!(verdict.violations[0].slice.len(), 2);
    holds[0].lost = true;
    assert!(lock_safety(&holds).passed());
}

#[test]
fn lock_safety_rejects_a_stale_token_accepted() {
    let mut holds = healthy();
    holds[2].token = 15;
    let verdict = lock_safety(&holds);
    assert!(verdict.violations.iter().any(|f| f.what.contains("stale token 15")), "{verdict:?}");
}

#[test]
fn lock_safety_rejects_a_lost_increment() {
    // The third holder read 1, not 2: its write of 2 lands as version 3.
    let mut holds = healthy();
    holds[2] = hold(1, 30, 40, 50, 1, Some(3));
    let verdict = lock_safety(&holds);
    assert!(verdict.violations.iter().any(|f| f.what.contains("increment was lost")), "{verdict:?}");
}

fn final_read(path: &str, data: &[u8], version: u64) -> FinalRead {
    FinalRead { member: "m1".into(), path: path.into(), read: Ok(Some((data.to_vec(), version))) }
}

fn written(value: &str, version: u64) -> RegisterOp {
    let op = Op::Write { value: value.as_bytes().to_vec() };
    RegisterOp { process: 1, key: 0, op, invoked: 1, outcome: Some((Outcome::Written { version }, 2)) }
}

#[test]
fn durability_passes_the_last_write_and_rejects_a_lost_gone_or_phantom_one() {
    let keys = vec!["/k".to_owned()];
    let ops = vec![written("a", 1), written("b", 2)];
    assert!(durability(&keys, &ops, None, &[final_read("/k", b"b", 2)]).passed());
    let lost = durability(&keys, &ops, None, &[final_read("/k", b"a", 1)]);
    assert!(lost.violations.iter().any(|f| f.what.contains("v2 lost")), "{lost:?}");
    let gone = FinalRead { member: "m1".into(), path: "/k".into(), read: Ok(None) };
    let gone = durability(&keys, &ops, None, &[gone]);
    assert!(gone.violations.iter().any(|f| f.what.contains("gone")), "{gone:?}");
    let phantom = durability(&keys, &ops, None, &[final_read("/k", b"zz", 3)]);
    assert!(phantom.violations.iter().any(|f| f.what.contains("phantom")), "{phantom:?}");
    assert!(durability(&keys, &[], None, &[final_read("/k", INITIAL, 0)]).passed());
}

#[test]
fn durability_checks_the_counter_against_the_fenced_writes() {
    let holds = healthy();
    let counted = Some(("/c", holds.as_slice()));
    assert!(durability(&[], &[], counted, &[final_read("/c", b"3", 3)]).passed());
    assert!(!durability(&[], &[], counted, &[final_read("/c", b"2", 2)]).passed());
    assert!(!durability(&[], &[], counted, &[final_read("/c", b"4", 4)]).passed());
    let unread = FinalRead { member: "m2".into(), path: "/c".into(), read: Err("refused".into()) };
    assert!(!durability(&[], &[], counted, &[unread]).passed());
}
