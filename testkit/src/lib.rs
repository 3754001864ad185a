//! Test support shared by the workspace's process-level tests (the root package's
//! `tests/it`, and `server/tests`): real `ward-server` processes and the faults a test
//! inflicts on them, and the outside tools the ZooKeeper-compatibility tests run.
//!
//! Everything here fails the calling test by panicking with a message, and cleans up after
//! itself in `Drop`: every process started here is killed, every directory made is removed.
//! The processes, the proxies and bounded waiting live in `ward-procs` (which `ward check`
//! uses too, with their fallible `try_*` forms); this crate re-exports them under the same
//! names, so a test names everything it uses as `ward_testkit::...`.
//!
//! # Layout
//!
//! Re-exported from [`ward_procs`]:
//!
//! - [`server`]: [`ServerProcess`], one `ward-server` process (durable or in memory, with or
//!   without the ZooKeeper listener): kill -9, restart on the same port and data directory,
//!   crash during startup, pause and resume. Built with [`ServerBuilder`].
//! - [`ensemble`]: [`Ensemble`], several members whose peer links each run through a proxy,
//!   so a test can partition any member or any one direction.
//! - [`error`]: [`HarnessError`], what the fallible forms return.
//! - [`http`]: a plain HTTP GET for the admin listener.
//! - [`locate`]: where the test's build lives, and the `ward-server` binary (and the
//!   client's examples) in it.
//! - [`port`]: ports a server keeps over its restarts, outside the kernel's ephemeral range.
//! - [`previous`]: the previous release's `ward-server`, built once from its commit, for the
//!   tests that upgrade an ensemble member by member.
//! - [`proxy`]: [`Proxy`], a TCP proxy between clients and a server that cuts, blocks,
//!   mutes and partitions its links.
//! - [`tempdir`]: [`TempDir`], a directory removed on drop.
//! - [`rng`]: [`Rng`], a small seeded PRNG, and the run's [`seed`].
//!
//! This crate's own:
//!
//! - [`wait`]: bounded waiting ([`within`], [`wait_for`], [`wait_until`], from
//!   `ward-procs`), the bound on a whole test ([`bounded`]) and [`serial`] for test bodies
//!   that must not share the CPU.
//! - [`browser`]: Debian's headless Chromium under Playwright, for the web console's tests.
//! - [`client`]: connecting clients with generous bounds, and waiting for a session state.
//! - [`offline`]: a server started by hand on a test's own data directory: its bare flags, a
//!   start it must refuse, and the files a refusal must leave as they were.
//! - [`tree`]: a digest of the whole znode tree, compared node by node.
//! - [`run`]: running an outside program to completion within a bound.
//! - [`mod@skip`]: skipping a test whose outside tools are missing, loudly, or failing it under
//!   `WARD_REQUIRE_ALL_SUITES=1`.
//! - `tls` (feature `tls`): test certificates, a CA and what it issues, as PEM files.
//! - [`zk`]: kazoo (provisioned in a venv under the target directory) and ZooKeeper's Java
//!   client and zkCli.

pub use ward_procs::{ensemble, error, http, locate, port, previous, proxy, rng, server, tempdir};

pub mod browser;
pub mod client;
pub mod offline;
pub mod run;
pub mod skip;
#[cfg(feature = "tls")]
pub mod tls;
pub mod tree;
pub mod wait;
pub mod zk;

pub use client::{connect, connect_as, connect_with, member_has, synced, wait_state};
pub use skip::skip;
pub use tree::{assert_same_tree, tree_digest};
pub use wait::{bounded, serial, wait_for, wait_until, within, DEADLINE, TEST_DEADLINE};
pub use ward_procs::{
    seed, Ensemble, EnsembleOptions, HarnessError, Proxy, Rng, ServerBuilder, ServerProcess, TempDir,
};
