//! The `x509` ACL scheme end to end (G24 with G22): a node whose ACL names a client
//! certificate's subject is open to the client showing that certificate and to nobody else.

use super::{session, trusting, Pki};
use ward_client::{perms, Acl, CreateMode, Error};
use ward_testkit::{bounded, ServerProcess};

// G24: identities include the verified certificate subject, as an RFC 4514 string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_guarded_by_a_certificate_subject_is_open_only_to_that_certificate() {
    let pki = Pki::new();
    let mut flags = pki.mutual_flags();
    flags.extend(["--tls-client-auth", "optional"]);
    let mut server = ServerProcess::builder().in_memory().flags(&flags).start();
    let addr = server.addr_str();
    bounded(async {
        let alice = session(&addr, Some(trusting(&pki.ca, Some(&pki.alice)))).await.expect("alice");
        let anonymous = session(&addr, Some(trusting(&pki.ca, None))).await.expect("no certificate");
        let only_alice = [Acl::new(perms::ALL, "x509", "CN=alice,O=Example")];
        alice.create_with_acl("/alice", b"hers", CreateMode::Persistent, &only_alice).await.expect("create");

        let (data, _) = alice.get_data("/alice").await.expect("alice reads her node");
        assert_eq!(data, b"hers");
        assert!(matches!(anonymous.get_data("/alice").await, Err(Error::NoAuth)), "no certificate, no read");
        assert!(matches!(anonymous.set_data("/alice", b"x", None).await, Err(Error::NoAuth)), "nor a write");
        // A digest does not stand in for the certificate.
        anonymous.add_auth("digest", b"alice:secret").await.expect("a digest identity");
        assert!(matches!(anonymous.get_data("/alice").await, Err(Error::NoAuth)), "a digest is not the certificate");
        alice.set_data("/alice", b"still hers", None).await.expect("alice writes");
    })
    .await;
    server.assert_running();
}
