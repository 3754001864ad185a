//! Test certificates, made by the test that uses them (feature `tls`): a CA that issues
//! server, client and peer certificates (an expired one too), and self-signed ones, each
//! written as PEM files with the key readable by its owner only, as `ward-server` demands.

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// A certificate and its key, as PEM files.
#[derive(Clone, Debug)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl CertFiles {
    pub fn cert_str(&self) -> &str {
        utf8(&self.cert)
    }

    pub fn key_str(&self) -> &str {
        utf8(&self.key)
    }
}

/// A certificate authority whose certificate is `<dir>/<name>.pem`.
pub struct TestCa {
    dir: PathBuf,
    cert: Certificate,
    key: KeyPair,
    file: PathBuf,
}

impl TestCa {
    pub fn new(dir: &Path, name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("CA key: {e}"));
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("CA params: {e}"));
        params.distinguished_name = dn(&[(DnType::CommonName, name), (DnType::OrganizationName, "Ward tests")]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("CA certificate: {e}"));
        let file = dir.join(format!("{name}.pem"));
        write(&file, &cert.pem(), 0o644);
        TestCa { dir: dir.to_path_buf(), cert, key, file }
    }

    /// The CA certificate's file: what a client or server trusts.
    pub fn file(&self) -> &Path {
        &self.file
    }

    pub fn file_str(&self) -> &str {
        utf8(&self.file)
    }

    /// A certificate for a server (or an ensemble member) at 127.0.0.1 or localhost, good
    /// for both ends of a TLS connection (a member is a client of its peers too).
    pub fn server(&self, name: &str) -> CertFiles {
        let sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(name, sans, &[(DnType::CommonName, name)], usages, false)
    }

    /// A client certificate whose subject is `CN=<cn>,O=<org>` (RFC 4514).
    pub fn client(&self, name: &str, cn: &str, org: &str) -> CertFiles {
        let subject = [(DnType::OrganizationName, org), (DnType::CommonName, cn)];
        self.issue(name, Vec::new(), &subject, vec![ExtendedKeyUsagePurpose::ClientAuth], false)
    }

    /// A certificate like [`server`](Self::server)'s (good for either end) that expired in
    /// 2001.
    pub fn expired(&self, name: &str) -> CertFiles {
        let sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(name, sans, &[(DnType::CommonName, name)], usages, true)
    }

    fn issue(
        &self,
        name: &str,
        sans: Vec<String>,
        subject: &[(DnType, &str)],
        usages: Vec<ExtendedKeyUsagePurpose>,
        expired: bool,
    ) -> CertFiles {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{name}: key: {e}"));
        let params = leaf(name, sans, subject, usages, expired);
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap_or_else(|e| panic!("{name}: sign: {e}"));
        save(&self.dir, name, &cert, &key)
    }
}

/// A self-signed certificate, for 127.0.0.1 and localhost, usable as a client's or a
/// server's: trusted by nobody.
pub fn self_signed(dir: &Path, name: &str) -> CertFiles {
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{name}: key: {e}"));
    let sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let params = leaf(name, sans, &[(DnType::CommonName, name)], usages, false);
    let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{name}: self-sign: {e}"));
    save(dir, name, &cert, &key)
}

/// What `openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -addext
/// "subjectAltName=IP:127.0.0.1"` makes, the certificate most guides show for a server: self
/// signed, for 127.0.0.1, and a CA certificate (basicConstraints CA:TRUE), which a server
/// cannot use as its own (rustls: `CaUsedAsEndEntity`).
pub fn self_signed_ca_for_127_0_0_1(dir: &Path, name: &str) -> CertFiles {
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{name}: key: {e}"));
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap_or_else(|e| panic!("{name}: params: {e}"));
    params.distinguished_name = dn(&[(DnType::CommonName, "127.0.0.1")]);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{name}: self-sign: {e}"));
    save(dir, name, &cert, &key)
}

fn leaf(
    name: &str,
    sans: Vec<String>,
    subject: &[(DnType, &str)],
    usages: Vec<ExtendedKeyUsagePurpose>,
    expired: bool,
) -> CertificateParams {
    let mut params = CertificateParams::new(sans).unwrap_or_else(|e| panic!("{name}: params: {e}"));
    params.distinguished_name = dn(subject);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = usages;
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    params
}

fn dn(parts: &[(DnType, &str)]) -> rcgen::DistinguishedName {
    let mut dn = rcgen::DistinguishedName::new();
    for (kind, value) in parts {
        dn.push(kind.clone(), *value);
    }
    dn
}

/// `<dir>/<name>.pem` and `<dir>/<name>-key.pem` (mode 0600).
fn save(dir: &Path, name: &str, cert: &Certificate, key: &KeyPair) -> CertFiles {
    let files = CertFiles { cert: dir.join(format!("{name}.pem")), key: dir.join(format!("{name}-key.pem")) };
    write(&files.cert, &cert.pem(), 0o644);
    write(&files.key, &key.serialize_pem(), 0o600);
    files
}

/// Writes `text` to `path` with permissions `mode`, replacing what was there (the key's
/// mode is set before its contents go in).
pub fn write(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true).mode(mode);
    let written = options.open(path).and_then(|mut file| {
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
    });
    written.unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn utf8(path: &Path) -> &str {
    path.to_str().unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
}
