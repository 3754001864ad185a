//! The run's history as JSON lines (`history.jsonl`), one event a line in order of its start
//! on the run's clock (nanoseconds since the run began):
//!
//! * `{"type":"op","workload":"registers","process":3,"key":"/…/reg-1","f":"cas","value":"p3-17","expected_version":4,"invoke_ns":…,"complete_ns":…,"outcome":{"written":5}}`
//!   (`f`: `read`, `write`, `cas`; `outcome`: `{"value":…,"version":…}`, `{"written":V}`,
//!   `"bad_version"`, `"no_node"`, or `null` with `complete_ns` `null` when unknown);
//! * `{"type":"lock","process":2,"token":…,"acquired_ns":…,"released_ns":…,"lost":false,"read":{"value":7,"version":7},"write":{"value":8,"invoke_ns":…,"complete_ns":…,"outcome":"accepted","version":8}}`;
//! * `{"type":"fault","kind":"kill","member":2,"leader":true,"start_ns":…,"end_ns":…}`;
//! * `{"type":"final","member":"127.0.0.1:7181","path":…,"value":…,"version":…}` (or
//!   `"error"`): what each member showed at the end.

use super::checkers::FinalRead;
use super::locks::{Hold, WriteOutcome};
use super::nemesis::FaultEvent;
use super::registers::RegisterOp;
use super::CheckError;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use ward_check::{Op, Outcome};

/// Everything recorded, to be written.
pub struct Recorded<'a> {
    pub keys: &'a [String],
    pub ops: &'a [RegisterOp],
    pub holds: &'a [Hold],
    pub faults: &'a [FaultEvent],
    pub finals: &'a [FinalRead],
}

/// Writes `history.jsonl` under `dir`.
pub fn write(dir: &Path, recorded: &Recorded<'_>) -> Result<(), CheckError> {
    let mut lines: Vec<(u64, Value)> = Vec::new();
    lines.extend(recorded.ops.iter().map(|o| (o.invoked, op(recorded.keys, o))));
    lines.extend(recorded.holds.iter().map(|h| (h.acquired, hold(h))));
    lines.extend(recorded.faults.iter().map(|f| (f.start, fault(f))));
    lines.extend(recorded.finals.iter().map(|f| (u64::MAX, fin(f))));
    lines.sort_by_key(|(at, _)| *at);
    let path = dir.join("history.jsonl");
    let failed = |source| CheckError::Io { path: path.clone(), source };
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).map_err(failed)?);
    for (_, line) in &lines {
        writeln!(file, "{line}").map_err(failed)?;
    }
    file.flush().map_err(failed)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn op(keys: &[String], o: &RegisterOp) -> Value {
    let mut line = json!({
        "type": "op", "workload": "registers", "process": o.process, "key": keys[o.key],
        "invoke_ns": o.invoked, "complete_ns": o.outcome.as_ref().map(|(_, at)| *at),
    });
    let (f, value, expected) = match &o.op {
        Op::Read => ("read", None, None),
        Op::Write { value } => ("write", Some(text(value)), None),
        Op::Cas { expected_version, value } => ("cas", Some(text(value)), Some(*expected_version)),
        Op::Create { value } => ("create", Some(text(value)), None),
        Op::Delete { expected_version } => ("delete", None, *expected_version),
    };
    line["f"] = json!(f);
    if let Some(value) = value {
        line["value"] = json!(value);
    }
    if let Some(expected) = expected {
        line["expected_version"] = json!(expected);
    }
    line["outcome"] = match &o.outcome {
        None => Value::Null,
        Some((Outcome::Value(node), _)) => json!({ "value": text(&node.value), "version": node.version }),
        Some((Outcome::Written { version }, _)) => json!({ "written": version }),
        Some((Outcome::BadVersion, _)) => json!("bad_version"),
        Some((Outcome::NoNode, _)) => json!("no_node"),
        Some((Outcome::NodeExists, _)) => json!("node_exists"),
        Some((Outcome::Created, _)) => json!("created"),
        Some((Outcome::Deleted, _)) => json!("deleted"),
    };
    line
}

fn hold(h: &Hold) -> Value {
    let write = h.write.as_ref().map(|w| {
        let (outcome, version) = match w.outcome {
            WriteOutcome::Accepted { version } => ("accepted", Some(version)),
            WriteOutcome::Refused => ("refused", None),
            WriteOutcome::Unknown => ("unknown", None),
        };
        json!({ "value": w.value, "invoke_ns": w.invoked, "complete_ns": w.completed, "outcome": outcome, "version": version })
    });
    json!({
        "type": "lock", "process": h.process, "token": h.token, "acquired_ns": h.acquired,
        "released_ns": h.released, "lost": h.lost,
        "read": h.read.map(|(value, version)| json!({ "value": value, "version": version })),
        "write": write,
    })
}

fn fault(f: &FaultEvent) -> Value {
    json!({
        "type": "fault", "kind": f.kind.name(), "member": f.member, "leader": f.was_leader,
        "start_ns": f.start, "end_ns": f.end,
    })
}

fn fin(f: &FinalRead) -> Value {
    match &f.read {
        Ok((data, version)) => {
            json!({ "type": "final", "member": f.member, "path": f.path, "value": text(data), "version": version })
        }
        Err(why) => json!({ "type": "final", "member": f.member, "path": f.path, "error": why }),
    }
}
