//! ZooKeeper's two ACL functions: `checkACL` ([`allows`]) and `fixupACL` ([`fixup`]), and
//! what each scheme matches.

use super::identity::AuthId;
use std::net::IpAddr;
use ward_proto::{Acl, ErrorCode};

/// Whether `acl` grants any of the `perm` bits to someone with `ids`: the super user always;
/// otherwise an entry with one of the bits whose id matches one of `ids` (`world:anyone`
/// matches everyone; `digest` and `x509` an equal id; `ip` an address within the entry's
/// network). An empty ACL grants everything, as in ZooKeeper (no node can have one:
/// [`fixup`] refuses it).
pub(crate) fn allows(acl: &[Acl], perm: i32, ids: &[AuthId]) -> bool {
    if ids.contains(&AuthId::Super) || acl.is_empty() {
        return true;
    }
    acl.iter().filter(|entry| entry.perms & perm != 0).any(|entry| {
        let want = entry.id.id.as_str();
        match entry.id.scheme.as_str() {
            "world" => want == "anyone",
            "digest" => ids.iter().any(|id| matches!(id, AuthId::Digest(d) if d == want)),
            "x509" => ids.iter().any(|id| matches!(id, AuthId::X509(s) if s == want)),
            "ip" => ids.iter().any(|id| matches!(id, AuthId::Ip(addr) if ip_matches(*addr, want))),
            _ => false,
        }
    })
}

