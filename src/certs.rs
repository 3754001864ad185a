//! Making a certificate authority and the certificates it signs, for `ward tls ca create`
//! and `ward tls cert create` (docs/security.md "Making certificates"): PEM text in, PEM
//! text out; the files are the command's business.
//!
//! What is made is what Ward's TLS accepts (G22): a CA certificate (basicConstraints
//! CA:TRUE, keyCertSign) and leaf certificates (CA:FALSE) that it signs, with the extended
//! key usage of their role and the names they are reached by as subject alternative names.
//! A server cannot use a CA certificate as its own (rustls refuses it, "CaUsedAsEndEntity"),
//! which is what the usual one-line `openssl req -x509` makes; hence these commands.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// A certificate and its private key, as PEM text.
#[derive(Clone, Debug)]
pub struct Pem {
    pub cert: String,
    pub key: String,
}

/// What a leaf certificate is for: its extended key usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A server's listeners (Ward's and ZooKeeper's secure port): serverAuth.
    Server,
    /// A client that shows a certificate (`--tls-client-ca` on the server): clientAuth.
    Client,
    /// An ensemble member on the peer link, which is the server of the members that dial it
    /// and the client of those it dials: both.
    Peer,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
            Role::Peer => "peer",
        }
    }

    fn usages(self) -> Vec<ExtendedKeyUsagePurpose> {
        match self {
            Role::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
            Role::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
            Role::Peer => vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
        }
    }
}

/// A leaf certificate to make.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub role: Role,
    /// The subject's CN: for a client, the `x509` identity is `CN=<common_name>`.
    pub common_name: String,
    /// The addresses and DNS names the holder is reached by (subject alternative names):
    /// what a client checks a server's certificate against.
    pub ips: Vec<IpAddr>,
    pub dns: Vec<String>,
    pub days: u32,
}

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertError {
    #[error("--days must be from 1 to {MAX_DAYS}, not {0}")]
    Days(u32),
    #[error("a {0} certificate needs the names it is reached by: give --ip or --dns")]
    NoNames(&'static str),
    #[error("{name:?} is not a DNS name a certificate can carry: {source}")]
    DnsName { name: String, source: rcgen::Error },
    #[error("the CA certificate is not a PEM certificate rcgen can read: {0}")]
    CaCert(rcgen::Error),
    #[error("the CA key is not a PEM private key rcgen can read: {0}")]
    CaKey(rcgen::Error),
    #[error("the CA certificate is no CA's: it lacks basicConstraints CA:TRUE or keyCertSign")]
    NotCa,
    #[error("cannot make the certificate: {0}")]
    Make(rcgen::Error),
    /// What was made does not verify against the CA the way the server or client would
    /// verify it: the key is not the CA certificate's, or that certificate is no CA.
    #[error(
        "the certificate signed with this CA does not verify against it ({0}): is the CA key the CA \
         certificate's, and is that a CA certificate (basicConstraints CA:TRUE, keyCertSign)?"
    )]
    Unverified(rustls::Error),
}

/// Ten years: a bound that keeps the dates far from the ends of what X.509 can encode.
pub const MAX_DAYS: u32 = 3650;

/// "Ward CA" and 64 random bits in hex, as Consul names its CAs. A client finds the CA of a
/// certificate by the issuer's name: had two CAs one name, a certificate from the one would
/// be checked against the other's key and refused as a bad signature, not as an unknown CA.
pub fn unique_ca_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    // std's hasher keys are random per `RandomState`: randomness enough for a name.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!("Ward CA {random:016x}")
}

/// A new CA, self-signed, whose subject is `CN=<common_name>`, valid for `days`.
pub fn new_ca(common_name: &str, days: u32) -> Result<Pem, CertError> {
    let key = KeyPair::generate().map_err(CertError::Make)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name_dn(common_name);
    // Path length 0: it signs leaves only, no intermediate CAs.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    set_validity(&mut params, days)?;
    let cert = params.self_signed(&key).map_err(CertError::Make)?;
    Ok(Pem { cert: cert.pem(), key: key.serialize_pem() })
}

