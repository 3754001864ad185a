//! The checkers: each reads the recorded history and returns a [`Verdict`].
//!
//! * [`linearizability`]: each register key has a linearization (ward-check's WGL search;
//!   operations of unknown outcome left open), G17.
//! * [`lock_safety`]: no two holds overlap unless a holder's guard reported the lock lost;
//!   fenced writes accepted in token order; the counter never loses an increment (G12).
//! * [`durability`]: at the end, after healing and `sync`, every member shows every
//!   acknowledged write and nothing never written.

mod durable;
mod linear;
mod locks;

pub use durable::{durability, FinalRead};
pub use linear::linearizability;
pub use locks::lock_safety;

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
