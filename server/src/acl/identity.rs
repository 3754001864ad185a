//! A connection's identities, and `AddAuth`.
//!
//! ZooKeeper keeps a list of ids per connection: the peer's `ip` from the start, a `digest`
//! for each `addAuth digest user:password`, the certificate's `x509` subject under TLS, and
//! `super` when a digest is the configured super user's. They last as long as the
//! connection: a client that reconnects shows its credentials again (both kazoo and Ward's
//! client do it before anything else).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use ward_proto::digest::digest_id;
use ward_proto::ErrorCode;

/// One identity a connection has. Logged with each write it sends (`CommandOp::As`), so
/// kept small: an address is its bytes, not text.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuthId {
    /// The connection's peer address (the `ip` scheme). Every connection has one.
    Ip(IpAddr),
    /// `user:base64(sha1(user:password))` (the `digest` scheme).
    Digest(String),
    /// The subject of the client's certificate (the `x509` scheme).
    X509(String),
    /// The super user: every check passes.
    Super,
}

impl AuthId {
    /// The scheme ZooKeeper names it by.
    pub fn scheme(&self) -> &'static str {
        match self {
            AuthId::Ip(_) => "ip",
            AuthId::Digest(_) => "digest",
            AuthId::X509(_) => "x509",
            AuthId::Super => "super",
        }
    }

    /// True for the ids an ACL's `auth` scheme expands to (ZooKeeper's providers that are
    /// `isAuthenticated`: an address is not, a password or a certificate is).
    pub(crate) fn is_authenticated(&self) -> bool {
        matches!(self, AuthId::Digest(_) | AuthId::X509(_))
    }

    /// The id's text, as ACL entries and `whoAmI` show it.
    pub fn id(&self) -> String {
        match self {
            AuthId::Ip(ip) => ip.to_string(),
            AuthId::Digest(id) | AuthId::X509(id) => id.clone(),
            AuthId::Super => String::new(),
        }
    }

    /// Who it is, for `whoAmI`: a digest's user name without its hash (ZooKeeper's
    /// `getUserName`).
    pub fn user(&self) -> String {
        match self {
            AuthId::Digest(id) => id.split(':').next().unwrap_or_default().to_string(),
            other => other.id(),
        }
    }
}

impl fmt::Debug for AuthId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never a digest's hash: it stands in for the password.
        match self {
            AuthId::Digest(_) => write!(f, "digest:{}:…", self.user()),
            other => write!(f, "{}:{}", other.scheme(), other.id()),
        }
    }
}

/// The super user's digest id (`user:base64(sha1(user:password))`, ZooKeeper's
/// `zookeeper.DigestAuthenticationProvider.superDigest`): a connection that shows its
/// password with `AddAuth digest` passes every ACL check. `Debug` hides the hash.
#[derive(Clone, PartialEq, Eq)]
pub struct SuperDigest(String);

impl SuperDigest {
    /// Checks the form `user:hash` (what `ward acl digest USER:PASSWORD` prints).
    pub fn new(user_hash: &str) -> Result<SuperDigest, String> {
        match user_hash.split_once(':') {
            Some((user, hash)) if !user.is_empty() && !hash.is_empty() && !hash.contains(':') => {
                Ok(SuperDigest(user_hash.to_string()))
            }
            _ => {
                Err("the super digest must be USER:HASH, the digest of USER:PASSWORD (ward acl digest makes one)"
                    .into())
            }
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SuperDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SuperDigest({}:…)", self.0.split(':').next().unwrap_or_default())
    }
}

/// The identities of one connection, in the order they were added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Identity {
    ids: Vec<AuthId>,
}

impl Identity {
    /// A connection's identity at its start: its peer address and, under TLS, the subject
    /// of the client certificate it showed (`None` without one). An IPv4 peer reached
    /// through an IPv6 socket counts as its IPv4 address.
    pub(crate) fn for_connection(peer: IpAddr, certificate_subject: Option<String>) -> Identity {
        let mut ids = vec![AuthId::Ip(peer.to_canonical())];
        ids.extend(certificate_subject.map(AuthId::X509));
        Identity { ids }
    }

