//! The TLS options, checked together: TLS half-configured (a certificate without its key,
//! a client CA or a secure ZooKeeper port without a certificate, part of the peer link's
//! three files) is refused at startup, naming what is missing. Reading the files is left
//! to the start (`ward_server::tls`), which refuses a key that every user can read.

use super::settings::Settings;
use super::values::ClientAuth;
use crate::error::ConfigError;
use std::path::PathBuf;
use ward_server::tls::{ClientCerts, PeerTlsFiles, ServerTlsFiles};

/// The client listeners' TLS, if configured.
pub fn server(s: &Settings) -> Result<Option<ServerTlsFiles>, ConfigError> {
    let (cert, key) = match (&s.tls_cert, &s.tls_key) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        (Some(_), None) => return incomplete("tls-cert", "--tls-key"),
        (None, Some(_)) => return incomplete("tls-key", "--tls-cert"),
        (None, None) => {
            let needing = [
                ("tls-client-ca", s.tls_client_ca.is_some()),
                ("tls-client-auth", s.tls_client_auth.is_some()),
                ("zk-tls-listen", s.zk_tls_listen.is_some()),
            ];
            return match needing.into_iter().find(|(_, given)| *given) {
                Some((given, _)) => incomplete(given, "--tls-cert and --tls-key"),
                None => Ok(None),
            };
        }
    };
    if s.tls_client_auth.is_some() && s.tls_client_ca.is_none() {
        return incomplete("tls-client-auth", "--tls-client-ca (the CA client certificates are checked against)");
    }
    let client_certs = match s.tls_client_auth.unwrap_or_default() {
        ClientAuth::Required => ClientCerts::Required,
        ClientAuth::Optional => ClientCerts::Optional,
    };
    Ok(Some(ServerTlsFiles { cert, key, client_ca: s.tls_client_ca.clone(), client_certs }))
}

/// The peer link's mutual TLS, if configured: all three files or none.
pub fn peer(s: &Settings) -> Result<Option<PeerTlsFiles>, ConfigError> {
    let files: [(&'static str, &Option<PathBuf>); 3] =
        [("peer-tls-cert", &s.peer_tls_cert), ("peer-tls-key", &s.peer_tls_key), ("peer-tls-ca", &s.peer_tls_ca)];
    match files {
        [(_, Some(cert)), (_, Some(key)), (_, Some(ca))] => {
            Ok(Some(PeerTlsFiles { cert: cert.clone(), key: key.clone(), ca: ca.clone() }))
        }
        _ => match files.iter().find(|(_, f)| f.is_some()) {
            None => Ok(None),
            Some((given, _)) => {
                let missing: Vec<String> =
                    files.iter().filter(|(_, f)| f.is_none()).map(|(key, _)| format!("--{key}")).collect();
                incomplete(given, &missing.join(" and "))
            }
        },
    }
}

fn incomplete<T>(given: &'static str, missing: &str) -> Result<T, ConfigError> {
    Err(ConfigError::TlsIncomplete { given, missing: missing.to_string() })
}
