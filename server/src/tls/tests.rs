//! The TLS handshake of a client listener, in process: what a client certificate makes known
//! (docs/security.md "TLS"), and what a reload changes.

use super::stream::ClientStream;
use super::{ClientCerts, PeerTlsFiles, ServerTlsFiles};
use rustls_pki_types::ServerName;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use ward_testkit::tls::{CertFiles, TestCa};
use ward_testkit::TempDir;

/// A rustls client that trusts `ca` and shows `cert` (a peer configuration is one).
fn client(cert: &CertFiles, ca: &TestCa) -> tokio_rustls::TlsConnector {
    let files = PeerTlsFiles { cert: cert.cert.clone(), key: cert.key.clone(), ca: ca.file().to_path_buf() };
    tokio_rustls::TlsConnector::from(files.load().expect("client configuration").current().client.clone())
}

/// Accepts one connection with `tls` and returns its client's certificate subject.
async fn accept_one(listener: TcpListener, tls: Arc<rustls::ServerConfig>) -> Option<String> {
    let (stream, _) = listener.accept().await.expect("accept");
    let stream = ClientStream::tls(stream, tls).await.expect("TLS handshake");
    stream.cert_subject().map(str::to_string)
}

#[tokio::test]
async fn the_verified_client_certificates_subject_is_known_after_the_handshake() {
    let dir = TempDir::new("tls-subject");
    let ca = TestCa::new(dir.path(), "ca");
    let (server, alice) = (ca.server("server"), ca.client("alice", "alice", "Example"));
    let files = ServerTlsFiles {
        cert: server.cert.clone(),
        key: server.key.clone(),
        client_ca: Some(ca.file().to_path_buf()),
        client_certs: ClientCerts::Required,
    };
    let tls = files.load().expect("server configuration");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = tokio::spawn(accept_one(listener, tls.current()));
    let stream = TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("127.0.0.1").expect("name");
    let _tls = client(&alice, &ca).connect(name, stream).await.expect("client handshake");
    assert_eq!(accepted.await.expect("accept task").as_deref(), Some("CN=alice,O=Example"));
}

#[test]
fn a_reload_reads_the_files_again_and_a_bad_file_keeps_the_old_configuration() {
    let dir = TempDir::new("tls-reload");
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("server");
    let files = ServerTlsFiles {
        cert: server.cert.clone(),
        key: server.key.clone(),
        client_ca: None,
        client_certs: ClientCerts::Required,
    };
    let tls = files.load().expect("first load");
    let first = tls.current();
    std::fs::write(&server.cert, "not a certificate").expect("spoil the certificate");
    let failed = tls.reload();
    assert!(matches!(failed, Err(super::TlsError::Empty { .. })), "{failed:?}");
    assert!(Arc::ptr_eq(&first, &tls.current()), "the configuration in force stays");
    ca.server("server");
    tls.reload().expect("reload with a new certificate");
    assert!(!Arc::ptr_eq(&first, &tls.current()), "new connections get the new configuration");
}

#[test]
fn a_key_other_users_can_read_is_refused() {
    let dir = TempDir::new("tls-key-mode");
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("server");
    let text = std::fs::read_to_string(&server.key).expect("read the key");
    for mode in [0o644, 0o604, 0o602] {
        ward_testkit::tls::write(&server.key, &text, mode);
        let files = ServerTlsFiles {
            cert: server.cert.clone(),
            key: server.key.clone(),
            client_ca: None,
            client_certs: ClientCerts::Required,
        };
        let refused = files.load();
        assert!(matches!(refused, Err(super::TlsError::KeyOpenToOthers { mode: m, .. }) if m == mode), "mode {mode:o}");
    }
    ward_testkit::tls::write(&server.key, &text, 0o640);
    let files =
        ServerTlsFiles { cert: server.cert, key: server.key, client_ca: None, client_certs: ClientCerts::Required };
    files.load().expect("owner and group may read it");
}
