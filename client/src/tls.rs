//! TLS to the servers: which CA to trust, this client's own certificate when the servers
//! require one, and the name the servers' certificates must carry (docs/security.md "TLS").
//!
//! ```no_run
//! use ward_client::{Client, Tls};
//!
//! # async fn demo() -> Result<(), ward_client::Error> {
//! use std::path::Path;
//! let client_cert = (Path::new("client.pem"), Path::new("client-key.pem"));
//! let tls = Tls::from_files("ca.pem", Some(client_cert))?;
//! let client = Client::builder("ward-1.example.com:7181").tls(tls).connect().await?;
//! # Ok(())
//! # }
//! ```

mod refused;

pub use refused::CertificateProblem;

use crate::error::{Error, Result};
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// How a client speaks TLS to the servers. Without a [`server_name`](Self::server_name),
/// each server's certificate must name the host of its address in the connect string (a
/// DNS name, or an IP address in the certificate's subject alternative names).
#[derive(Clone, Debug)]
pub struct Tls {
    config: Arc<ClientConfig>,
    server_name: Option<ServerName<'static>>,
}

impl Tls {
    /// Trusts the CA certificates in the PEM file `ca`; shows the certificate and key in
    /// the PEM files `client` (certificate chain, key) to servers that ask for one.
    pub fn from_files(ca: impl AsRef<Path>, client: Option<(&Path, &Path)>) -> Result<Tls> {
        let ca = ca.as_ref();
        let mut roots = RootCertStore::empty();
        for cert in certs(ca)? {
            roots.add(cert).map_err(|e| tls_error(ca, e))?;
        }
        let builder = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error(ca, e))?
            .with_root_certificates(roots);
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let pem = PrivateKeyDer::from_pem_file(key).map_err(|e| tls_error(key, e))?;
                builder.with_client_auth_cert(certs(cert)?, pem).map_err(|e| tls_error(cert, e))?
            }
        };
        Ok(Tls::from_config(Arc::new(config)))
    }

    /// A rustls configuration made by the application (its own roots, verifier or key
    /// store).
    pub fn from_config(config: Arc<ClientConfig>) -> Tls {
        Tls { config, server_name: None }
    }

    /// Checks every server's certificate against `name` instead of the host in its address
    /// (servers reached by IP address whose certificates name a DNS name, say).
    pub fn server_name(mut self, name: &str) -> Result<Tls> {
        let name =
            ServerName::try_from(name.to_string()).map_err(|e| Error::Tls(format!("server name {name:?}: {e}")))?;
        self.server_name = Some(name);
        Ok(self)
    }

    /// The TLS handshake with the server at `addr` on `stream`; a certificate refused, by
    /// either end, is told apart from other failures.
    pub(crate) async fn connect(&self, addr: &str, stream: TcpStream) -> Result<TlsStream<TcpStream>, Handshake> {
        let name = match &self.server_name {
            Some(name) => name.clone(),
            None => {
                let host = addr.rsplit_once(':').map_or(addr, |(host, _port)| host);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                ServerName::try_from(host.to_string())
                    .map_err(|e| Handshake::Failed(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?
            }
        };
        let connector = tokio_rustls::TlsConnector::from(self.config.clone());
        connector.connect(name.clone(), stream).await.map_err(|e| match CertificateProblem::of(&e, &name) {
            Some(problem) => Handshake::Certificate(problem),
            None => Handshake::Failed(e),
        })
    }
}

/// Why a TLS handshake failed.
pub(crate) enum Handshake {
    /// Over a certificate: the server's, or this client's.
    Certificate(CertificateProblem),
    /// For any other reason (a server that speaks no TLS, a connection lost).
    Failed(std::io::Error),
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path).and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>());
    match certs {
        Ok(certs) if certs.is_empty() => Err(tls_error(path, "no CERTIFICATE in it")),
        Ok(certs) => Ok(certs),
        Err(e) => Err(tls_error(path, e)),
    }
}

fn tls_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::Tls(format!("{}: {error}", path.display()))
}
