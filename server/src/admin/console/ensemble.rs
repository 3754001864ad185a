//! `GET /api/ensemble`: the members with their roles, applied index and lag (as the
//! leader reports them; from a follower the request is forwarded to it), whether the leader
//! hears from each (known only on the leader) and a transfer of its leadership in progress,
//! this member's own Raft figures, and the leader changes this server has seen (sampled each
//! second).

use super::http::{json, Reply};
use super::Console;
use crate::Server;
use serde::Serialize;
use std::time::Duration;
use ward_proto::{Contact, MemberRole, MemberStatus};

/// How long the leader may take to answer for the member list.
const MEMBERS_TIMEOUT: Duration = Duration::from_secs(3);

/// A leader this server saw take over (or none, during an election).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct LeaderChange {
    pub(crate) at_ms: i64,
    pub term: u64,
    pub leader: Option<u64>,
}

#[derive(Serialize)]
struct Answer {
    /// False for a single server with its log in memory: no Raft group.
    replicated: bool,
    this_member: Option<Me>,
    members: Vec<Member>,
    /// Why the member list is missing, if it is.
    members_error: Option<String>,
    /// The leader, as the member list names it.
    leader: Option<u64>,
    /// While the leader hands its leadership over: the member it hands it to (known only on
    /// the leader).
    handing_over_to: Option<u64>,
    leader_changes: Vec<LeaderChange>,
    last_zxid: u64,
    in_contact: bool,
}

#[derive(Serialize)]
struct Me {
    id: u64,
    role: &'static str,
    term: u64,
    leader: Option<u64>,
    last_log_index: u64,
    applied_index: u64,
    /// This member's release level, the ensemble's as it knows it (the lowest of its
    /// members'; only the leader hears from all), and each member's (`null`: not heard).
    level: u32,
    ensemble_level: u32,
    member_levels: std::collections::BTreeMap<u64, Option<u32>>,
}

#[derive(Serialize)]
struct Member {
    id: u64,
    addr: String,
    role: &'static str,
    applied: Option<u64>,
    lag: Option<u64>,
    /// `leader`, `reachable`, `unreachable`, or `unknown` (asked of a member that does not
    /// lead: only the leader knows).
    contact: &'static str,
    /// How long ago the leader last heard from it, when known.
    last_heard_ms: Option<u64>,
}

pub(crate) async fn answer(server: &Server, console: &Console) -> Reply {
    let (list, members_error) = match tokio::time::timeout(MEMBERS_TIMEOUT, server.replication.members()).await {
        Ok(Ok(list)) => (Some(list), None),
        Ok(Err(rejected)) => (None, Some(rejected.to_string())),
        Err(_) => (None, Some("the leader did not answer in time".to_string())),
    };
    let (leader, handing_over_to) = list.as_ref().map_or((None, None), |l| (l.leader, l.handing_over_to));
    let members = list.into_iter().flat_map(|l| l.members).map(member).collect();
    let figures = server.replication.raft_figures();
    let this_member = figures.as_ref().map(|f| Me {
        id: f.id,
        role: f.role,
        term: f.term,
        leader: f.leader,
        last_log_index: f.last_log_index,
        applied_index: f.applied_index,
        level: crate::peer::level::LEVEL,
        ensemble_level: f.ensemble_level,
        member_levels: f.member_levels.iter().copied().collect(),
    });
    json(&Answer {
        replicated: figures.is_some(),
        this_member,
        members,
        members_error,
        leader,
        handing_over_to,
        leader_changes: console.leader_changes(),
        last_zxid: server.core.read(|s| s.last_zxid()),
        in_contact: server.replication.in_contact(),
    })
}

fn member(m: MemberStatus) -> Member {
    let (contact, last_heard_ms) = match m.contact {
        Contact::Leads => ("leader", None),
        Contact::Reachable { last_heard_ms } => ("reachable", Some(last_heard_ms)),
        Contact::Unreachable { last_heard_ms } => ("unreachable", last_heard_ms),
        Contact::Unknown => ("unknown", None),
    };
    let info = m.info;
    Member {
        id: info.id,
        addr: info.addr,
        role: match info.role {
            MemberRole::Leader => "leader",
            MemberRole::Follower => "follower",
            MemberRole::Learner => "learner",
        },
        applied: info.applied,
        lag: info.lag,
        contact,
        last_heard_ms,
    }
}
