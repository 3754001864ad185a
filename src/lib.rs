//! The `ward` package's library: what the `ward` command does that is worth a library of its
//! own, so that the integration tests drive the same code.
//!
//! # Layout
//! * [`certs`]: `ward tls`: a CA and the certificates it signs, verified as the server and
//!   the client verify them before they are handed out.
//! * [`check`]: `ward check`, the fault-injecting consistency checker: workloads, the
//!   nemesis, the recorded history, the checkers and their report.
//!
//! The runner lives here rather than in the `ward-linearizability` crate: that crate is the
//! pure, std-only search (fast to build and test, usable on any recorded history), while the
//! runner needs a client and a runtime, which the `ward` binary links anyway, and the server
//! processes it starts and faults (`ward-procs`). The certificates are made here rather than
//! in the binary so that their unit tests check them against rustls' verifiers in-process; the
//! files and their modes are the binary's.

pub mod certs;
pub mod check;
