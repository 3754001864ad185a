//! Session liveness on this server: deadlines and which connection serves each session.
//! The session table itself (ids, secrets, timeouts) is replicated state in
//! [`crate::state`]; this module is local and never logged.

pub mod expiry;
pub mod tracker;

pub use tracker::SessionTracker;
