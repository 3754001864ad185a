//! Identifiers shared by every message.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The position of an applied change in the global order: every applied command gets the
/// next one. Zero means "nothing applied yet".
pub type Zxid = u64;

/// A session's id. Assigned by the state machine (the zxid of the command that created it),
/// so it is the same on every replica and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionId(pub u64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// The password a client shows to resume its session on a new connection. Chosen at random
/// by the server that accepts the session, then logged with the session so that any replica
/// can check it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionSecret(pub [u8; 16]);

impl fmt::Debug for SessionSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print a credential into logs.
        f.write_str("SessionSecret(..)")
    }
}
