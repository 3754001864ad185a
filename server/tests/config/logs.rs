//! Logs (docs/operations.md "Logs"): plain text without colour codes when stderr is not a
//! terminal, and `RUST_LOG` sets the level. (JSON lines: `every_option`.)

use ward_testkit::ServerProcess;

#[test]
fn a_redirected_log_has_no_colour_codes_and_rust_log_sets_the_level() {
    let mut server = ServerProcess::builder().in_memory().envs(&[("RUST_LOG", "warn")]).start();
    server.terminate();
    let log = server.log_tail();
    assert!(log.contains(" WARN "), "the --in-memory warning is logged:\n{log}");
    assert!(!log.contains(" INFO "), "RUST_LOG=warn leaves out info lines:\n{log}");
    assert!(!log.contains('\u{1b}'), "ANSI escape codes in a redirected log:\n{log:?}");
}
