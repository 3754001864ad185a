//! Skipping a test whose outside tools (python3 and kazoo, java and ZooKeeper's jars) are
//! missing. A skip is loud, and `WARD_REQUIRE_ALL_SUITES=1` (set by .ci/run) makes it a
//! failure: there a skip would hide a suite that silently stopped running.

use std::io::Write;

/// The variable that turns every skip into a panic.
pub const REQUIRE_ALL_SUITES: &str = "WARD_REQUIRE_ALL_SUITES";

/// Says on stderr that the running test is skipped because `why`, or panics with that
/// reason under `WARD_REQUIRE_ALL_SUITES=1`. The caller returns (and so passes) after it.
pub fn skip(why: &str) {
    // The test harness names each test's thread after the test.
    let test = std::thread::current().name().unwrap_or("this test").to_string();
    let required = std::env::var(REQUIRE_ALL_SUITES).is_ok_and(|v| !v.is_empty() && v != "0");
    if required {
        panic!("{test} cannot run: {why} ({REQUIRE_ALL_SUITES} is set, so this fails instead of skipping)");
    }
    let bar = "!".repeat(100);
    let banner = format!(
        "\n{bar}\n!!!!!!!! SKIPPED {test}: {why}\n!!!!!!!! ({REQUIRE_ALL_SUITES}=1 makes this a failure)\n{bar}\n\n"
    );
    // Straight to fd 2: `eprintln!` is captured, and so hidden, for a test that passes.
    let _ = std::io::stderr().write_all(banner.as_bytes());
}
