//! Reading PEM files: certificate chains, private keys (refused when any user may read
//! them) and CA bundles.

use super::TlsError;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;

/// Every certificate in the PEM file at `path`, leaf first.
pub(crate) fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem { path: path.to_path_buf(), message: e.to_string() })?;
    if certs.is_empty() {
        return Err(TlsError::Empty { path: path.to_path_buf(), expected: "CERTIFICATE" });
    }
    Ok(certs)
}

/// The private key in the PEM file at `path` (PKCS#8, PKCS#1 or SEC1), refused if the file
/// can be read by users other than its owner and group.
pub(crate) fn key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    check_private(path)?;
    let bytes = read(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => {
            TlsError::Empty { path: path.to_path_buf(), expected: "PRIVATE KEY" }
        }
        e => TlsError::Pem { path: path.to_path_buf(), message: e.to_string() },
    })
}

/// The CA certificates in the PEM file at `path`, as trust anchors.
pub(crate) fn roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certs(path)? {
        roots.add(cert).map_err(|e| TlsError::Pem { path: path.to_path_buf(), message: e.to_string() })?;
    }
    Ok(roots)
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })
}

/// A key any user may read is no secret: refused, as ssh and PostgreSQL refuse theirs.
/// Owner and group may read it (a key deployed as root:ward 0640 is usual).
#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o007 != 0 {
        return Err(TlsError::KeyOpenToOthers { path: path.to_path_buf(), mode });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<(), TlsError> {
    Ok(())
}
