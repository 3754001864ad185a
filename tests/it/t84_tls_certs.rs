//! Certificates made with `ward tls ca create` and `ward tls cert create` (docs/security.md
//! "Making certificates", guarantee G22) are accepted wherever Ward speaks TLS: a server's
//! listener with the `ward` CLI showing a client certificate, ZooKeeper's secure port with
//! kazoo, and the peer link of an ensemble. A certificate the TLS library refuses is told in
//! words: a CA certificate as the server's own (what the usual `openssl req -x509` makes),
//! another CA's, another name.

use crate::harness::*;
use std::path::Path;
use ward_client::CreateMode;
use ward_testkit::tls::self_signed_ca_for_127_0_0_1;
use ward_testkit::zk::Kazoo;
use ward_testkit::{bounded, connect, Ensemble, ServerProcess, TempDir};

/// The kazoo scripts of the server's ZooKeeper tests.
const ZK_SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/server/tests/zk");

/// `--server` is ward's global option; `ward tls` reaches no server.
const NO_SERVER: &str = "127.0.0.1:1";

/// The files `ward tls` made in a directory: its CA, and a certificate for each role.
struct Made {
    dir: TempDir,
}

impl Made {
    /// `ward tls ca create`, then `ward tls cert create server|client|peer` for 127.0.0.1
    /// (the client's subject CN=alice), in a new directory.
    async fn new() -> Made {
        let made = Made { dir: TempDir::new("tls-made") };
        let dir = made.path("");
        made.tls(&["ca", "create", "--dir", &dir]).await;
        made.tls(&["cert", "create", "server", "--ip", "127.0.0.1", "--dns", "localhost", "--dir", &dir]).await;
        made.tls(&["cert", "create", "client", "--common-name", "alice", "--dir", &dir]).await;
        made.tls(&["cert", "create", "peer", "--ip", "127.0.0.1", "--dir", &dir]).await;
        made
    }

    /// `ward tls ARGS...`, which must succeed.
    async fn tls(&self, args: &[&str]) {
        run_cli(NO_SERVER, &[&["tls"], args].concat()).await.success();
    }

    /// A file in the directory, as a string for command lines.
    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().expect("a UTF-8 temp dir").to_owned()
    }

    /// `ward-ROLE-0.pem` and its key.
    fn pair(&self, role: &str) -> (String, String) {
        (self.path(&format!("ward-{role}-0.pem")), self.path(&format!("ward-{role}-0-key.pem")))
    }
}

fn mode(path: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(Path::new(path)).expect("the file exists").permissions().mode() & 0o777
}

// G22: a server serving TLS with `ward tls cert create server`'s certificate, requiring client
// certificates from `ward tls ca create`'s CA, serves the `ward` CLI showing `ward tls cert
// create client`'s (known to the server as x509 CN=alice); without a client certificate, trusting
// another CA or expecting another name, the CLI is refused and says why in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_and_the_cli_accept_what_ward_tls_makes() {
    let made = Made::new().await;
    let (ca, (cert, key), (client, client_key)) = (made.path("ward-ca.pem"), made.pair("server"), made.pair("client"));
    for secret in [made.path("ward-ca-key.pem"), key.clone(), client_key.clone()] {
        assert_eq!(mode(&secret), 0o600, "{secret}");
    }
    // Made once: a second time is refused, nothing replaced.
    let again = run_cli(NO_SERVER, &["tls", "ca", "create", "--dir", &made.path("")]).await;
    assert_eq!(again.code(), Some(1), "{again:?}");
    assert!(again.stderr.contains("exists; give --force"), "{again:?}");
    let mut server = ServerProcess::builder()
        .in_memory()
        .flags(&["--tls-cert", &cert, "--tls-key", &key, "--tls-client-ca", &ca])
        .start();
    let addr = server.addr_str();
    let tls = ["--tls-ca", ca.as_str(), "--tls-cert", client.as_str(), "--tls-key", client_key.as_str()];
    bounded(async {
        let with = |args: &[&'static str]| [&tls[..], args].concat();
        let created = run_cli(&addr, &with(&["create", "--acl", "x509:CN=alice:cdrwa", "/made", "hello"])).await;
        assert_eq!(created.success().stdout, "/made\n");
        assert_eq!(run_cli(&addr, &with(&["get", "/made"])).await.success().stdout, "hello\n");

        let other_dir = made.path("other");
        made.tls(&["ca", "create", "--dir", &other_dir]).await;
        let other_ca = format!("{other_dir}/ward-ca.pem");
        let mut trusting_other = tls.to_vec();
        trusting_other[1] = &other_ca;
        let refused: [(Vec<&str>, &str); 3] = [
            (vec!["--tls-ca", &ca, "get", "/made"], "the server requires a client certificate"),
            ([&trusting_other[..], &["get", "/made"]].concat(), "not signed by a CA this client trusts"),
            (
                with(&["--tls-server-name", "ward.example.com", "get", "/made"]),
                "not valid for ward.example.com (it carries",
            ),
        ];
        for (args, says) in refused {
            let out = run_cli(&addr, &args).await;
            assert_eq!(out.code(), Some(1), "{out:?}");
            assert!(out.stderr.contains(says), "expected {says:?}: {out:?}");
        }
    })
    .await;
    server.assert_running();
}

