//! G22, certificates reloaded on SIGHUP (docs/security.md "TLS", "Renewing certificates"):
//! new connections get the certificate the files hold now, open ones keep theirs, and a
//! reload that fails (a spoilt file, a key any user can read) keeps the one in force.

use super::{served, session, trusting, Pki};
use std::process::Command;
use ward_testkit::{bounded, wait_until, ServerProcess, DEADLINE};

fn sighup(server: &ServerProcess) {
    let pid = server.pid().expect("running").to_string();
    let status = Command::new("kill").args(["-HUP", &pid]).status().expect("run kill");
    assert!(status.success(), "kill -HUP {pid}: {status}");
}

/// Waits until the server's log has said `what` `n` times.
async fn logged(server: &ServerProcess, what: &str, n: usize) {
    wait_until(&format!("{n} log lines saying {what:?}"), DEADLINE, || async {
        server.log_tail().lines().filter(|l| l.contains(what)).count() >= n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_certificate_for_new_connections() {
    let pki = Pki::new();
    let mut server = ServerProcess::builder().in_memory().flags(&pki.server_flags()).start();
    let addr = server.addr_str();
    bounded(async {
        let before = session(&addr, Some(trusting(&pki.ca, None))).await.expect("a client of the first CA");
        served(&before, "/before").await;
        // Renewed by another CA, in the same files.
        pki.other_ca.server("server");
        sighup(&server);
        logged(&server, "TLS certificates reloaded", 1).await;
        let after = session(&addr, Some(trusting(&pki.other_ca, None))).await.expect("a client of the new CA");
        served(&after, "/after").await;
        super::refused(&addr, Some(trusting(&pki.ca, None)), "a new client trusting only the old CA").await;
        // The connection opened before the reload goes on with the old certificate.
        served(&before, "/before/still").await;

        // A reload that fails keeps the certificate in force: a spoilt certificate file...
        let cert = std::fs::read_to_string(&pki.server.cert).expect("read the certificate");
        std::fs::write(&pki.server.cert, "not a certificate").expect("spoil the certificate");
        sighup(&server);
        logged(&server, "TLS reload failed", 1).await;
        // ...and a key any user can read.
        std::fs::write(&pki.server.cert, &cert).expect("restore the certificate");
        let key = std::fs::read_to_string(&pki.server.key).expect("read the key");
        ward_testkit::tls::write(&pki.server.key, &key, 0o644);
        sighup(&server);
        logged(&server, "TLS reload failed", 2).await;
        let log = server.log_tail();
        assert!(log.contains("a private key any user can read (mode 644)"), "{log}");
        let still = session(&addr, Some(trusting(&pki.other_ca, None))).await.expect("the certificate in force");
        served(&still, "/still").await;
    })
    .await;
    server.assert_running();
}