/// The ACL a create or setACL stores for `acl` given by a client with `ids`, or
/// `InvalidAcl`: duplicates dropped (the first kept); `world` only as `world:anyone`; `auth`
/// replaced by one entry per authenticated id (digests and certificates, not the address),
/// and invalid if there is none; `digest` ids of the form `user:hash`; `ip` an address or a
/// network (`addr/bits`), IPv4 or IPv6; `x509` a non-empty subject; no other scheme.
pub(crate) fn fixup(acl: &[Acl], ids: &[AuthId]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<&Acl> = Vec::with_capacity(acl.len());
    for entry in acl {
        if !unique.contains(&entry) {
            unique.push(entry);
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut fixed = Vec::with_capacity(unique.len());
    for entry in unique {
        let id = entry.id.id.as_str();
        match entry.id.scheme.as_str() {
            "world" if id == "anyone" => fixed.push(entry.clone()),
            "auth" => {
                let before = fixed.len();
                for mine in ids.iter().filter(|mine| mine.is_authenticated()) {
                    fixed.push(Acl::new(entry.perms, mine.scheme(), &mine.id()));
                }
                if fixed.len() == before {
                    return Err(ErrorCode::InvalidAcl);
                }
            }
            "digest" if valid_digest(id) => fixed.push(entry.clone()),
            "ip" if parse_network(id).is_some() => fixed.push(entry.clone()),
            "x509" if !id.is_empty() => fixed.push(entry.clone()),
            _ => return Err(ErrorCode::InvalidAcl),
        }
    }
    Ok(fixed)
}

/// The ACL as a client without ADMIN on the node sees it: digests as `user:x`, as
/// ZooKeeper's getACL shows them.
pub(crate) fn masked(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|entry| match entry.id.scheme.as_str() {
            "digest" => {
                let user = entry.id.id.split(':').next().unwrap_or_default();
                Acl::new(entry.perms, "digest", &format!("{user}:x"))
            }
            _ => entry.clone(),
        })
        .collect()
}

/// ZooKeeper's digest provider accepts ids that split into exactly two parts on `:` (Java's
/// `split`, which drops trailing empty parts).
fn valid_digest(id: &str) -> bool {
    let mut parts: Vec<&str> = id.split(':').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts.len() == 2
}

/// An `ip` ACL id: an address, or an address and the number of leading bits that must match.
fn parse_network(text: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = match text.split_once('/') {
        Some((addr, bits)) => (addr, Some(bits)),
        None => (text, None),
    };
    let addr: IpAddr = addr.parse().ok()?;
    let width = if addr.is_ipv4() { 32 } else { 128 };
    let bits = match bits {
        Some(bits) => bits.parse::<u32>().ok().filter(|b| *b <= width)?,
        None => width,
    };
    Some((addr, bits))
}

/// Whether `peer` is within the network `acl_id` names. An IPv4 entry matches IPv4 peers, an
/// IPv6 entry IPv6 peers (ZooKeeper itself knows IPv4 only).
fn ip_matches(peer: IpAddr, acl_id: &str) -> bool {
    let Some((net, bits)) = parse_network(acl_id) else { return false };
    match (net, peer) {
        (IpAddr::V4(net), IpAddr::V4(peer)) => prefix_eq(&net.octets(), &peer.octets(), bits),
        (IpAddr::V6(net), IpAddr::V6(peer)) => prefix_eq(&net.octets(), &peer.octets(), bits),
        _ => false,
    }
}

/// Whether the first `bits` bits of `a` and `b` agree.
fn prefix_eq(a: &[u8], b: &[u8], bits: u32) -> bool {
    let mut left = bits;
    for (x, y) in a.iter().zip(b) {
        let take = left.min(8);
        if take == 0 {
            return true;
        }
        let mask = 0xffu8 << (8 - take);
        if x & mask != y & mask {
            return false;
        }
        left -= take;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_proto::digest::digest_id;
    use ward_proto::perms::{ADMIN, ALL, CREATE, DELETE, READ, WRITE};

    fn ip(text: &str) -> AuthId {
        AuthId::Ip(text.parse().expect("address"))
    }

    #[test]
    fn each_scheme_matches_its_own_ids() {
        let alice = AuthId::Digest(digest_id("alice:secret"));
        let acl = vec![
            Acl::new(READ, "world", "anyone"),
            Acl::new(WRITE, "digest", &digest_id("alice:secret")),
            Acl::new(CREATE, "ip", "10.1.0.0/16"),
            Acl::new(DELETE, "ip", "fd00::/8"),
            Acl::new(ADMIN, "x509", "CN=carol"),
        ];
        let nobody = [ip("192.168.0.1")];
        assert!(allows(&acl, READ, &nobody));
        assert!(!allows(&acl, WRITE | CREATE | DELETE | ADMIN, &nobody));
        assert!(allows(&acl, WRITE, &[ip("192.168.0.1"), alice.clone()]));
        assert!(!allows(&acl, WRITE, &[AuthId::Digest(digest_id("alice:wrong"))]));
        assert!(allows(&acl, CREATE, &[ip("10.1.200.3")]));
        assert!(!allows(&acl, CREATE, &[ip("10.2.0.1")]));
        assert!(allows(&acl, DELETE, &[ip("fd12::1")]));
        assert!(!allows(&acl, DELETE, &[ip("fe80::1")]));
        assert!(allows(&acl, ADMIN, &[AuthId::X509("CN=carol".into())]));
        assert!(!allows(&acl, ADMIN, &[AuthId::X509("CN=carol2".into())]));
        assert!(allows(&acl, ALL, &[AuthId::Super]), "the super user passes every check");
        assert!(!allows(&[Acl::new(ALL, "world", "someone")], READ, &nobody), "world means anyone only");
    }

    #[test]
    fn ip_networks_mask_as_zookeeper_does() {
        assert!(ip_matches("10.0.0.7".parse().expect("ip"), "10.0.0.7"));
        assert!(!ip_matches("10.0.0.8".parse().expect("ip"), "10.0.0.7"));
        assert!(
            ip_matches("10.9.9.9".parse().expect("ip"), "10.1.2.3/8"),
            "the entry's own bits past the mask do not count"
        );
        assert!(ip_matches("1.2.3.4".parse().expect("ip"), "0.0.0.0/0"));
        assert!(ip_matches("10.0.0.129".parse().expect("ip"), "10.0.0.128/25"));
        assert!(!ip_matches("10.0.0.127".parse().expect("ip"), "10.0.0.128/25"));
        assert!(!ip_matches("10.0.0.1".parse().expect("ip"), "10.0.0.1/33"));
        assert!(!ip_matches("::1".parse().expect("ip"), "0.0.0.0/0"), "no match across families");
    }

    #[test]
    fn fixup_validates_dedups_and_expands_auth() {
        let alice = AuthId::Digest(digest_id("alice:secret"));
        let peer = ip("127.0.0.1");
        let open = Acl::new(ALL, "world", "anyone");
        assert_eq!(fixup(&[open.clone(), open.clone()], &[]), Ok(vec![open.clone()]));
        assert_eq!(fixup(&[], std::slice::from_ref(&peer)), Err(ErrorCode::InvalidAcl));
        let auth = [Acl::new(READ | ADMIN, "auth", "")];
        assert_eq!(
            fixup(&auth, std::slice::from_ref(&peer)),
            Err(ErrorCode::InvalidAcl),
            "an address is not authenticated"
        );
        assert_eq!(
            fixup(&auth, &[peer.clone(), alice.clone(), AuthId::X509("CN=a".into())]),
            Ok(vec![Acl::new(READ | ADMIN, "digest", &alice.id()), Acl::new(READ | ADMIN, "x509", "CN=a")])
        );
        assert_eq!(fixup(&auth, &[AuthId::Super]), Err(ErrorCode::InvalidAcl), "super alone is not an identity");
        let bad = [
            Acl::new(ALL, "world", "someone"),
            Acl::new(ALL, "digest", "no-hash"),
            Acl::new(ALL, "digest", "a:b:c"),
            Acl::new(ALL, "ip", "10.0.0.0/40"),
            Acl::new(ALL, "ip", "not-an-address"),
            Acl::new(ALL, "x509", ""),
            Acl::new(ALL, "super", ""),
            Acl::new(ALL, "sasl", "bob"),
        ];
        for entry in bad {
            assert_eq!(
                fixup(&[open.clone(), entry.clone()], std::slice::from_ref(&alice)),
                Err(ErrorCode::InvalidAcl),
                "{entry:?}"
            );
        }
        let good = [Acl::new(ALL, "digest", "a:b:"), Acl::new(READ, "ip", "fd00::/8"), Acl::new(0, "ip", "10.0.0.1")];
        assert_eq!(fixup(&good, &[]).map(|acl| acl.len()), Ok(3));
    }

    #[test]
    fn masking_hides_digests_only() {
        let acl = [Acl::new(ALL, "digest", &digest_id("alice:secret")), Acl::new(READ, "ip", "10.0.0.1")];
        assert_eq!(masked(&acl), vec![Acl::new(ALL, "digest", "alice:x"), Acl::new(READ, "ip", "10.0.0.1")]);
    }
}
