//! The `ward` package's library: what the `ward` command does that is worth a library of its
//! own, so that the integration tests drive the same code.
//!
//! # Layout
//! * [`check`]: `ward check`, the fault-injecting consistency checker: workloads, the
//!   nemesis, the recorded history, the checkers and their report.
//!
//! The runner lives here rather than in the `ward-check` crate: that crate is the pure,
//! std-only search (fast to build and test, usable on any recorded history), while the runner
//! needs a client, a runtime and the process harness (`ward-testkit`), which the `ward`
//! binary links anyway.

pub mod check;
