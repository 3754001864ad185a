//! The run's history as JSON lines (`history.jsonl`), one event a line in order of its start
//! on the run's clock (nanoseconds since the run began):
//!
//! * `{"type":"op","workload":"registers","process":3,"key":"/…/reg-1","f":"cas","value":"p3-17","expected_version":4,"invoke_ns":…,"complete_ns":…,"outcome":{"written":5}}`
//!   (`f`: `read`, `write`, `cas`; `outcome`: `{"value":…,"version":…}`, `{"written":V}`,
//!   `"bad_version"`, `"no_node"`, or `null` with `complete_ns` `null` when unknown);
//! * `{"type":"lock","process":2,"token":…,"acquired_ns":…,"released_ns":…,"lost":false,"read":{"value":7,"version":7},"write":{"value":8,"invoke_ns":…,"complete_ns":…,"outcome":"accepted","version":8}}`;
//! * `{"type":"ephemeral","process":201,"path":…,"session":…,"create":[invoke_ns, complete_ns|null],"alive":[[…,…]],"looks":[{"invoke_ns":…,"complete_ns":…,"present":true}],"end":{"closed":[…,…]}|{"expired":{"cut_ns":…,"gone_ns":…|null}}|"unknown"}`;
//! * `{"type":"watch_write","process":300,"key":…,"invoke_ns":…,"complete_ns":…|null,"zxid":…|null}`
//!   and `{"type":"watch","process":301,"key":…,"zxid":…,"invoke_ns":…,"complete_ns":…,"event":{"kind":"NodeDataChanged","zxid":…,"at_ns":…}|null,"early":{"zxid":…,"at_ns":…}|null,"reconnected":false}`;
//! * `{"type":"seq","process":401,"data":"p401-7","invoke_ns":…,"name":"n-0000000012"|null,"complete_ns":…|null}`;
//! * `{"type":"fault","kind":"kill","member":2,"leader":true,"detail":"kill -9 2","start_ns":…,"end_ns":…}`;
//! * `{"type":"final","member":"127.0.0.1:7181","path":…,"value":…,"version":…}` (`"value":null`
//!   for a node gone, or `"error"`): what each member showed at the end; `{"type":"listing","member":…,"children":N,"unclaimed":[[name,data]]}`
//!   its sequential nodes; `{"type":"digest","member":…,"zxid":…,"line":…}` its state digest.

use super::checkers::{FinalRead, Listing, MemberDigest};
use super::locks::{Hold, WriteOutcome};
use super::nemesis::FaultEvent;
use super::registers::RegisterOp;
use super::sequential::SeqCreate;
use super::sessions::{End, Ephemeral};
use super::watches::{Armed, WatchWrite};
use super::CheckError;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use ward_linearizability::{Op, Outcome};

/// Everything recorded, to be written.
#[derive(Default)]
pub struct Recorded<'a> {
    pub keys: &'a [String],
    pub ops: &'a [RegisterOp],
    pub holds: &'a [Hold],
    pub ephemerals: &'a [Ephemeral],
    pub watch_keys: &'a [String],
    pub watch_writes: &'a [WatchWrite],
    pub armed: &'a [Armed],
    pub creates: &'a [SeqCreate],
    pub faults: &'a [FaultEvent],
    pub finals: &'a [FinalRead],
    pub listings: &'a [Listing],
    pub digests: &'a [MemberDigest],
}

