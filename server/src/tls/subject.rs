//! A certificate's subject as an RFC 4514 string (`CN=alice,O=Example`): the form
//! ZooKeeper's `x509` scheme uses as the client's id (Java's RFC 2253 `X500Principal`
//! names, of which RFC 4514 is the successor). The relative names come last first, joined
//! by `,` (and the attributes of one by `+`); the attribute types of RFC 4514's table go by
//! their short names, any other by its dotted OID with the value as `#` and the hex of its
//! DER encoding, as are values that are not strings.
//!
//! Only the few DER structures on the way to the subject are read, from a certificate the
//! TLS handshake has already verified; anything unexpected gives `None`.

/// The subject of the DER certificate `cert`, or `None` if it cannot be read.
pub(crate) fn rfc4514(cert: &[u8]) -> Option<String> {
    let (certificate, _) = Der::new(cert).expect(SEQUENCE)?;
    let (tbs, _) = certificate.expect(SEQUENCE)?;
    let mut fields = tbs;
    if fields.peek() == Some(VERSION) {
        fields = fields.skip()?;
    }
    // serialNumber, signature, issuer, validity, then the subject.
    for _ in 0..4 {
        fields = fields.skip()?;
    }
    let (subject, _) = fields.expect(SEQUENCE)?;
    name(subject)
}

fn name(mut rdns: Der<'_>) -> Option<String> {
    let mut parts = Vec::new();
    while !rdns.is_empty() {
        let (mut set, rest) = rdns.expect(SET)?;
        rdns = rest;
        let mut attributes = Vec::new();
        while !set.is_empty() {
            let (attribute, rest) = set.expect(SEQUENCE)?;
            set = rest;
            attributes.push(attribute_string(attribute)?);
        }
        parts.push(attributes.join("+"));
    }
    parts.reverse();
    Some(parts.join(","))
}

fn attribute_string(attribute: Der<'_>) -> Option<String> {
    let (oid, value) = attribute.expect(OID)?;
    let (tag, content, whole) = value.next()?;
    let short = SHORT_NAMES.iter().find(|(der, _)| *der == oid.bytes).map(|(_, name)| *name);
    match (short, text(tag, content)) {
        (Some(short), Some(text)) => Some(format!("{short}={}", escape(&text))),
        (short, _) => {
            let hex: String = whole.iter().map(|b| format!("{b:02X}")).collect();
            Some(format!("{}=#{hex}", short.map_or_else(|| dotted(oid.bytes), str::to_string)))
        }
    }
}

/// The string value of a DirectoryString-like `content` of `tag`, if it is one.
fn text(tag: u8, content: &[u8]) -> Option<String> {
    match tag {
        // UTF8String, PrintableString, IA5String, VisibleString.
        0x0c | 0x13 | 0x16 | 0x1a => std::str::from_utf8(content).ok().map(str::to_string),
        // BMPString: UTF-16, big-endian.
        0x1e if content.len().is_multiple_of(2) => {
            let units = content.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]));
            char::decode_utf16(units).collect::<Result<String, _>>().ok()
        }
        _ => None,
    }
}

