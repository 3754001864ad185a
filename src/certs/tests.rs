//! G22: what `ward tls` makes is what Ward's TLS accepts, and nothing else verifies with it.

use super::*;

fn server(ips: &[&str], dns: &[&str]) -> Leaf {
    Leaf {
        role: Role::Server,
        common_name: "ward-server-0".into(),
        ips: ips.iter().map(|ip| ip.parse().expect("an IP address")).collect(),
        dns: dns.iter().map(|name| name.to_string()).collect(),
        days: 30,
    }
}

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("one PEM certificate")
}

fn server_verifier(ca: &Pem) -> Arc<WebPkiServerVerifier> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(&ca.cert)).expect("a CA certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().expect("a verifier")
}

// G22: a server certificate from `ward tls cert create --server` verifies for each of its
// names, and for no other.
#[test]
fn a_server_certificate_verifies_for_its_names_only() {
    let ca = new_ca("Ward CA", 30).expect("a CA");
    let cert = new_cert(&ca, &server(&["127.0.0.1", "::1"], &["localhost", "ward-1.example.com"])).expect("a cert");
    let verifier = server_verifier(&ca);
    let now = UnixTime::now();
    for name in ["127.0.0.1", "::1", "localhost", "ward-1.example.com"] {
        let name = ServerName::try_from(name).expect("a name");
        verifier.verify_server_cert(&der(&cert.cert), &[], &name, &[], now).expect("verifies");
    }
    let other = ServerName::try_from("ward-2.example.com").expect("a name");
    assert!(verifier.verify_server_cert(&der(&cert.cert), &[], &other, &[], now).is_err());
}

// G22: a client certificate is refused where a server's is expected (no serverAuth), and a
// peer's is good at both ends.
#[test]
fn each_role_has_its_key_usage() {
    let ca = new_ca("Ward CA", 30).expect("a CA");
    let client = Leaf { role: Role::Client, common_name: "alice".into(), ips: vec![], dns: vec![], days: 30 };
    let client = new_cert(&ca, &client).expect("a client cert");
    let name = ServerName::try_from("127.0.0.1").expect("a name");
    let refused = server_verifier(&ca).verify_server_cert(&der(&client.cert), &[], &name, &[], UnixTime::now());
    assert!(refused.is_err(), "a client certificate serving: {refused:?}");
    let peer = Leaf { role: Role::Peer, ..server(&["127.0.0.1"], &[]) };
    // new_cert verifies a peer's certificate at both ends itself.
    new_cert(&ca, &peer).expect("a peer cert");
}

// G22: signing needs a CA certificate and its own key; a leaf or a foreign key cannot sign.
#[test]
fn only_a_ca_with_its_own_key_signs() {
    let ca = new_ca("Ward CA", 30).expect("a CA");
    let other = new_ca("Other CA", 30).expect("a CA");
    let leaf = new_cert(&ca, &server(&["127.0.0.1"], &[])).expect("a cert");
    let made = new_cert(&leaf, &server(&["127.0.0.1"], &[]));
    assert!(matches!(made, Err(CertError::NotCa)), "a leaf: {made:?}");
    let foreign_key = Pem { cert: ca.cert.clone(), key: other.key };
    let made = new_cert(&foreign_key, &server(&["127.0.0.1"], &[]));
    assert!(matches!(made, Err(CertError::Unverified(_))), "a foreign key: {made:?}");
}

// G22: a CA made elsewhere (a subject of several parts, as openssl's usually is) signs too:
// the issuer is named exactly as the CA names itself.
#[test]
fn a_ca_with_a_longer_subject_signs() {
    let key = KeyPair::generate().expect("a key");
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CountryName, rcgen::DnValue::PrintableString("DE".try_into().expect("ok")));
    params.distinguished_name.push(DnType::OrganizationName, "Example");
    params.distinguished_name.push(DnType::CommonName, "Example Root");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key).expect("a CA");
    let ca = Pem { cert: cert.pem(), key: key.serialize_pem() };
    new_cert(&ca, &server(&[], &["ward.example.com"])).expect("signed and verified");
}

#[test]
fn refuses_what_cannot_make_a_usable_certificate() {
    assert!(matches!(new_ca("Ward CA", 0), Err(CertError::Days(0))));
    assert!(matches!(new_ca("Ward CA", MAX_DAYS + 1), Err(CertError::Days(_))));
    let ca = new_ca("Ward CA", 30).expect("a CA");
    assert!(matches!(new_cert(&ca, &server(&[], &[])), Err(CertError::NoNames("server"))));
    assert!(matches!(new_cert(&ca, &server(&[], &["bad name\u{e9}"])), Err(CertError::DnsName { .. })));
    let garbled = Pem { cert: "not PEM".into(), key: ca.key.clone() };
    assert!(matches!(new_cert(&garbled, &server(&["127.0.0.1"], &[])), Err(CertError::CaCert(_))));
    let no_key = Pem { cert: ca.cert.clone(), key: "not PEM".into() };
    assert!(matches!(new_cert(&no_key, &server(&["127.0.0.1"], &[])), Err(CertError::CaKey(_))));
}

// G22: two CAs made with the default name differ in it, so a client trusting the one refuses
// the other's certificates as from an unknown CA (with one name, as a bad signature).
#[test]
fn default_ca_names_differ() {
    assert_ne!(unique_ca_name(), unique_ca_name());
    assert!(unique_ca_name().starts_with("Ward CA "));
}
