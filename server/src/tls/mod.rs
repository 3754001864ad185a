//! TLS for the client listeners (Ward's and ZooKeeper's secure port) and for the peer link
//! between ensemble members: rustls with its ring provider (docs/security.md "TLS" says
//! why), certificates read from PEM files and read again on SIGHUP.
//!
//! * [`files`]: PEM certificates, keys (refused when open to every user) and CA bundles.
//! * [`reload`]: [`Reloading`], a configuration new connections take and SIGHUP replaces.
//! * [`subject`]: a client certificate's subject as an RFC 4514 string.
//! * [`stream`]: a connection after its TLS handshake (or without one), split in halves.

pub(crate) mod files;
pub(crate) mod reload;
pub(crate) mod stream;
pub(crate) mod subject;

pub(crate) use reload::Reloading;

use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::{danger::ClientCertVerifier, WebPkiClientVerifier};
use rustls::{ClientConfig, ServerConfig};
use std::path::PathBuf;
use std::sync::Arc;

/// The server's TLS for client listeners, reloadable.
pub type ServerTls = Reloading<ServerConfig>;
/// A member's TLS for the peer link (both ends), reloadable.
pub type PeerTls = Reloading<PeerConfigs>;

/// Why a TLS configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: not valid PEM: {message}", path.display())]
    Pem { path: PathBuf, message: String },
    #[error("{}: no {expected} in it", path.display())]
    Empty { path: PathBuf, expected: &'static str },
    /// A private key other users can read (or write): refused.
    #[error(
        "{}: a private key any user can read (mode {mode:03o}); allow only the server's user and group (chmod 600 or 640)",
        path.display()
    )]
    KeyOpenToOthers { path: PathBuf, mode: u32 },
    /// rustls refused the files (a key that is not the certificate's, a CA it cannot use).
    #[error("{files}: {source}")]
    Refused { files: String, source: rustls::Error },
}

/// Whether clients of a listener with a client CA must show a certificate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientCerts {
    /// A client without a certificate is refused during the handshake (ZooKeeper's
    /// `ssl.clientAuth=need`).
    #[default]
    Required,
    /// A client may show none; one it shows must be valid (ZooKeeper's `want`).
    Optional,
}

/// The files of the client listeners' TLS.
#[derive(Clone, Debug)]
pub struct ServerTlsFiles {
    /// This server's certificate chain, leaf first.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// CA certificates that client certificates must chain to; `None`: clients show none.
    pub client_ca: Option<PathBuf>,
    pub client_certs: ClientCerts,
}

impl ServerTlsFiles {
    /// Reads the files now (a bad one is an error at startup) and keeps them for reloads.
    pub fn load(self) -> Result<ServerTls, TlsError> {
        Reloading::new(move || self.config())
    }

    fn config(&self) -> Result<ServerConfig, TlsError> {
        let verifier = match &self.client_ca {
            None => WebPkiClientVerifier::no_client_auth(),
            Some(ca) => {
                let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(files::roots(ca)?), provider());
                let builder = match self.client_certs {
                    ClientCerts::Required => builder,
                    ClientCerts::Optional => builder.allow_unauthenticated(),
                };
                builder.build().map_err(|e| refused(ca.display(), rustls::Error::General(e.to_string())))?
            }
        };
        server_config(&self.cert, &self.key, verifier)
    }
}

/// The files of the peer link's mutual TLS: each member shows its certificate to the other
/// in both directions, and accepts only certificates from `ca`.
#[derive(Clone, Debug)]
pub struct PeerTlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

/// Both ends of the peer link: the listener's configuration and the caller's.
#[derive(Debug)]
pub struct PeerConfigs {
    pub server: Arc<ServerConfig>,
    pub client: Arc<ClientConfig>,
}

impl PeerTlsFiles {
    /// Reads the files now and keeps them for reloads.
    pub fn load(self) -> Result<PeerTls, TlsError> {
        Reloading::new(move || self.configs())
    }

    fn configs(&self) -> Result<PeerConfigs, TlsError> {
        let roots = Arc::new(files::roots(&self.ca)?);
        let ca = self.ca.display();
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .map_err(|e| refused(&ca, rustls::Error::General(e.to_string())))?;
        let server = server_config(&self.cert, &self.key, verifier)?;
        let server_verifier = WebPkiServerVerifier::builder_with_provider(roots, provider())
            .build()
            .map_err(|e| refused(&ca, rustls::Error::General(e.to_string())))?;
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| refused(&ca, e))?
            .with_webpki_verifier(server_verifier)
            .with_client_auth_cert(files::certs(&self.cert)?, files::key(&self.key)?)
            .map_err(|e| refused(format!("{} and {}", self.cert.display(), self.key.display()), e))?;
        Ok(PeerConfigs { server: Arc::new(server), client: Arc::new(client) })
    }
}

/// The one crypto provider Ward uses.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_config(
    cert: &std::path::Path,
    key: &std::path::Path,
    verifier: Arc<dyn ClientCertVerifier>,
) -> Result<ServerConfig, TlsError> {
    let files = || format!("{} and {}", cert.display(), key.display());
    ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| refused(files(), e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(files::certs(cert)?, files::key(key)?)
        .map_err(|e| refused(files(), e))
}

fn refused(files: impl std::fmt::Display, source: rustls::Error) -> TlsError {
    TlsError::Refused { files: files.to_string(), source }
}

#[cfg(test)]
mod tests;
