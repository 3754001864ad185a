//! The checkers: each reads the recorded history and returns a [`Verdict`].
//!
//! * [`linearizability`]: each register key has a linearization (ward-linearizability's WGL
//!   search; operations of unknown outcome left open), G17; a violation is shown by the
//!   shortest slice of the key's history that fails on its own.
//! * [`lock_safety`]: no two holds overlap unless a holder's guard reported the lock lost;
//!   fenced writes accepted in token order; the counter never loses an increment (G12).
//! * [`ephemerals`]: an ephemeral node exists while its session lives and is gone once the
//!   session is closed or expired, never seen again after (G5).
//! * [`watch_order`]: every watch fires once, for the first change after it was armed, in
//!   zxid order, before any reply that shows the change (G6).
//! * [`sequential`]: sequential names unique and increasing in real-time order; none lost
//!   or applied twice (G4).
//! * [`durability`]: at the end, after healing and `sync`, every member shows every
//!   acknowledged write and nothing never written.
//! * [`convergence`]: after healing, every member reports the same state digest at the
//!   same zxid.

mod converge;
mod durable;
mod ephemeral;
mod linear;
mod locks;
mod sequential;
mod watches;

pub use converge::{convergence, MemberDigest};
pub use durable::{durability, FinalRead};
pub use ephemeral::ephemerals;
pub use linear::linearizability;
pub use locks::lock_safety;
pub use sequential::{sequential, Listing};
pub use watches::watch_order;

use super::report::{Finding, Verdict};

#[cfg(test)]
mod tests;

/// At most this many findings of one kind are listed: the first few tell the story.
const MAX_FINDINGS: usize = 10;

fn push(verdict: &mut Verdict, finding: Finding) {
    if verdict.violations.len() < MAX_FINDINGS {
        verdict.violations.push(finding);
    }
}
