//! Changes to an ensemble's membership, and the futures of the membership calls.

use super::pending::Rejected;
use std::future::Future;
use std::pin::Pin;
use ward_proto::MemberList;

/// A change to an ensemble's membership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberChange {
    /// Member `id`, reachable by its peers at `addr`, joins (as a learner, then a voter).
    Add {
        id: u64,
        addr: String,
    },
    /// Member `id` joins as an observer: a learner for good, which never votes.
    AddObserver {
        id: u64,
        addr: String,
    },
    Remove {
        id: u64,
    },
}

/// The future of [`Replication::members`](super::Replication::members).
pub type Members = Pin<Box<dyn Future<Output = Result<MemberList, Rejected>> + Send>>;

/// The future of [`Replication::transfer_leader`](super::Replication::transfer_leader): the member that leads.
pub type Transfer = Pin<Box<dyn Future<Output = Result<u64, Rejected>> + Send>>;
