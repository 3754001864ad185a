//! Which members the leader hears from: what `ward members`, the console's ensemble view and
//! `mntr` say of a member that has gone quiet, instead of its last figures as if current.
//!
//! openraft's leader records, per member, when it sent the newest append or heartbeat that
//! member acknowledged (`RaftMetrics::heartbeat`). A member whose newest acknowledgement is
//! older than the leader's lease has missed every heartbeat of a whole election timeout and
//! more: a follower that silent toward its leader would have stood for election itself.

use super::types::{NodeId, TypeConfig};
use crate::metrics::HeardFrom;
use openraft::{Instant, RaftMetrics};
use std::collections::BTreeMap;
use std::time::Duration;
use ward_proto::Contact;

/// Each member's contact with this member, which must lead (`None` otherwise): acknowledged
/// within `bound`, or not.
pub(super) fn contacts(m: &RaftMetrics<TypeConfig>, bound: Duration) -> Option<BTreeMap<NodeId, Contact>> {
    if m.current_leader != Some(m.id) {
        return None;
    }
    let heard = m.heartbeat.as_ref()?;
    let contacts = m
        .membership_config
        .membership()
        .nodes()
        .map(|(id, _)| {
            let age = heard.get(id).copied().flatten().map(|sent| sent.elapsed());
            (*id, if *id == m.id { Contact::Leads } else { judge(age, bound) })
        })
        .collect();
    Some(contacts)
}

/// A member whose newest acknowledged message was sent `age` ago (`None`: nothing
/// acknowledged since this leader took the lead).
pub(super) fn judge(age: Option<Duration>, bound: Duration) -> Contact {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    match age {
        Some(age) if age <= bound => Contact::Reachable { last_heard_ms: ms(age) },
        age => Contact::Unreachable { last_heard_ms: age.map(ms) },
    }
}

/// [`HeardFrom`] from [`contacts`] and the voters' ids.
pub(super) fn heard(contacts: &BTreeMap<NodeId, Contact>, is_voter: impl Fn(NodeId) -> bool) -> HeardFrom {
    let mut heard = HeardFrom::default();
    for (id, contact) in contacts {
        if let Contact::Reachable { .. } = contact {
            match is_voter(*id) {
                true => heard.voters += 1,
                false => heard.learners += 1,
            }
        }
    }
    heard
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/operations.md, "Members": unreachable once nothing acknowledged was sent within
    /// the lease; never heard since the leader took the lead is unreachable too.
    #[test]
    fn a_member_is_unreachable_once_its_last_acknowledgement_is_older_than_the_bound() {
        let bound = Duration::from_millis(750);
        assert_eq!(judge(Some(Duration::from_millis(200)), bound), Contact::Reachable { last_heard_ms: 200 });
        assert_eq!(judge(Some(bound), bound), Contact::Reachable { last_heard_ms: 750 });
        assert_eq!(judge(Some(Duration::from_millis(3200)), bound), Contact::Unreachable { last_heard_ms: Some(3200) });
        assert_eq!(judge(None, bound), Contact::Unreachable { last_heard_ms: None });
        let contacts = BTreeMap::from([
            (1, Contact::Leads),
            (2, Contact::Reachable { last_heard_ms: 10 }),
            (3, Contact::Unreachable { last_heard_ms: None }),
            (4, Contact::Reachable { last_heard_ms: 10 }),
        ]);
        assert_eq!(heard(&contacts, |id| id != 4), HeardFrom { voters: 1, learners: 1 });
    }
}
