//! Real `ward-server` processes and the faults inflicted on them: a server or a whole
//! ensemble started on ports of its own, killed, paused and restarted, its clients' and its
//! peers' links cut, held and partitioned through proxies. `ward check` (the `ward` CLI)
//! starts and faults its ensemble with this crate, and the process-level tests use it
//! through `ward-testkit`, which re-exports all of it beside what only tests need.
//!
//! Everything here cleans up after itself in `Drop`: every process started here is killed,
//! every directory made is removed. Each piece comes in two forms. The short one
//! ([`ServerProcess::start`], [`Ensemble::start`], [`wait_until`]) fails the calling test by
//! panicking with a message; the fallible one (`try_*`, [`Ensemble::launch`],
//! [`locate::server_binary_beside`]), for a program outside `cargo test`, returns a
//! [`HarnessError`] instead.
//!
//! # Layout
//!
//! - [`server`]: [`ServerProcess`], one `ward-server` process (durable or in memory, with or
//!   without the ZooKeeper listener): kill -9, restart on the same port and data directory,
//!   crash during startup, pause and resume. Built with [`ServerBuilder`].
//! - [`ensemble`]: [`Ensemble`], several members whose peer links each run through a proxy,
//!   so a test can partition any member or any one direction.
//! - [`member`]: questions put to one running member with short bounds ([`synced`],
//!   [`member_has`]).
//! - [`error`]: [`HarnessError`], what the fallible forms return.
//! - [`http`]: a plain HTTP GET for the admin listener.
//! - [`locate`]: where the test's build lives, and the `ward-server` binary (and the
//!   client's examples) in it.
//! - [`port`]: ports a server keeps over its restarts, outside the kernel's ephemeral range.
//! - [`previous`]: the previous release's `ward-server`, built once from its commit, for the
//!   tests that upgrade an ensemble member by member.
//! - [`proxy`]: [`Proxy`], a TCP proxy between clients and a server that cuts, blocks,
//!   mutes and partitions its links.
//! - [`wait`]: bounded waiting ([`within`], [`wait_for`], [`wait_until`], [`DEADLINE`]).
//! - [`tempdir`]: [`TempDir`], a directory removed on drop.
//! - [`rng`]: [`Rng`], a small seeded PRNG, and the run's [`seed`].

pub mod ensemble;
pub mod error;
pub mod http;
pub mod locate;
pub mod member;
pub mod port;
pub mod previous;
pub mod proxy;
pub mod rng;
pub mod server;
pub mod tempdir;
pub mod wait;

pub use ensemble::{Ensemble, EnsembleOptions};
pub use error::HarnessError;
pub use member::{member_has, synced};
pub use proxy::Proxy;
pub use rng::{seed, Rng};
pub use server::{ServerBuilder, ServerProcess};
pub use tempdir::TempDir;
pub use wait::{wait_for, wait_until, within, DEADLINE};