/// RFC 4514 section 2.4: the special characters with a backslash, and a leading space or
/// `#` and a trailing space too.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => out.push('\\'),
            '#' if i == 0 => out.push('\\'),
            ' ' if i == 0 || i == last => out.push('\\'),
            '\0' => {
                out.push_str("\\00");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

fn dotted(oid: &[u8]) -> String {
    let mut arcs: Vec<u64> = Vec::new();
    let mut value = 0u64;
    for (i, b) in oid.iter().enumerate() {
        value = (value << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = value.min(80) / 40;
                arcs.extend([first, value - first * 40]);
            } else {
                arcs.push(value);
            }
            value = 0;
        } else if i + 1 == oid.len() {
            return String::new();
        }
    }
    arcs.iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// `[0] EXPLICIT Version` in a TBSCertificate.
const VERSION: u8 = 0xa0;

/// RFC 4514's attribute types with short names, by DER-encoded OID.
const SHORT_NAMES: &[(&[u8], &str)] = &[
    (&[0x55, 0x04, 0x03], "CN"),
    (&[0x55, 0x04, 0x07], "L"),
    (&[0x55, 0x04, 0x08], "ST"),
    (&[0x55, 0x04, 0x0a], "O"),
    (&[0x55, 0x04, 0x0b], "OU"),
    (&[0x55, 0x04, 0x06], "C"),
    (&[0x55, 0x04, 0x09], "STREET"),
    (&[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x19], "DC"),
    (&[0x09, 0x92, 0x26, 0x89, 0x93, 0xf2, 0x2c, 0x64, 0x01, 0x01], "UID"),
];

/// DER elements one after another.
#[derive(Clone, Copy)]
struct Der<'a> {
    bytes: &'a [u8],
}

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Der { bytes }
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.first().copied()
    }

    /// The next element: its tag, its content, and its whole encoding; and what follows.
    fn next(self) -> Option<(u8, &'a [u8], &'a [u8])> {
        let (&tag, rest) = self.bytes.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = match first {
            0..=0x7f => (usize::from(first), rest),
            0x81..=0x84 => {
                let n = usize::from(first & 0x7f);
                let (len_bytes, rest) = (rest.get(..n)?, rest.get(n..)?);
                (len_bytes.iter().fold(0usize, |len, b| (len << 8) | usize::from(*b)), rest)
            }
            _ => return None,
        };
        let content = rest.get(..len)?;
        let whole_len = self.bytes.len() - rest.len() + len;
        Some((tag, content, self.bytes.get(..whole_len)?))
    }

    /// The content of the next element, which must have `tag`, and the elements after it.
    fn expect(self, tag: u8) -> Option<(Der<'a>, Der<'a>)> {
        let (got, content, whole) = self.next()?;
        (got == tag).then(|| (Der::new(content), Der::new(&self.bytes[whole.len()..])))
    }

    /// The elements after the next one.
    fn skip(self) -> Option<Der<'a>> {
        let (_, _, whole) = self.next()?;
        Some(Der::new(&self.bytes[whole.len()..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn subject_of(dn: &[(DnType, &str)]) -> Option<String> {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in dn {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("self-signed");
        rfc4514(cert.der())
    }

    /// The subject the `x509` scheme sees (docs/security.md "TLS"): the most specific part
    /// first, as Java's `X500Principal.getName()` gives it to ZooKeeper.
    #[test]
    fn the_subject_reads_last_relative_name_first() {
        let got = subject_of(&[
            (DnType::CountryName, "NL"),
            (DnType::OrganizationName, "Example"),
            (DnType::CommonName, "alice"),
        ]);
        assert_eq!(got.as_deref(), Some("CN=alice,O=Example,C=NL"));
    }

    #[test]
    fn special_characters_are_escaped() {
        let got = subject_of(&[(DnType::CommonName, " a,b+c\"d\\e;<f>#")]);
        assert_eq!(got.as_deref(), Some(r#"CN=\ a\,b\+c\"d\\e\;\<f\>#"#));
        assert_eq!(escape("#x "), "\\#x\\ ");
    }

    #[test]
    fn other_attribute_types_are_dotted_with_the_value_in_hex() {
        // emailAddress (1.2.840.113549.1.9.1) as an IA5String "a@b".
        let got =
            subject_of(&[(DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]), "a@b"), (DnType::CommonName, "x")]);
        let got = got.expect("a subject");
        assert!(got.starts_with("CN=x,1.2.840.113549.1.9.1=#"), "{got}");
    }

    #[test]
    fn garbage_is_no_subject() {
        assert_eq!(rfc4514(b""), None);
        assert_eq!(rfc4514(&[0x30, 0x85, 0, 0, 0, 0, 0]), None);
        assert_eq!(rfc4514(&[0x30, 0x03, 0x30, 0x01]), None);
    }
}
