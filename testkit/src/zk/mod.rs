//! The outside ZooKeeper clients the compatibility tests run against a server's ZooKeeper
//! port: kazoo scripts ([`Kazoo`]) and ZooKeeper's own Java client and zkCli ([`ZkJava`]);
//! and [`raw`], a bare jute client of our own for byte-level tests.
//! Each is found (or provisioned) once per test process; where it cannot be had the test
//! is skipped ([`crate::skip()`]). The scripts and their expected outputs belong to the tests
//! and live with them; these types take the directory they are in. [`raw`] is a bare client
//! for tests at the byte level.

mod java;
mod kazoo;
pub mod raw;

pub use java::ZkJava;
pub use kazoo::Kazoo;

use std::path::Path;
use std::time::Duration;

/// The bound on one script or Java program's whole run.
pub const SCRIPT_LIMIT: Duration = Duration::from_secs(90);

/// The expected output `name` in the scripts directory `dir`.
pub fn expected(dir: impl AsRef<Path>, name: &str) -> String {
    let path = dir.as_ref().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}
