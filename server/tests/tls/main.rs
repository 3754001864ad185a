//! TLS through the real binary (docs/security.md "TLS", guarantee G22): Ward's listener and
//! ZooKeeper's secure port serve only clients that speak TLS and trust the server, and with
//! a client CA only clients showing a valid certificate from it; a refused client does not
//! disturb the others; SIGHUP reloads the certificates; half-configured TLS and a key any
//! user can read stop the start; ensemble members talk mutual TLS on the peer link.

mod clients;
mod peers;
mod reload;
mod startup;
mod x509;
mod zookeeper;

use std::time::Duration;
use ward_client::{Client, CreateMode, Tls};
use ward_testkit::tls::{self_signed, CertFiles, TestCa};
use ward_testkit::{wait_until, within, ServerProcess, TempDir, DEADLINE};

/// The certificates of a test: a CA and what it issued, another CA that nobody trusts, and
/// certificates no server should accept.
pub struct Pki {
    pub dir: TempDir,
    pub ca: TestCa,
    pub other_ca: TestCa,
    /// For 127.0.0.1 and localhost, from `ca`.
    pub server: CertFiles,
    /// `CN=alice,O=Example`, from `ca`.
    pub alice: CertFiles,
    /// From `ca`, expired in 2001.
    pub expired: CertFiles,
    pub self_signed: CertFiles,
    /// From `other_ca`.
    pub stranger: CertFiles,
}

impl Pki {
    fn new() -> Pki {
        let dir = TempDir::new("tls-pki");
        let (ca, other_ca) = (TestCa::new(dir.path(), "ca"), TestCa::new(dir.path(), "other-ca"));
        Pki {
            server: ca.server("server"),
            alice: ca.client("alice", "alice", "Example"),
            expired: ca.expired("expired"),
            self_signed: self_signed(dir.path(), "self-signed"),
            stranger: other_ca.client("stranger", "stranger", "Elsewhere"),
            ca,
            other_ca,
            dir,
        }
    }

    /// `--tls-cert` and `--tls-key` of the server certificate.
    pub fn server_flags(&self) -> Vec<&str> {
        vec!["--tls-cert", self.server.cert_str(), "--tls-key", self.server.key_str()]
    }

    /// [`server_flags`](Self::server_flags), and client certificates from `ca` required.
    pub fn mutual_flags(&self) -> Vec<&str> {
        let mut flags = self.server_flags();
        flags.extend(["--tls-client-ca", self.ca.file_str()]);
        flags
    }
}

/// TLS trusting `ca`, showing `cert` if given.
pub fn trusting(ca: &TestCa, cert: Option<&CertFiles>) -> Tls {
    Tls::from_files(ca.file(), cert.map(|c| (c.cert.as_path(), c.key.as_path()))).expect("client TLS settings")
}

/// A session on `addr` over `tls` (`None`: plain TCP), or why there is none.
pub async fn session(addr: &str, tls: Option<Tls>) -> Result<Client, ward_client::Error> {
    let mut builder = Client::builder(addr).connect_timeout(Duration::from_secs(20));
    if let Some(tls) = tls {
        builder = builder.tls(tls);
    }
    within("connecting", DEADLINE, builder.connect()).await
}

/// A write and a read on `client`, under `path`: it is served.
pub async fn served(client: &Client, path: &str) {
    client.create(path, b"over tls", CreateMode::Persistent).await.unwrap_or_else(|e| panic!("create {path}: {e}"));
    let (data, _) = client.get_data(path).await.unwrap_or_else(|e| panic!("get {path}: {e}"));
    assert_eq!(data, b"over tls");
}

/// Asserts that connecting to `addr` with `tls` fails, with the reason the client gives: a
/// certificate refused (either end's, said in words) or any other failure to connect.
pub async fn refused(addr: &str, tls: Option<Tls>, what: &str) {
    match session(addr, tls).await {
        Err(why @ (ward_client::Error::Connect(_) | ward_client::Error::Certificate { .. })) => {
            eprintln!("{what}: refused: {why}")
        }
        Err(other) => panic!("{what}: expected a refused connection, got {other}"),
        Ok(_) => panic!("{what}: connected"),
    }
}

/// Lines of the server's log that say a TLS handshake failed.
pub fn handshake_failures(server: &ServerProcess) -> usize {
    server.log_tail().lines().filter(|l| l.contains("TLS handshake failed")).count()
}

/// Waits until the server has logged `count` failed TLS handshakes in all. It logs one when it
/// notices that the client gave up, which can come after the client has had its error.
pub async fn await_handshake_failures(server: &ServerProcess, count: usize) {
    let logged = || async { handshake_failures(server) >= count };
    wait_until(&format!("{count} failed TLS handshakes in the server's log"), DEADLINE, logged).await;
}
