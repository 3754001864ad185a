//! `ward members` and `ward stats`: how the ensemble and the server are doing.

use crate::commands::{ward, Failure};
use crate::output::Out;
use serde_json::{json, Map, Value};
use ward_client::{Client, Contact, MemberInfo, MemberStatus};

/// The member list as the leader tells it: each member's contact is known only there, so
/// asked through a follower the list says so and names the leader.
pub async fn members(client: &Client, out: Out) -> Result<(), Failure> {
    let list = client.member_list().await.map_err(ward("members"))?;
    if out.json() {
        let rows: Vec<Value> = list
            .members
            .iter()
            .map(|m| {
                let i = &m.info;
                let (contact, heard) = contact(m.contact);
                let (id, addr, role, applied, lag) = (i.id, &i.addr, role(i), i.applied, i.lag);
                json!({"id": id, "addr": addr, "role": role, "applied": applied, "lag": lag, "contact": contact, "last_heard_ms": heard})
            })
            .collect();
        let answer = json!({"members": rows, "leader": list.leader, "handing_over_to": list.handing_over_to});
        return out.value(&answer);
    }
    out.line(&format!(
        "{:<4} {:<24} {:<9} {:>10} {:>6}  {}",
        "ID", "PEER ADDRESS", "ROLE", "APPLIED", "LAG", "CONTACT"
    ))?;
    for m in &list.members {
        let i = &m.info;
        let known = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        let said = said(m, list.handing_over_to);
        let line =
            format!("{:<4} {:<24} {:<9} {:>10} {:>6}  {said}", i.id, i.addr, role(i), known(i.applied), known(i.lag));
        out.line(line.trim_end())?;
    }
    if list.members.iter().any(|m| m.contact == Contact::Unknown) {
        let leader = list.leader.map_or_else(|| "the leader".to_owned(), |id| format!("the leader (member {id})"));
        out.line(&format!("(whether a member is reachable is known only to {leader}: ask it with --server)"))?;
    }
    Ok(())
}

fn role(member: &MemberInfo) -> String {
    format!("{:?}", member.role).to_lowercase()
}

/// The contact's name in JSON, and how long ago the leader heard from the member.
fn contact(contact: Contact) -> (&'static str, Option<u64>) {
    match contact {
        Contact::Leads => ("leader", None),
        Contact::Reachable { last_heard_ms } => ("reachable", Some(last_heard_ms)),
        Contact::Unreachable { last_heard_ms } => ("unreachable", last_heard_ms),
        Contact::Unknown => ("unknown", None),
    }
}

/// The CONTACT column: how the leader hears from the member, in words.
fn said(member: &MemberStatus, handing_over_to: Option<u64>) -> String {
    let seconds = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
    match member.contact {
        Contact::Leads => handing_over_to.map_or_else(String::new, |to| format!("handing over to {to}")),
        Contact::Reachable { .. } => "reachable".to_owned(),
        Contact::Unreachable { last_heard_ms: Some(ms) } => format!("unreachable (last heard {} ago)", seconds(ms)),
        Contact::Unreachable { last_heard_ms: None } => {
            "unreachable (not heard from since this leader took over)".to_owned()
        }
        Contact::Unknown => "?".to_owned(),
    }
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