/// A new leaf certificate signed by `ca` (its certificate and key as PEM), verified before it
/// is returned as the server's and the client's TLS would verify it.
pub fn new_cert(ca: &Pem, leaf: &Leaf) -> Result<Pem, CertError> {
    let ca_key = KeyPair::from_pem(&ca.key).map_err(CertError::CaKey)?;
    // The issuer's name and key identifier as the CA certificate has them, so that the new
    // certificate names its issuer exactly as that certificate names itself.
    let issuer = CertificateParams::from_ca_cert_pem(&ca.cert).map_err(CertError::CaCert)?;
    // rustls would take any certificate as a trust anchor; OpenSSL (kazoo, Java's tools)
    // would not, so neither do we.
    let signs = issuer.key_usages.is_empty() || issuer.key_usages.contains(&KeyUsagePurpose::KeyCertSign);
    if !matches!(issuer.is_ca, IsCa::Ca(_)) || !signs {
        return Err(CertError::NotCa);
    }
    let issuer = issuer.self_signed(&ca_key).map_err(CertError::CaCert)?;
    if leaf.ips.is_empty() && leaf.dns.is_empty() && leaf.role != Role::Client {
        return Err(CertError::NoNames(leaf.role.name()));
    }
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name_dn(&leaf.common_name);
    params.subject_alt_names = sans(leaf)?;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = leaf.role.usages();
    // RFC 5280 asks for it in every certificate not self-signed; OpenSSL's chain building
    // (kazoo, Python) matches it against the CA's subject key identifier.
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, leaf.days)?;
    let key = KeyPair::generate().map_err(CertError::Make)?;
    let cert = params.signed_by(&key, &issuer, &ca_key).map_err(CertError::Make)?;
    verify(&ca.cert, cert.der(), leaf)?;
    Ok(Pem { cert: cert.pem(), key: key.serialize_pem() })
}

fn common_name_dn(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

fn sans(leaf: &Leaf) -> Result<Vec<SanType>, CertError> {
    let mut sans: Vec<SanType> = leaf.ips.iter().copied().map(SanType::IpAddress).collect();
    for name in &leaf.dns {
        let ia5 = name.as_str().try_into().map_err(|source| CertError::DnsName { name: name.clone(), source })?;
        sans.push(SanType::DnsName(ia5));
    }
    Ok(sans)
}

/// From a few minutes ago (a peer's clock a little behind ours must not find the certificate
/// not yet valid) to `days` from now.
fn set_validity(params: &mut CertificateParams, days: u32) -> Result<(), CertError> {
    if !(1..=MAX_DAYS).contains(&days) {
        return Err(CertError::Days(days));
    }
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - Duration::from_secs(5 * 60);
    params.not_after = now + Duration::from_secs(u64::from(days) * 24 * 60 * 60);
    Ok(())
}

/// Verifies `cert` against the CA certificate as the other end of each connection its role
/// takes part in will: a client checking a server (by its first name), a server checking a
/// client.
fn verify(ca_pem: &str, cert: &CertificateDer<'_>, leaf: &Leaf) -> Result<(), CertError> {
    let unverified = CertError::Unverified;
    let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes())
        .map_err(|e| unverified(rustls::Error::General(e.to_string())))?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).map_err(unverified)?;
    let roots = Arc::new(roots);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let general = |e: &dyn std::fmt::Display| unverified(rustls::Error::General(e.to_string()));
    let now = UnixTime::now();
    if leaf.role != Role::Client {
        let name = match (leaf.ips.first(), leaf.dns.first()) {
            (Some(ip), _) => ServerName::IpAddress((*ip).into()),
            (None, Some(dns)) => ServerName::try_from(dns.clone()).map_err(|e| general(&e))?,
            (None, None) => return Err(CertError::NoNames(leaf.role.name())),
        };
        let verifier = WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| general(&e))?;
        verifier.verify_server_cert(cert, &[], &name, &[], now).map_err(unverified)?;
    }
    if leaf.role != Role::Server {
        let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider).build().map_err(|e| general(&e))?;
        verifier.verify_client_cert(cert, &[], now).map_err(unverified)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
