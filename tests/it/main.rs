//! Integration tests of Ward: real `ward-server` processes driven through the public
//! client API, the `ward` CLI and raw sockets. Each test names the guarantee of
//! docs/guarantees.md (G1..G10) it checks.
//!
//! One test binary, so the server is built and started from one place (`harness`).

mod harness;

mod t10_crud;
mod t20_sequential;
mod t30_multi;
mod t40_sessions;
mod t50_watches;
mod t60_reconnect;
mod t70_bad_input;
mod t80_cli;
