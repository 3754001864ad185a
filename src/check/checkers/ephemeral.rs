use super::{push, Finding, Verdict};
use crate::check::report::ms;
use crate::check::sessions::{End, Ephemeral, GONE_WITHIN, OWNER_TIMEOUT};

/// An interval in which the node was seen (or shown) present or absent.
#[derive(Clone, Copy)]
struct Seen {
    invoked: u64,
    completed: u64,
    what: &'static str,
}

impl Seen {
    fn line(&self) -> String {
        format!("{} [{}, {}]", self.what, ms(self.invoked), ms(self.completed))
    }
}

/// Session and ephemeral promises (G5), per node: it exists in one interval, from its
/// create to its session's end, so
/// * a look that found it absent cannot fall between two moments it was shown present (the
///   create's acknowledgement, an owner's write to it, a look that found it);
/// * a look that found it present cannot start after it was seen gone, or after its
///   session's `close()` returned ("no ephemeral of a closed session observed later");
/// * the node of a session cut off from the servers is gone within its timeout, given
///   afresh by each leader change ([`GONE_WITHIN`]).
pub fn ephemerals(nodes: &[Ephemeral]) -> Verdict {
    let mut verdict = Verdict::new("sessions");
    verdict.operations = nodes.iter().map(|n| 1 + n.alive.len() + n.looks.len()).sum();
    for node in nodes {
        check(node, &mut verdict);
    }
    verdict
}

fn check(node: &Ephemeral, verdict: &mut Verdict) {
    let mut present: Vec<Seen> = Vec::new();
    if let (invoked, Some(completed)) = node.created {
        present.push(Seen { invoked, completed, what: "created" });
    }
    present.extend(node.alive.iter().map(|&(invoked, completed)| Seen {
        invoked,
        completed,
        what: "owner wrote to it",
    }));
    let mut absent: Vec<Seen> = Vec::new();
    for look in &node.looks {
        let seen = Seen { invoked: look.invoked, completed: look.completed, what: "" };
        match look.present {
            true => present.push(Seen { what: "observer saw it", ..seen }),
            false => absent.push(Seen { what: "observer found it absent", ..seen }),
        }
    }
    if let End::Closed { invoked, completed } = node.end {
        absent.push(Seen { invoked, completed, what: "its session closed" });
    }
    let head = format!("{} of session {:#x} (p{})", node.path, node.session, node.process);
    let first_shown = present.iter().min_by_key(|s| s.completed);
    let last_shown = present.iter().max_by_key(|s| s.invoked);
    for a in &absent {
        if let (Some(before), Some(after)) = (first_shown, last_shown) {
            if before.completed < a.invoked && a.completed < after.invoked {
                let finding = Finding::new(
                    format!("{head}: missing while its session lived"),
                    vec![before.line(), a.line(), after.line()],
                );
                push(verdict, finding.at(node.process, a.invoked, a.completed));
            }
        }
    }
    // The earliest moment by which it was surely gone: an absence after it had been shown.
    let gone =
        absent.iter().filter(|a| first_shown.is_some_and(|f| f.completed < a.invoked)).min_by_key(|a| a.completed);
    if let Some(gone) = gone {
        for p in present.iter().filter(|p| p.invoked > gone.completed) {
            let finding = Finding::new(format!("{head}: seen again after it was gone"), vec![gone.line(), p.line()]);
            push(verdict, finding.at(node.process, p.invoked, p.completed));
        }
    }
    if let End::Expired { cut, gone: None } = node.end {
        let finding = Finding::new(
            format!("{head}: still there {GONE_WITHIN:?} after its session was cut off (timeout {OWNER_TIMEOUT:?})"),
            vec![format!("cut off at {}", ms(cut))],
        );
        push(verdict, finding.at(node.process, cut, cut + GONE_WITHIN.as_nanos() as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::sessions::Look;

    /// Created over [0, 10], written by its owner over [20, 30], looked at over [40, 50]
    /// (present) and, after a close over [60, 70], over [80, 90] (absent).
    fn healthy() -> Ephemeral {
        Ephemeral {
            process: 201,
            path: "/e/p201-1".into(),
            session: 0x10,
            created: (0, Some(10)),
            alive: vec![(20, 30)],
            looks: vec![
                Look { invoked: 40, completed: 50, present: true },
                Look { invoked: 80, completed: 90, present: false },
            ],
            end: End::Closed { invoked: 60, completed: 70 },
        }
    }

    #[test]
    fn a_node_that_lives_with_its_session_passes() {
        assert!(ephemerals(&[healthy()]).passed());
        let mut expired = healthy();
        expired.end = End::Expired { cut: 60, gone: Some(90) };
        assert!(ephemerals(&[expired]).passed());
    }

    #[test]
    fn a_node_missing_while_its_session_lived_is_caught() {
        let mut node = healthy();
        // Absent between the create's acknowledgement and a later write by its owner.
        node.looks.insert(0, Look { invoked: 12, completed: 15, present: false });
        let verdict = ephemerals(&[node]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("missing while its session lived")), "{verdict:?}");
    }

    #[test]
    fn a_node_of_a_closed_session_seen_later_is_caught() {
        let mut node = healthy();
        node.looks.push(Look { invoked: 100, completed: 110, present: true });
        let verdict = ephemerals(&[node]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("seen again after it was gone")), "{verdict:?}");
        assert_eq!(verdict.violations[0].marks[0].process, Some(201));
    }

    #[test]
    fn a_node_outliving_its_expired_session_is_caught() {
        let mut node = healthy();
        node.end = End::Expired { cut: 60, gone: None };
        node.looks.pop();
        let verdict = ephemerals(&[node]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("after its session was cut off")), "{verdict:?}");
    }
}
