use super::{push, Finding, Verdict};
use crate::check::locks::{Hold, WriteOutcome};
use crate::check::report::ms;

/// Lock safety over every hold of the run:
/// * no two holds overlap in time (from `lock()` returning to the release being sent),
///   unless one holder's guard reported the lock lost before it let go: it could know;
/// * fenced writes were accepted in token order: no token smaller than one already accepted;
/// * each accepted write set the counter to its new version (value = version): no holder
///   wrote on a stale read, so no increment was lost.
pub fn lock_safety(holds: &[Hold]) -> Verdict {
    let mut verdict = Verdict::new("lock safety");
    verdict.operations = holds.len();
    overlaps(holds, &mut verdict);
    tokens_and_counter(holds, &mut verdict);
    verdict
}

fn overlaps(holds: &[Hold], verdict: &mut Verdict) {
    let mut sure: Vec<&Hold> = holds.iter().filter(|h| !h.lost).collect();
    sure.sort_by_key(|h| h.acquired);
    // The earlier hold that reaches furthest: any later one starting before it ends overlaps.
    let mut reach: Option<&Hold> = None;
    for h in sure {
        if let Some(r) = reach {
            if h.acquired < r.released && h.process != r.process {
                push(
                    verdict,
                    Finding::new(
                        format!("two holds overlap: p{} and p{} both held the lock", r.process, h.process),
                        vec![hold_line(r), hold_line(h)],
                    )
                    .at(r.process, r.acquired, r.released)
                    .at(h.process, h.acquired, h.released),
                );
            }
        }
        if reach.is_none_or(|r| h.released > r.released) {
            reach = Some(h);
        }
    }
}

fn tokens_and_counter(holds: &[Hold], verdict: &mut Verdict) {
    let mut accepted: Vec<(u64, &Hold)> = holds
        .iter()
        .filter_map(|h| match h.write.as_ref().map(|w| w.outcome) {
            Some(WriteOutcome::Accepted { version }) => Some((version, h)),
            _ => None,
        })
        .collect();
    accepted.sort_by_key(|(version, _)| *version);
    let mut highest: Option<&Hold> = None;
    let mut previous: Option<(u64, &Hold)> = None;
    for &(version, h) in &accepted {
        if let Some(top) = highest.filter(|top| h.token < top.token) {
            push(
                verdict,
                Finding::new(
                    format!("stale token {} accepted after token {}", h.token, top.token),
                    vec![hold_line(top), hold_line(h)],
                )
                .at(top.process, top.acquired, top.released)
                .at(h.process, h.acquired, h.released),
            );
        }
        if highest.is_none_or(|top| h.token > top.token) {
            highest = Some(h);
        }
        let value = h.write.as_ref().map_or(0, |w| w.value);
        if value != version {
            let mut slice: Vec<String> = previous.map(|(_, p)| hold_line(p)).into_iter().collect();
            slice.push(hold_line(h));
            push(
                verdict,
                Finding::new(format!("counter set to {value} at version {version}: an increment was lost"), slice)
                    .at(h.process, h.acquired, h.released),
            );
        }
        if previous.is_some_and(|(v, _)| v == version) {
            push(
                verdict,
                Finding::new(format!("two writes acknowledged with version {version}"), vec![hold_line(h)])
                    .at(h.process, h.acquired, h.released),
            );
        }
        previous = Some((version, h));
    }
}

/// `p3 token 4711 held [12.345ms, 20.001ms] read 7 (v7) wrote 8 -> accepted v8`.
pub fn hold_line(h: &Hold) -> String {
    let lost = if h.lost { " (reported lost)" } else { "" };
    let read = h.read.map_or_else(|| " no read".to_owned(), |(value, version)| format!(" read {value} (v{version})"));
    let write = h.write.as_ref().map_or_else(String::new, |w| {
        let outcome = match w.outcome {
            WriteOutcome::Accepted { version } => format!("accepted v{version}"),
            WriteOutcome::Refused => "refused (stale fence)".to_owned(),
            WriteOutcome::Unknown => "unknown".to_owned(),
        };
        format!(" wrote {} [{}, {}] -> {outcome}", w.value, ms(w.invoked), ms(w.completed))
    });
    format!("p{} token {} held [{}, {}]{lost}{read}{write}", h.process, h.token, ms(h.acquired), ms(h.released))
}
