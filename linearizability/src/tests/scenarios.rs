//! Small histories on one key, each with the verdict it must get. Times are arbitrary units;
//! the key starts out holding "a" at version 0.

use super::{cas, read, write, Script, BUDGET, KEY};
use crate::{check, History, HistoryError, Op, Outcome, Verdict};

fn violation(verdict: Verdict) -> crate::Violation {
    match verdict {
        Verdict::Violation(v) => v,
        other => panic!("expected a violation, got {other:?}"),
    }
}

#[test]
fn concurrent_history_is_linearizable() {
    let mut s = Script::new();
    s.done(1, write("b"), 10, 50, Outcome::Written { version: 1 });
    // Overlaps the write: may see either side of it.
    s.done(2, Op::Read, 20, 30, read("a", 0));
    s.done(3, Op::Read, 25, 60, read("b", 1));
    // Two compare-and-sets on version 1: one wins.
    s.done(2, cas(1, "c"), 40, 70, Outcome::Written { version: 2 });
    s.done(3, cas(1, "d"), 45, 75, Outcome::BadVersion);
    s.done(1, Op::Read, 80, 90, read("c", 2));
    s.done(1, Op::Delete { expected_version: Some(2) }, 100, 110, Outcome::Deleted);
    s.done(2, Op::Read, 105, 120, Outcome::NoNode);
    s.done(3, Op::Create { value: super::bytes("e") }, 115, 130, Outcome::Created);
    assert_eq!(s.verdict(), Verdict::Linearizable);
}

#[test]
fn stale_read_is_rejected() {
    let mut s = Script::new();
    s.done(1, write("b"), 10, 20, Outcome::Written { version: 1 });
    let stale = s.done(2, Op::Read, 30, 40, read("a", 0));
    let v = violation(s.verdict());
    assert_eq!(v.blocked, Some(stale));
    assert!(v.explanation.contains("p2 read -> \"a\" v0 [30, 40]"), "{}", v.explanation);
}

#[test]
fn lost_write_is_rejected() {
    // Both writes acknowledged as version 1: one of them was lost, and the read after both
    // sees only the other.
    let mut s = Script::new();
    s.done(1, write("b"), 10, 30, Outcome::Written { version: 1 });
    s.done(2, write("c"), 15, 35, Outcome::Written { version: 1 });
    s.done(3, Op::Read, 40, 50, read("c", 1));
    violation(s.verdict());
}

#[test]
fn cas_double_success_is_rejected() {
    let mut s = Script::new();
    s.done(1, cas(0, "b"), 10, 30, Outcome::Written { version: 1 });
    s.done(2, cas(0, "c"), 15, 35, Outcome::Written { version: 1 });
    violation(s.verdict());
}

#[test]
fn unknown_write_that_later_shows_passes() {
    let mut s = Script::new();
    s.lost(1, write("b"), 10);
    s.done(2, Op::Read, 20, 30, read("a", 0));
    s.done(2, Op::Read, 50, 60, read("b", 1));
    s.done(3, Op::Read, 70, 80, read("b", 1));
    assert_eq!(s.verdict(), Verdict::Linearizable);
}

#[test]
fn unknown_write_that_never_shows_passes() {
    let mut s = Script::new();
    s.lost(1, write("b"), 10);
    s.done(2, Op::Read, 50, 60, read("a", 0));
    // Version 1, not 2: "b" never took effect.
    s.done(2, write("c"), 70, 80, Outcome::Written { version: 1 });
    s.done(3, Op::Read, 90, 100, read("c", 1));
    assert_eq!(s.verdict(), Verdict::Linearizable);
}

#[test]
fn unknown_write_seen_only_through_the_version_passes() {
    let mut s = Script::new();
    s.lost(1, write("b"), 10);
    s.done(2, write("c"), 50, 60, Outcome::Written { version: 2 });
    s.done(3, Op::Read, 70, 80, read("c", 2));
    assert_eq!(s.verdict(), Verdict::Linearizable);
}

#[test]
fn unknown_write_cannot_be_undone() {
    let mut s = Script::new();
    s.lost(1, write("b"), 10);
    s.done(2, Op::Read, 50, 60, read("b", 1));
    s.done(3, Op::Read, 70, 80, read("a", 0));
    violation(s.verdict());
}

#[test]
fn unknown_write_cannot_act_before_it_was_sent() {
    let mut s = Script::new();
    s.done(2, Op::Read, 10, 20, read("b", 1));
    s.lost(1, write("b"), 30);
    violation(s.verdict());
}

#[test]
fn many_timed_out_writes_do_not_blow_up_the_search() {
    // Forty writes of unknown outcome, none ever seen, then a stale read: the search must
    // not try the 2^40 subsets of those writes at each dead end.
    let mut s = Script::new();
    for i in 0..40 {
        s.lost(10 + i, write(&format!("lost{i}")), i);
    }
    s.done(1, write("b"), 100, 110, Outcome::Written { version: 41 });
    s.done(2, Op::Read, 120, 130, read("b", 41));
    s.done(3, Op::Read, 140, 150, read("a", 0));
    let report = check(&s.0, BUDGET);
    let key = report.get(KEY).expect("checked");
    violation(key.verdict.clone());
    assert!(key.steps < 100_000, "{} steps", key.steps);
}

#[test]
fn budget_exhaustion_is_unknown() {
    let mut s = Script::new();
    for i in 0..10 {
        s.done(i, Op::Read, i, 100, read("a", 0));
    }
    let report = check(&s.0, 3);
    assert!(matches!(report.get(KEY).map(|k| &k.verdict), Some(Verdict::Unknown { .. })), "{report}");
    assert!(!report.is_linearizable());
}

#[test]
fn malformed_completions_are_refused() {
    let mut h = History::new();
    let r = h.invoke(1, KEY, Op::Read, 10);
    assert_eq!(h.complete(r, Outcome::Created, 20), Err(HistoryError::OutcomeDoesNotFit(r)));
    assert!(matches!(h.complete(r, Outcome::NoNode, 5), Err(HistoryError::CompletedBeforeInvoked { .. })));
    assert_eq!(h.complete(r, Outcome::NoNode, 20), Ok(()));
    assert_eq!(h.complete(r, Outcome::NoNode, 30), Err(HistoryError::AlreadyCompleted(r)));
}

#[test]
fn unknown_cas_that_never_applied_passes() {
    // Unlike a blind write, it could not even take effect last (the version moved on): it
    // must be allowed never to take effect at all.
    let mut s = Script::new();
    s.lost(1, cas(0, "b"), 10);
    s.done(2, write("c"), 50, 60, Outcome::Written { version: 1 });
    s.done(3, Op::Read, 70, 80, read("c", 1));
    assert_eq!(s.verdict(), Verdict::Linearizable);
}
