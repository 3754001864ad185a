//! `ward members` and `ward stats`: how the ensemble and the server are doing.

use crate::commands::{ward, Failure};
use crate::output::Out;
use serde_json::{json, Map, Value};
use ward_client::{Client, MemberInfo};

pub async fn members(client: &Client, out: Out) -> Result<(), Failure> {
    let members = client.members().await.map_err(ward("members"))?;
    if out.json() {
        let list: Vec<Value> = members
            .iter()
            .map(|m| json!({"id": m.id, "addr": m.addr, "role": role(m), "applied": m.applied, "lag": m.lag}))
            .collect();
        return out.value(&json!({ "members": list }));
    }
    out.line(&format!("{:<4} {:<24} {:<9} {:>10} {:>6}", "ID", "PEER ADDRESS", "ROLE", "APPLIED", "LAG"))?;
    for m in &members {
        let known = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        out.line(&format!("{:<4} {:<24} {:<9} {:>10} {:>6}", m.id, m.addr, role(m), known(m.applied), known(m.lag)))?;
    }
    Ok(())
}

fn role(member: &MemberInfo) -> String {
    format!("{:?}", member.role).to_lowercase()
}

/// `NAME VALUE` lines, or one JSON object with the same names.
pub async fn stats(client: &Client, out: Out) -> Result<(), Failure> {
    let stats = client.server_stats().await.map_err(ward("stats"))?;
    let figures = [
        ("last_zxid", stats.last_zxid),
        ("znodes", stats.znodes),
        ("sessions", stats.sessions),
        ("watches", stats.watches),
        ("lock_grants", stats.lock_grants),
        ("log_fsyncs", stats.log_fsyncs),
    ];
    if out.json() {
        let object: Map<String, Value> =
            figures.iter().map(|(name, value)| ((*name).to_owned(), json!(value))).collect();
        return out.value(&Value::Object(object));
    }
    for (name, value) in figures {
        out.line(&format!("{name} {value}"))?;
    }
    Ok(())
}
