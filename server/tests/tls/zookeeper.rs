//! G22 on ZooKeeper's secure client port (`--zk-tls-listen`, docs/zookeeper-compat.md
//! "Secure client port"): kazoo connects with `use_ssl=True`, its CA and its client
//! certificate; kazoo without a certificate, trusting another CA or speaking plain TCP, and a
//! raw plain connection, are refused while the plain ZooKeeper port and Ward's listener go
//! on serving.

use super::{await_handshake_failures, handshake_failures, served, session, trusting, Pki};
use std::io::{Read, Write};
use std::net::TcpStream;
use ward_testkit::zk::Kazoo;
use ward_testkit::{bounded, ServerProcess, DEADLINE};

/// The kazoo scripts.
const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zk");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_works_on_the_secure_port_and_clients_it_cannot_trust_are_refused() {
    let Some(kazoo) = Kazoo::find() else { return };
    let pki = Pki::new();
    let mut server = ServerProcess::builder().zookeeper().zk_tls().in_memory().flags(&pki.mutual_flags()).start();
    let tls_addr = server.zk_tls_addr().to_string();
    let (ca, other_ca) = (pki.ca.file_str(), pki.other_ca.file_str());
    let (cert, key) = (pki.alice.cert_str(), pki.alice.key_str());
    let run = |args: &[&str]| tokio::task::block_in_place(|| kazoo.run(SCRIPTS, "tls.py", args));
    assert_eq!(run(&[&tls_addr, ca, cert, key, "serve"]), "b'secret' 0\n");
    let before = handshake_failures(&server);
    for (what, args) in [
        ("no client certificate", [&tls_addr, ca, "-", "-", "refused"]),
        ("trusting another CA", [&tls_addr, other_ca, cert, key, "refused"]),
        ("plain TCP on the TLS port", [&tls_addr, "-", "-", "-", "refused"]),
    ] {
        assert_eq!(run(&args), "refused\n", "kazoo {what}");
    }
    let answer = raw_plain_connect(server.zk_tls_addr());
    // Nothing, or a TLS alert record (type 21) saying why: never a ConnectResponse.
    assert!(answer.is_empty() || answer[0] == 21, "a plain ZooKeeper connect was answered: {answer:?}");
    bounded(await_handshake_failures(&server, before + 3)).await;
    // The plain ZooKeeper port, which the test left on, still serves plain kazoo, and
    // Ward's listener (TLS now) its own clients.
    assert_eq!(run(&[&server.zk_addr_str(), "-", "-", "-", "refused"]), "connected\n");
    bounded(async {
        let client = session(&server.addr_str(), Some(trusting(&pki.ca, Some(&pki.alice)))).await.expect("Ward client");
        served(&client, "/ward-too").await;
    })
    .await;
    server.assert_running();
}

/// Sends a ZooKeeper connect request in the clear to `addr` and returns what comes back
/// before the server closes the connection.
fn raw_plain_connect(addr: std::net::SocketAddr) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(DEADLINE)).expect("read timeout");
    // A ConnectRequest: protocol 0, last zxid 0, timeout 30 s, session 0, 16-byte password.
    let mut body = Vec::new();
    body.extend(0i32.to_be_bytes());
    body.extend(0i64.to_be_bytes());
    body.extend(30_000i32.to_be_bytes());
    body.extend(0i64.to_be_bytes());
    body.extend(16i32.to_be_bytes());
    body.extend([0u8; 16]);
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend(body);
    let _ = stream.write_all(&frame);
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => answer,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => answer,
        Err(e) => panic!("reading from a server that should close the connection: {e}"),
    }
}