// G22: the certificate most guides show (`openssl req -x509 ... -subj /CN=127.0.0.1 -addext
// subjectAltName=IP:127.0.0.1`: self-signed, CA:TRUE) as a server's own is refused by the
// `ward` CLI trusting it, which says that it is a CA certificate and how to make a server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_certificate_as_the_servers_own_is_refused_in_words() {
    let dir = TempDir::new("tls-ca-as-server");
    let cert = self_signed_ca_for_127_0_0_1(dir.path(), "openssl-style");
    let mut server = ServerProcess::builder()
        .in_memory()
        .flags(&["--tls-cert", cert.cert_str(), "--tls-key", cert.key_str()])
        .start();
    let out = bounded(run_cli(&server.addr_str(), &["--tls-ca", cert.cert_str(), "ls", "/"])).await;
    assert_eq!(out.code(), Some(1), "{out:?}");
    for says in
        ["the server's certificate is a CA certificate (basicConstraints CA:TRUE)", "ward tls cert create server"]
    {
        assert!(out.stderr.contains(says), "expected {says:?}: {out:?}");
    }
    assert!(!out.stderr.contains("OtherError"), "the riddle is gone: {out:?}");
    server.assert_running();
}

// G22: kazoo over TLS (`use_ssl=True`) on ZooKeeper's secure port takes the server's and the
// client's certificates `ward tls` made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_accepts_what_ward_tls_makes_on_the_secure_port() {
    let Some(kazoo) = Kazoo::find() else { return };
    let made = Made::new().await;
    let (ca, (cert, key), (client, client_key)) = (made.path("ward-ca.pem"), made.pair("server"), made.pair("client"));
    let flags = ["--tls-cert", &cert, "--tls-key", &key, "--tls-client-ca", &ca];
    let mut server = ServerProcess::builder().zookeeper().zk_tls().in_memory().flags(&flags).start();
    let tls_addr = server.zk_tls_addr().to_string();
    let args = [tls_addr.as_str(), &ca, &client, &client_key, "serve"];
    let out = tokio::task::block_in_place(|| kazoo.run(ZK_SCRIPTS, "tls.py", &args));
    assert_eq!(out, "b'secret' 0\n");
    server.assert_running();
}

// G22: three members whose peer link runs on `ward tls cert create peer`'s certificate (both
// ends of every link: serverAuth and clientAuth) and the CA's elect a leader and replicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_replicates_over_peer_certificates_ward_tls_makes() {
    let made = Made::new().await;
    let (ca, (cert, key)) = (made.path("ward-ca.pem"), made.pair("peer"));
    let ensemble = Ensemble::start(3, &["--peer-tls-cert", &cert, "--peer-tls-key", &key, "--peer-tls-ca", &ca]).await;
    bounded(async {
        ensemble.leader(&[]).await;
        let writer = connect(&ensemble.connect_string()).await;
        writer.create("/peers", b"tls", CreateMode::Persistent).await.expect("create /peers");
        ensemble.wait_all_have("/peers").await;
        for id in ensemble.ids() {
            assert!(!ensemble.log_tail(id).contains("TLS handshake failed"), "member {id}: {}", ensemble.log_tail(id));
        }
    })
    .await;
}
