//! Access control lists, with ZooKeeper's model: a node's ACL is a list of entries, each
//! granting permissions ([`perms`]) to an identity ([`Id`]: a scheme and an id within it).
//! What each scheme matches is the server's business (docs/security.md); here are the
//! values, zkCli's notation for them (`scheme:id:perms`, e.g. `world:anyone:cdrwa`,
//! `digest:alice:XXX=:rw`, `ip:10.0.0.0/8:r`, `auth::cdrwa`), and the digest of a
//! password.
//!
//! A digest id (`user:base64(sha1(user:password))`) stands in for a password: anyone who
//! has it can try passwords offline. So `Debug` never shows it (logs use `Debug`), and the
//! server shows it only to a client with ADMIN on the node.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Permission bits, as ZooKeeper numbers them (`ZooDefs.Perms`).
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const CREATE: i32 = 4;
    pub const DELETE: i32 = 8;
    pub const ADMIN: i32 = 16;
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}

/// An identity an ACL entry names: `scheme` (`world`, `auth`, `digest`, `ip`, `x509`) and
/// an id whose meaning the scheme gives.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Id {
    pub scheme: String,
    pub id: String,
}

impl Id {
    pub fn new(scheme: &str, id: &str) -> Id {
        Id { scheme: scheme.to_string(), id: id.to_string() }
    }

    /// The id as logs may show it: a digest without its hash.
    pub fn redacted(&self) -> String {
        match self.scheme.as_str() {
            "digest" => format!("digest:{}:…", self.id.split(':').next().unwrap_or_default()),
            _ => format!("{}:{}", self.scheme, self.id),
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// One entry of a node's ACL.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Acl {
    /// A set of [`perms`] bits.
    pub perms: i32,
    pub id: Id,
}

impl Acl {
    pub fn new(perms: i32, scheme: &str, id: &str) -> Acl {
        Acl { perms, id: Id::new(scheme, id) }
    }

    /// `world:anyone` with every permission: what a node gets when its creator names no
    /// ACL (ZooKeeper's `OPEN_ACL_UNSAFE`).
    pub fn open() -> Vec<Acl> {
        vec![Acl::new(perms::ALL, "world", "anyone")]
    }

    /// `world:anyone` may read, nobody else do anything (`READ_ACL_UNSAFE`).
    pub fn read_only() -> Vec<Acl> {
        vec![Acl::new(perms::READ, "world", "anyone")]
    }

    /// Every permission to the creator's authenticated identities (`CREATOR_ALL_ACL`); the
    /// create fails with `InvalidAcl` if the session has none.
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl::new(perms::ALL, "auth", "")]
    }

    /// The entry in zkCli's notation, `scheme:id:perms`. It shows a digest's hash: for a
    /// user's terminal, never for a log (use `Debug`).
    pub fn notation(&self) -> String {
        format!("{}:{}:{}", self.id.scheme, self.id.id, perm_string(self.perms))
    }
}

impl fmt::Debug for Acl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.id.redacted(), perm_string(self.perms))
    }
}

/// Why an ACL in zkCli's notation does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AclParseError {
    #[error("{0:?} does not have the form scheme:id:perms")]
    Form(String),
    #[error("unknown permission {0:?} (use the letters c, d, r, w, a)")]
    Perm(char),
}

/// Parses zkCli's notation: entries `scheme:id:perms` separated by commas. The scheme ends
/// at the first colon and the perms start after the last, so ids may hold colons (a digest's
/// `user:hash`, an IPv6 address). Perms are letters: `c`reate, `d`elete, `r`ead, `w`rite,
/// `a`dmin.
pub fn parse_acl(text: &str) -> Result<Vec<Acl>, AclParseError> {
    text.split(',').map(parse_entry).collect()
}

fn parse_entry(entry: &str) -> Result<Acl, AclParseError> {
    let (first, last) = match (entry.find(':'), entry.rfind(':')) {
        (Some(first), Some(last)) if first != last => (first, last),
        _ => return Err(AclParseError::Form(entry.to_string())),
    };
    let perms = parse_perms(&entry[last + 1..])?;
    Ok(Acl::new(perms, &entry[..first], &entry[first + 1..last]))
}

/// Permission letters (`cdrwa`, any order) to bits.
pub fn parse_perms(letters: &str) -> Result<i32, AclParseError> {
    letters.chars().try_fold(0, |bits, c| {
        let bit = match c {
            'c' => perms::CREATE,
            'd' => perms::DELETE,
            'r' => perms::READ,
            'w' => perms::WRITE,
            'a' => perms::ADMIN,
            other => return Err(AclParseError::Perm(other)),
        };
        Ok(bits | bit)
    })
}

/// Bits to letters, in zkCli's order (`cdrwa`).
pub fn perm_string(bits: i32) -> String {
    [(perms::CREATE, 'c'), (perms::DELETE, 'd'), (perms::READ, 'r'), (perms::WRITE, 'w'), (perms::ADMIN, 'a')]
        .into_iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, c)| c)
        .collect()
}

/// What a client shows to authenticate (`AddAuth`): for the `digest` scheme,
/// `user:password`. Never printed: `Debug` hides it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials(#[serde(with = "serde_bytes")] pub Vec<u8>);

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zkcli_notation_parses_and_prints() {
        let acl =
            parse_acl("world:anyone:r,digest:alice:abc=:rw,ip:10.0.0.0/8:cdrwa,auth::a,ip:::1:r").expect("parses");
        assert_eq!(
            acl,
            vec![
                Acl::new(perms::READ, "world", "anyone"),
                Acl::new(perms::READ | perms::WRITE, "digest", "alice:abc="),
                Acl::new(perms::ALL, "ip", "10.0.0.0/8"),
                Acl::new(perms::ADMIN, "auth", ""),
                Acl::new(perms::READ, "ip", "::1"),
            ]
        );
        let printed: Vec<String> = acl.iter().map(Acl::notation).collect();
        assert_eq!(printed.join(","), "world:anyone:r,digest:alice:abc=:rw,ip:10.0.0.0/8:cdrwa,auth::a,ip:::1:r");
        assert_eq!(parse_acl("world:anyone"), Err(AclParseError::Form("world:anyone".into())));
        assert_eq!(parse_acl("world:anyone:rx"), Err(AclParseError::Perm('x')));
        assert_eq!(perm_string(perms::ALL), "cdrwa");
        assert_eq!(parse_perms("").expect("no letters"), 0);
    }

    #[test]
    fn debug_never_shows_a_digest_or_credentials() {
        let acl = Acl::new(perms::ALL, "digest", "alice:SECRETHASH=");
        let shown = format!("{acl:?} {:?} {:?}", acl.id, Credentials(b"alice:password".to_vec()));
        assert!(!shown.contains("SECRETHASH") && !shown.contains("password"), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }
}
