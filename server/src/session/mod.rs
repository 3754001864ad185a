//! Session liveness on this server. The session table itself (ids, secrets, timeouts) is
//! replicated state in [`crate::state`]; this module is local and never logged.
//!
//! * [`tracker`]: `SessionTracker`, what the connections and the leader's duties call: the
//!   three tables below under one lock.
//! * [`deadlines`]: each session's deadline, and whether its expiry is proposed.
//! * [`touches`]: touch rounds, the sessions heard from here passed on to the leader, and
//!   the ones it refused.
//! * [`readiness`]: whether this server may do a leader's duties now (`Readiness`), which
//!   the sweep, the cleanup of containers and TTL nodes, and the end of lock-delays read.
//! * [`expiry`]: the sweep that proposes the expiry of sessions past their deadline.
//!
//! The connection serving each session is [`crate::conn::directory`]'s, kept under the
//! tracker's lock.

pub(crate) mod deadlines;
pub(crate) mod expiry;
pub(crate) mod readiness;
pub(crate) mod touches;
pub mod tracker;

pub use readiness::Readiness;
pub use tracker::SessionTracker;
