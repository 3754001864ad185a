//! Integration tests of Ward: real `ward-server` processes driven through the public
//! client API, the `ward` CLI and raw sockets. Each test names the guarantee of
//! docs/guarantees.md (G1..G32) it checks: the lock, election and recipe tests (t90..t98)
//! G12 and docs/recipes.md, the cleanup of containers and TTL nodes (t99) G20, the ensemble
//! tests (t100..t105) G13..G19, t106 runs `ward check`, persistent watches (t51) G23 and
//! lock-delay (t107) G25, members that come back behind the others (t108) G6, G16, G17,
//! planned leadership changes (t109) G26, a member cut off and back (t110) G27,
//! a dead leader replaced at once (t111) G28, the blocking
//! client (t112) and the crate's examples (t113) G12, backup and restore (t114) G29,
//! disaster recovery (t115) G30, observers (t116) G31, a rolling upgrade from the previous
//! release and back (t117) G32, TLS with the CLI and
//! certificates `ward tls` makes (t83, t84) G22. Each file has a number of its own (checked below).
//!
//! One test binary, so the server is built and started from one place (`harness`, over
//! `ward-testkit`).

mod harness;

mod t100_ensemble;
mod t101_failover;
mod t102_ensemble_locks;
mod t103_linearizable;
mod t104_membership;
mod t105_session_moves;
mod t106_ward_check;
mod t107_lock_delay;
mod t108_catch_up;
mod t109_leader_transfer;
mod t10_crud;
mod t110_pre_vote;
mod t111_dead_leader;
mod t112_blocking;
mod t113_examples;
mod t114_backup_restore;
mod t115_force_new_ensemble;
mod t116_observers;
mod t117_rolling_upgrade;
mod t20_sequential;
mod t30_multi;
mod t40_sessions;
mod t50_watches;
mod t51_persistent_watches;
mod t60_reconnect;
mod t70_bad_input;
mod t80_cli;
mod t81_cli_ops;
mod t82_cli_acl;
mod t83_cli_tls;
mod t84_tls_certs;
mod t90_locks;
mod t91_lock_faults;
mod t92_election;
mod t93_lock_cli;
mod t94_reentrant;
mod t95_rwlock;
mod t96_semaphore_multi;
mod t97_owner_context;
mod t98_recipe_cli;
mod t99_cleanup;

/// Each test file has a number of its own, so "t84" names one file in a report or a doc.
#[test]
fn test_files_are_numbered_once() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let mut seen = std::collections::HashMap::new();
    for entry in std::fs::read_dir(&dir).expect("tests/it").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let number: String = name.strip_prefix('t').unwrap_or("").chars().take_while(char::is_ascii_digit).collect();
        if !number.is_empty() {
            if let Some(other) = seen.insert(number.clone(), name.clone()) {
                panic!("t{number} numbers both {other} and {name}");
            }
        }
    }
}
