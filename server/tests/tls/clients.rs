//! G22 on Ward's listener: the native client works over TLS; a client that does not trust
//! the server (another CA, another name, an expired or self-signed server certificate), that
//! speaks plain TCP, or whose certificate is missing (where required), expired, self-signed
//! or from another CA is refused, and every other client keeps being served meanwhile
//! (docs/security.md "TLS").

use super::{await_handshake_failures, refused, served, session, trusting, Pki};
use ward_testkit::{bounded, ServerProcess};

/// Server certificate only: TLS clients that trust its CA are served; a plain TCP client on
/// the TLS port, and a client trusting another CA, are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_client_works_over_tls_and_plain_tcp_or_a_wrong_ca_is_refused() {
    let pki = Pki::new();
    let mut server = ServerProcess::builder().in_memory().flags(&pki.server_flags()).start();
    let addr = server.addr_str();
    bounded(async {
        let client = session(&addr, Some(trusting(&pki.ca, None))).await.expect("a TLS client");
        served(&client, "/a").await;
        refused(&addr, None, "plain TCP on the TLS port").await;
        served(&client, "/b").await;
        refused(&addr, Some(trusting(&pki.other_ca, None)), "a client trusting another CA").await;
        served(&client, "/c").await;
        // A server name the certificate does not carry.
        let misnamed = trusting(&pki.ca, None).server_name("ward.example.com").expect("a server name");
        refused(&addr, Some(misnamed), "a client expecting another name").await;
        // Its session survives the refusals around it.
        let (data, _) = client.get_data("/a").await.expect("read back");
        assert_eq!(data, b"over tls");
        // The refusals are logged.
        await_handshake_failures(&server, 3).await;
    })
    .await;
    server.assert_running();
}

/// Clients refuse a server whose certificate expired or is self-signed (no CA they trust
/// vouches for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_refuse_a_server_with_an_expired_or_self_signed_certificate() {
    let pki = Pki::new();
    for (what, cert) in [("expired", &pki.expired), ("self-signed", &pki.self_signed)] {
        let flags = ["--tls-cert", cert.cert_str(), "--tls-key", cert.key_str()];
        let mut server = ServerProcess::builder().in_memory().flags(&flags).start();
        let addr = server.addr_str();
        bounded(refused(&addr, Some(trusting(&pki.ca, None)), &format!("a server certificate that is {what}"))).await;
        server.assert_running();
    }
}

/// `--tls-client-ca`: a client must show a valid certificate from that CA. Without one, or
/// with an expired, self-signed or foreign one, it is refused; the others go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_client_certificates_are_enforced() {
    let pki = Pki::new();
    let mut server = ServerProcess::builder().in_memory().flags(&pki.mutual_flags()).start();
    let addr = server.addr_str();
    bounded(async {
        let alice = session(&addr, Some(trusting(&pki.ca, Some(&pki.alice)))).await.expect("alice, with a certificate");
        served(&alice, "/alice").await;
        refused(&addr, Some(trusting(&pki.ca, None)), "no client certificate").await;
        refused(&addr, Some(trusting(&pki.ca, Some(&pki.expired))), "an expired certificate").await;
        refused(&addr, Some(trusting(&pki.ca, Some(&pki.self_signed))), "a self-signed certificate").await;
        refused(&addr, Some(trusting(&pki.ca, Some(&pki.stranger))), "a certificate from another CA").await;
        refused(&addr, None, "plain TCP").await;
        served(&alice, "/alice/still").await;
    })
    .await;
    server.assert_running();
}

/// `--tls-client-auth optional`: a client without a certificate is served, one with an
/// invalid certificate is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_client_certificates_admit_clients_without_one_but_not_bad_ones() {
    let pki = Pki::new();
    let mut flags = pki.mutual_flags();
    flags.extend(["--tls-client-auth", "optional"]);
    let mut server = ServerProcess::builder().in_memory().flags(&flags).start();
    let addr = server.addr_str();
    bounded(async {
        let anonymous = session(&addr, Some(trusting(&pki.ca, None))).await.expect("no certificate, optional");
        served(&anonymous, "/anonymous").await;
        let alice = session(&addr, Some(trusting(&pki.ca, Some(&pki.alice)))).await.expect("alice");
        served(&alice, "/alice").await;
        refused(&addr, Some(trusting(&pki.ca, Some(&pki.expired))), "an expired certificate").await;
        refused(&addr, Some(trusting(&pki.ca, Some(&pki.stranger))), "a certificate from another CA").await;
        served(&anonymous, "/anonymous/still").await;
    })
    .await;
    server.assert_running();
}
