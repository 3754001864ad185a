//! Release levels: what each member's release can do beyond the peer protocol's version, and
//! the ensemble's level, the lowest of them (etcd's cluster version). A member says its level
//! after its hello and after its answer to one; a member of a release from before levels says
//! nothing there, and counts as [`BASE`]. Something a release adds that older members cannot
//! handle (a new request to the leader, later a new log entry or format) is used only once
//! the ensemble's level reaches the release that added it, so an ensemble upgraded member by
//! member keeps working at every step, and a member can go back to the older release until
//! the last one is upgraded (docs/operations.md, "Upgrading").
//!
//! The level rides in the hello's frame after the hello itself (and after the answer): postcard
//! decodes a message from the start of a frame and ignores what follows, so an older member
//! reads the hello it knows and skips the level; a newer one reads the level if it is there.

use super::wire::{HelloAnswer, PeerHello};
use crate::raft::types::NodeId;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// This release's level. 3: observers (`AdminRequest::AddObserver`).
pub(crate) const LEVEL: u32 = 3;
/// The level of a member that says none: the peer protocol 2 releases before levels.
pub(crate) const BASE: u32 = 2;
/// The level that added observers.
pub(crate) const OBSERVERS: u32 = 3;

/// A hello and this member's level, as sent.
#[derive(Serialize)]
pub(crate) struct HelloOut(pub PeerHello, pub u32);

/// A hello and the level after it, if the caller's release says one.
pub(crate) struct HelloIn(pub PeerHello, pub Option<u32>);

/// An answer to a hello and this member's level, as sent.
#[derive(Serialize)]
pub(crate) struct AnswerOut(pub HelloAnswer, pub u32);

/// An answer and the level after it, if the answering member's release says one.
pub(crate) struct AnswerIn(pub HelloAnswer, pub Option<u32>);

/// Reads a message and, if anything follows it, the level after it.
struct ThenLevel<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ThenLevel<T> {
    type Value = (T, Option<u32>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message, and maybe a level")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let message = seq.next_element::<T>()?.ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
        // An older release's frame ends here: reading on fails, and that means no level.
        let level = seq.next_element::<u32>().ok().flatten();
        Ok((message, level))
    }
}

impl<'de> Deserialize<'de> for HelloIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (hello, level) = d.deserialize_tuple(2, ThenLevel::<PeerHello>(std::marker::PhantomData))?;
        Ok(HelloIn(hello, level))
    }
}

impl<'de> Deserialize<'de> for AnswerIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (answer, level) = d.deserialize_tuple(2, ThenLevel::<HelloAnswer>(std::marker::PhantomData))?;
        Ok(AnswerIn(answer, level))
    }
}

/// The level each member last said, by member: recorded on both sides of every connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct Levels(Arc<Mutex<HashMap<NodeId, u32>>>);

impl Levels {
    /// Member `id` said `level` (`None`: nothing, an older release).
    pub(crate) fn record(&self, id: NodeId, level: Option<u32>) {
        let level = level.unwrap_or(BASE);
        let before = self.0.lock().unwrap_or_else(PoisonError::into_inner).insert(id, level);
        if before != Some(level) {
            tracing::info!(member = id, level, "member's release level");
        }
    }

    /// Member `id` could not be reached: what it said before may not hold when it is back.
    pub(crate) fn forget(&self, id: NodeId) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }

    /// The ensemble's level among `members` (this one, `me`, included), with each member's:
    /// the lowest, and [`BASE`] while a member's is not known.
    pub(crate) fn of(&self, me: NodeId, members: impl IntoIterator<Item = NodeId>) -> EnsembleLevel {
        let known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let each: BTreeMap<NodeId, Option<u32>> =
            members.into_iter().map(|id| (id, if id == me { Some(LEVEL) } else { known.get(&id).copied() })).collect();
        let level = each.values().map(|l| l.unwrap_or(BASE)).min().unwrap_or(LEVEL);
        EnsembleLevel { level, each }
    }
}

/// The ensemble's level, and each member's (`None`: not heard yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EnsembleLevel {
    pub level: u32,
    pub each: BTreeMap<NodeId, Option<u32>>,
}

impl EnsembleLevel {
    /// Why `need` is not reached: the members below it.
    pub(crate) fn short_of(&self, need: u32) -> Option<String> {
        if self.level >= need {
            return None;
        }
        let below: Vec<String> = self
            .each
            .iter()
            .filter(|(_, l)| l.is_none_or(|l| l < need))
            .map(|(id, l)| match l {
                Some(l) => format!("member {id} (level {l})"),
                None => format!("member {id} (not heard from yet)"),
            })
            .collect();
        Some(format!("needs every member at release level {need} or later; below it: {}", below.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::wire::{Channel, PEER_MAGIC, PEER_VERSION};

    fn hello() -> PeerHello {
        PeerHello {
            magic: PEER_MAGIC,
            version: PEER_VERSION,
            ensemble: "prod".into(),
            from: 1,
            to: 2,
            channel: Channel::Raft,
        }
    }

    /// An older release reads a hello with a level after it as the hello alone, and a newer
    /// one reads an older hello as one without a level.
    #[test]
    fn a_level_after_the_hello_is_skipped_by_older_members_and_missed_by_none() {
        let with = postcard::to_allocvec(&HelloOut(hello(), 7)).expect("encode");
        assert_eq!(postcard::from_bytes::<PeerHello>(&with).expect("an older member decodes"), hello());
        let HelloIn(read, level) = postcard::from_bytes(&with).expect("decodes");
        assert_eq!((read, level), (hello(), Some(7)));
        let without = postcard::to_allocvec(&hello()).expect("encode");
        let HelloIn(read, level) = postcard::from_bytes(&without).expect("decodes");
        assert_eq!((read, level), (hello(), None));
        let answer = postcard::to_allocvec(&AnswerOut(HelloAnswer::Refused("no".into()), 3)).expect("encode");
        assert_eq!(postcard::from_bytes::<HelloAnswer>(&answer).expect("decodes"), HelloAnswer::Refused("no".into()));
        let AnswerIn(read, level) = postcard::from_bytes(&answer).expect("decodes");
        assert_eq!((read, level), (HelloAnswer::Refused("no".into()), Some(3)));
        let AnswerIn(_, level) =
            postcard::from_bytes(&postcard::to_allocvec(&HelloAnswer::Accepted).expect("encode")).expect("decodes");
        assert_eq!(level, None);
    }

    #[test]
    fn the_ensemble_level_is_the_lowest_and_base_while_a_member_is_unheard() {
        let levels = Levels::default();
        assert_eq!(levels.of(1, [1, 2, 3]).level, BASE, "nobody heard");
        levels.record(2, Some(LEVEL));
        assert_eq!(levels.of(1, [1, 2, 3]).level, BASE, "member 3 unheard");
        levels.record(3, None);
        let older = levels.of(1, [1, 2, 3]);
        assert_eq!(older.level, BASE, "member 3 is of an older release");
        assert!(older.short_of(OBSERVERS).is_some_and(|why| why.contains("member 3 (level 2)")));
        levels.record(3, Some(LEVEL));
        assert_eq!(levels.of(1, [1, 2, 3]).level, LEVEL);
        assert_eq!(levels.of(1, [1, 2, 3]).short_of(OBSERVERS), None);
        levels.forget(3);
        assert_eq!(levels.of(1, [1, 2, 3]).level, BASE, "member 3 unreachable: perhaps back on an older release");
    }
}