/// Writes `history.jsonl` under `dir`.
pub fn write(dir: &Path, r: &Recorded<'_>) -> Result<(), CheckError> {
    let mut lines: Vec<(u64, Value)> = Vec::new();
    lines.extend(r.ops.iter().map(|o| (o.invoked, op(r.keys, o))));
    lines.extend(r.holds.iter().map(|h| (h.acquired, hold(h))));
    lines.extend(r.ephemerals.iter().map(|e| (e.created.0, ephemeral(e))));
    lines.extend(r.watch_writes.iter().map(|w| (w.invoked, watch_write(r.watch_keys, w))));
    lines.extend(r.armed.iter().map(|a| (a.invoked, armed(r.watch_keys, a))));
    lines.extend(r.creates.iter().map(|c| (c.invoked, seq(c))));
    lines.extend(r.faults.iter().map(|f| (f.start, fault(f))));
    lines.extend(r.finals.iter().map(|f| (u64::MAX, fin(f))));
    lines.extend(r.listings.iter().map(|l| (u64::MAX, listing(l))));
    lines.extend(r.digests.iter().map(|d| (u64::MAX, digest(d))));
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

fn ephemeral(e: &Ephemeral) -> Value {
    let looks: Vec<Value> = e
        .looks
        .iter()
        .map(|l| json!({ "invoke_ns": l.invoked, "complete_ns": l.completed, "present": l.present }))
        .collect();
    let end = match e.end {
        End::Closed { invoked, completed } => json!({ "closed": [invoked, completed] }),
        End::Expired { cut, gone } => json!({ "expired": { "cut_ns": cut, "gone_ns": gone } }),
        End::Unknown => json!("unknown"),
    };
    json!({
        "type": "ephemeral", "process": e.process, "path": e.path, "session": e.session,
        "create": [e.created.0, e.created.1], "alive": e.alive, "looks": looks, "end": end,
    })
}

fn watch_write(keys: &[String], w: &WatchWrite) -> Value {
    json!({
        "type": "watch_write", "process": w.process, "key": keys.get(w.key), "invoke_ns": w.invoked,
        "complete_ns": w.done.map(|d| d.0), "zxid": w.done.map(|d| d.1),
    })
}

fn armed(keys: &[String], a: &Armed) -> Value {
    json!({
        "type": "watch", "process": a.process, "key": keys.get(a.key), "zxid": a.zxid,
        "invoke_ns": a.invoked, "complete_ns": a.completed,
        "event": a.event.map(|e| json!({ "kind": format!("{:?}", e.kind), "zxid": e.zxid, "at_ns": e.at })),
        "early": a.early.map(|(zxid, at)| json!({ "zxid": zxid, "at_ns": at })),
        "reconnected": a.reconnected,
    })
}

fn seq(c: &SeqCreate) -> Value {
    json!({
        "type": "seq", "process": c.process, "data": c.data, "invoke_ns": c.invoked,
        "name": c.created.as_ref().map(|(name, _)| name), "complete_ns": c.created.as_ref().map(|(_, at)| at),
    })
}

fn fault(f: &FaultEvent) -> Value {
    json!({
        "type": "fault", "kind": f.kind.name(), "member": f.member, "leader": f.was_leader,
        "detail": f.detail, "start_ns": f.start, "end_ns": f.end,
    })
}

fn fin(f: &FinalRead) -> Value {
    match &f.read {
        Ok(Some((data, version))) => {
            json!({ "type": "final", "member": f.member, "path": f.path, "value": text(data), "version": version })
        }
        Ok(None) => json!({ "type": "final", "member": f.member, "path": f.path, "value": null }),
        Err(why) => json!({ "type": "final", "member": f.member, "path": f.path, "error": why }),
    }
}

fn listing(l: &Listing) -> Value {
    match &l.names {
        Ok(names) => {
            let unclaimed: Vec<Value> = l
                .unclaimed
                .iter()
                .map(|(name, data)| json!([name, data.as_ref().map_or_else(|e| format!("unread: {e}"), Clone::clone)]))
                .collect();
            json!({ "type": "listing", "member": l.member, "children": names.len(), "unclaimed": unclaimed })
        }
        Err(why) => json!({ "type": "listing", "member": l.member, "error": why }),
    }
}

fn digest(d: &MemberDigest) -> Value {
    match &d.read {
        Ok((zxid, line)) => json!({ "type": "digest", "member": d.member, "zxid": zxid, "line": line }),
        Err(why) => json!({ "type": "digest", "member": d.member, "error": why }),
    }
}