    pub(crate) fn ids(&self) -> &[AuthId] {
        &self.ids
    }

    /// `AddAuth` (ZooKeeper's auth packet): adds the ids `scheme` and `credentials` give, or
    /// fails with `AuthFailed`, as ZooKeeper's providers decide:
    /// * `digest`: always succeeds; `user:password` becomes the digest id (a wrong password
    ///   is not refused here, as the server keeps no passwords: it gives an id no ACL
    ///   names, so the node answers `NoAuth`). The super user's digest adds `super` too.
    /// * `ip`: succeeds, adding nothing new (the address is there from the start).
    /// * `x509`: succeeds if the connection showed a client certificate, else fails.
    /// * any other scheme fails.
    pub(crate) fn add_auth(
        &mut self,
        scheme: &str,
        credentials: &[u8],
        super_digest: Option<&str>,
    ) -> Result<(), ErrorCode> {
        match scheme {
            "digest" => {
                let id = digest_id(&String::from_utf8_lossy(credentials));
                if super_digest == Some(id.as_str()) {
                    self.add(AuthId::Super);
                }
                self.add(AuthId::Digest(id));
                Ok(())
            }
            "ip" => Ok(()),
            "x509" if self.ids.iter().any(|id| matches!(id, AuthId::X509(_))) => Ok(()),
            _ => Err(ErrorCode::AuthFailed),
        }
    }

    fn add(&mut self, id: AuthId) {
        if !self.ids.contains(&id) {
            self.ids.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn a_connection_starts_with_its_address_and_its_certificate() {
        let plain = Identity::for_connection(PEER, None);
        assert_eq!(plain.ids(), [AuthId::Ip(PEER)]);
        let subject = "CN=alice,O=Example".to_string();
        let tls = Identity::for_connection(PEER, Some(subject.clone()));
        assert_eq!(tls.ids(), [AuthId::Ip(PEER), AuthId::X509(subject)]);
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("address");
        assert_eq!(Identity::for_connection(mapped, None).ids(), [AuthId::Ip(PEER)]);
    }

    #[test]
    fn add_auth_follows_zookeepers_providers() {
        let mut me = Identity::for_connection(PEER, None);
        me.add_auth("digest", b"alice:wrong", None).expect("a digest is never refused");
        me.add_auth("digest", b"alice:wrong", None).expect("twice");
        assert_eq!(me.ids().len(), 2, "the same id once: {me:?}");
        me.add_auth("ip", b"", None).expect("ip");
        assert_eq!(me.add_auth("x509", b"", None), Err(ErrorCode::AuthFailed), "no certificate");
        assert_eq!(me.add_auth("unknown-scheme", b"x", None), Err(ErrorCode::AuthFailed));
        assert_eq!(me.add_auth("super", b"x", None), Err(ErrorCode::AuthFailed));

        let mut tls = Identity::for_connection(PEER, Some("CN=bob".into()));
        tls.add_auth("x509", b"", None).expect("a certificate was shown");

        let super_digest = digest_id("super:test");
        let mut admin = Identity::for_connection(PEER, None);
        admin.add_auth("digest", b"super:test", Some(&super_digest)).expect("super");
        assert!(admin.ids().contains(&AuthId::Super), "{admin:?}");
        let mut other = Identity::for_connection(PEER, None);
        other.add_auth("digest", b"super:guess", Some(&super_digest)).expect("digest");
        assert!(!other.ids().contains(&AuthId::Super));
    }

    #[test]
    fn debug_hides_the_digest() {
        let mut me = Identity::for_connection(PEER, None);
        me.add_auth("digest", b"alice:secret", None).expect("digest");
        let hash = digest_id("alice:secret").split(':').nth(1).expect("hash").to_string();
        let shown = format!("{me:?}");
        assert!(!shown.contains(&hash) && !shown.contains("secret") && shown.contains("alice"), "{shown}");
    }
}
