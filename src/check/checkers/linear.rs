use super::{Finding, Verdict};
use crate::check::report::ms;
use ward_linearizability::{History, Node, Op, OpId, Outcome, Record};

/// Steps the search may take per key: a linearizable key of a few thousand operations at a
/// handful of clients takes a few times its size.
pub const BUDGET: u64 = 50_000_000;

/// Linearizability of each key of `history`. A violation is shown by the shortest slice of
/// the key's history that still fails on its own (`ward_linearizability::shrink`), else by the
/// search's own explanation (the longest order found, and the operation that cannot take
/// effect after it).
pub fn linearizability(history: &History) -> Verdict {
    let mut verdict = Verdict::new("linearizability");
    verdict.operations = history.records().len();
    let report = ward_linearizability::check(history, BUDGET);
    for key in &report.keys {
        match &key.verdict {
            ward_linearizability::Verdict::Linearizable => {}
            ward_linearizability::Verdict::Violation(v) => {
                let total = key.completed + key.pending;
                let what = format!("{}: no linearization of its {total} operations", key.key);
                let finding = match ward_linearizability::shrink(history, &key.key, BUDGET) {
                    Some(slice) => shown(history, &slice, total, what),
                    None => {
                        let lines = v.explanation.lines().map(str::to_owned).collect();
                        let marks = v.blocked.into_iter().chain(v.tail.iter().copied());
                        marked(Finding::new(what, lines), history, marks)
                    }
                };
                super::push(&mut verdict, finding);
            }
            ward_linearizability::Verdict::Unknown { reason } => {
                verdict.undecided.push(format!("{}: {reason}", key.key))
            }
        }
    }
    verdict
}

/// The finding for a failing slice: where it starts, then its operations.
fn shown(history: &History, slice: &ward_linearizability::Slice, total: usize, what: String) -> Finding {
    let start = match (&slice.initial, slice.initial_from.and_then(|id| history.get(id))) {
        (Some(node), Some(write)) => {
            let at = write.completion.as_ref().map_or(write.invoked, |c| c.at);
            format!("from {} (p{}'s write, acknowledged at {}):", node_text(node), write.process, ms(at))
        }
        (Some(node), None) => format!("from {} (the key's first value):", node_text(node)),
        (None, _) => "from the key absent:".to_owned(),
    };
    let mut lines = vec![start];
    lines.extend(slice.ops.iter().filter_map(|&id| history.get(id).map(|r| line(r, slice.cut_open.contains(&id)))));
    lines.push(match slice.ops.len() {
        1 => format!("(this one of the key's {total} operations fails on its own)"),
        n => format!("(these {n} of the key's {total} operations fail on their own)"),
    });
    marked(Finding::new(what, lines), history, slice.initial_from.into_iter().chain(slice.ops.iter().copied()))
}

fn marked(mut finding: Finding, history: &History, ids: impl Iterator<Item = OpId>) -> Finding {
    for r in ids.filter_map(|id| history.get(id)) {
        finding = finding.at(r.process, r.invoked, r.completion.as_ref().map_or(r.invoked, |c| c.at));
    }
    finding
}

fn node_text(node: &Node) -> String {
    format!("{:?} v{}", String::from_utf8_lossy(&node.value), node.version)
}

/// `p3 read -> "p1-7" v4 [1.000ms, 2.000ms]`; an operation the slice ends before it
/// returned shows as `-> ? (still running)`.
fn line(r: &Record, cut_open: bool) -> String {
    let text = |v: &[u8]| format!("{:?}", String::from_utf8_lossy(v));
    let op = match &r.op {
        Op::Read => "read".to_owned(),
        Op::Write { value } => format!("write {}", text(value)),
        Op::Cas { expected_version, value } => format!("write {} if v{expected_version}", text(value)),
        Op::Create { value } => format!("create {}", text(value)),
        Op::Delete { expected_version } => {
            format!("delete{}", expected_version.map_or(String::new(), |v| format!(" if v{v}")))
        }
    };
    let outcome = match (&r.completion, cut_open) {
        (Some(_), true) => "? (still running)".to_owned(),
        (None, _) => "? (outcome unknown)".to_owned(),
        (Some(done), false) => match &done.outcome {
            Outcome::Value(node) => node_text(node),
            Outcome::Written { version } => format!("v{version}"),
            other => format!("{other:?}"),
        },
    };
    let end = r.completion.as_ref().filter(|_| !cut_open).map_or_else(|| "...".to_owned(), |c| ms(c.at));
    format!("p{} {op} -> {outcome} [{}, {end}]", r.process, ms(r.invoked))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two clients' operations on one key, recorded client by client as `ward check` does:
    /// p1 writes "b" and then "c"; p2's read, begun after both returned, sees "b".
    #[test]
    fn a_stale_read_is_shown_by_its_shortest_slice_and_marked() {
        let mut h = History::new();
        h.set_initial("/k", Some(Node { value: b"a".to_vec(), version: 0 }));
        for (i, value) in [&b"b"[..], b"c"].into_iter().enumerate() {
            let at = 10 * i as u64;
            let id = h.invoke(1, "/k", Op::Write { value: value.to_vec() }, at);
            let _ = h.complete(id, Outcome::Written { version: i as u64 + 1 }, at + 5);
        }
        let read = h.invoke(2, "/k", Op::Read, 30);
        let _ = h.complete(read, Outcome::Value(Node { value: b"b".to_vec(), version: 1 }), 35);
        let verdict = linearizability(&h);
        assert_eq!(verdict.violations.len(), 1, "{verdict:?}");
        let finding = &verdict.violations[0];
        assert!(finding.slice[0].contains(r#"from "c" v2 (p1's write"#), "{finding:?}");
        assert!(finding.slice.iter().any(|l| l.starts_with(r#"p2 read -> "b" v1"#)), "{finding:?}");
        assert!(finding.marks.iter().any(|m| m.process == Some(2) && m.from == 30), "{finding:?}");
        assert!(
            finding.marks.iter().any(|m| m.process == Some(1) && m.from == 10),
            "the write it starts after: {finding:?}"
        );
    }
}
