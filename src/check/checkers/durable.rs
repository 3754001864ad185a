use super::{push, Finding, Verdict};
use crate::check::locks::{parse_counter, Hold, WriteOutcome};
use crate::check::registers::{RegisterOp, INITIAL};
use ward_linearizability::{Op, Outcome};

/// What one member showed of one node at the end, after healing and `sync`.
#[derive(Clone, Debug)]
pub struct FinalRead {
    pub member: String,
    pub path: String,
    /// (data, version), `None` if the node is gone, or why the member did not answer.
    pub read: Result<Option<(Vec<u8>, u64)>, String>,
}

/// Every acknowledged write is visible on every member at the end, and nothing that was
/// never written: for each register, a version at least the highest acknowledged, and the
/// value of the write that made that version (or of a write of unknown outcome, or the
/// initial value); for the counter, value = version, at least the highest accepted fenced
/// write and at most the writes that may have taken effect.
pub fn durability(
    keys: &[String],
    ops: &[RegisterOp],
    counter: Option<(&str, &[Hold])>,
    finals: &[FinalRead],
) -> Verdict {
    let mut verdict = Verdict::new("durability");
    verdict.operations = finals.len();
    for fin in finals {
        let (data, version) = match &fin.read {
            Ok(Some(read)) => read,
            Ok(None) => {
                // Every node read at the end was created before the workloads began.
                let what = format!("{} is gone: created, written, then lost", fin.path);
                push(
                    &mut verdict,
                    Finding::new(what, vec![format!("{} on {}: no node at the end", fin.path, fin.member)]),
                );
                continue;
            }
            Err(why) => {
                verdict.undecided.push(format!("{} on {} unread at the end: {why}", fin.path, fin.member));
                continue;
            }
        };
        if let Some(k) = keys.iter().position(|key| *key == fin.path) {
            register(k, ops, fin, data, *version, &mut verdict);
        } else if let Some((_, holds)) = counter.filter(|(path, _)| *path == fin.path) {
            count(holds, fin, data, *version, &mut verdict);
        }
    }
    verdict
}

fn register(k: usize, ops: &[RegisterOp], fin: &FinalRead, data: &[u8], version: u64, verdict: &mut Verdict) {
    let writes = ops.iter().filter(|o| o.key == k && matches!(o.op, Op::Write { .. } | Op::Cas { .. }));
    let mut newest: Option<(u64, &RegisterOp)> = None;
    let mut known_value = data == INITIAL;
    let mut same_version: Option<&RegisterOp> = None;
    for w in writes {
        let value = match &w.op {
            Op::Write { value } | Op::Cas { value, .. } => value.as_slice(),
            _ => continue,
        };
        match &w.outcome {
            Some((Outcome::Written { version: v }, _)) => {
                known_value |= value == data;
                if newest.is_none_or(|(n, _)| *v > n) {
                    newest = Some((*v, w));
                }
                if *v == version && value != data {
                    same_version = Some(w);
                }
            }
            None => known_value |= value == data,
            Some(_) => {}
        }
    }
    let seen = format!("{} on {}: {:?} v{version} at the end", fin.path, fin.member, String::from_utf8_lossy(data));
    if let Some((v, w)) = newest.filter(|(v, _)| *v > version) {
        push(
            verdict,
            Finding::new(format!("acknowledged write of v{v} lost"), vec![op_line(w), seen.clone()]).at(
                w.process,
                w.invoked,
                w.outcome.as_ref().map_or(w.invoked, |(_, at)| *at),
            ),
        );
    }
    if !known_value {
        push(verdict, Finding::new("phantom value: never written", vec![seen.clone()]));
    } else if let Some(w) = same_version {
        push(
            verdict,
            Finding::new(format!("v{version} holds another value than its write"), vec![op_line(w), seen]).at(
                w.process,
                w.invoked,
                w.outcome.as_ref().map_or(w.invoked, |(_, at)| *at),
            ),
        );
    }
}

fn count(holds: &[Hold], fin: &FinalRead, data: &[u8], version: u64, verdict: &mut Verdict) {
    let writes: Vec<_> = holds.iter().filter_map(|h| h.write.as_ref()).collect();
    let accepted: Vec<u64> = writes
        .iter()
        .filter_map(|w| match w.outcome {
            WriteOutcome::Accepted { version } => Some(version),
            _ => None,
        })
        .collect();
    let unknown = writes.iter().filter(|w| w.outcome == WriteOutcome::Unknown).count() as u64;
    let highest = accepted.iter().copied().max().unwrap_or(0);
    let most = accepted.len() as u64 + unknown;
    let seen = format!("{} on {}: {:?} v{version} at the end", fin.path, fin.member, String::from_utf8_lossy(data));
    let facts = format!("{} fenced writes accepted (highest v{highest}), {unknown} of unknown outcome", accepted.len());
    match parse_counter(data) {
        Some(value) if value != version => {
            push(verdict, Finding::new(format!("counter {value} at version {version}"), vec![seen]))
        }
        None => push(verdict, Finding::new("counter is not a number", vec![seen])),
        Some(_) if version < highest => {
            push(verdict, Finding::new(format!("accepted fenced write of v{highest} lost"), vec![facts, seen]))
        }
        Some(_) if version > most => {
            push(verdict, Finding::new("counter above every write that may have applied", vec![facts, seen]))
        }
        Some(_) => {}
    }
}

/// `p2 write "p2-5" [1.000ms, 2.000ms] -> v7`.
fn op_line(o: &RegisterOp) -> String {
    let op = match &o.op {
        Op::Write { value } => format!("write {:?}", String::from_utf8_lossy(value)),
        Op::Cas { expected_version, value } => {
            format!("write {:?} if v{expected_version}", String::from_utf8_lossy(value))
        }
        other => format!("{other:?}"),
    };
    let outcome = match &o.outcome {
        Some((Outcome::Written { version }, at)) => format!("v{version} at {}", crate::check::report::ms(*at)),
        Some((other, _)) => format!("{other:?}"),
        None => "unknown".to_owned(),
    };
    format!("p{} {op} invoked {} -> {outcome}", o.process, crate::check::report::ms(o.invoked))
}
