//! The types of option values. Each parses from the text a flag or an environment variable
//! gives (`FromStr`) and from the TOML value a config file gives (`Deserialize`), with the
//! same checks, so that a bad value is refused where it was written, under its own name.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;

/// `HOST:PORT`, with `HOST` an IP address or a name resolved at startup (`[::1]:7181` for
/// IPv6).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct HostPort {
    host: String,
    port: u16,
}

impl HostPort {
    /// Every address the name stands for, in the resolver's order.
    pub fn resolve(&self) -> std::io::Result<Vec<SocketAddr>> {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        Ok((host, self.port).to_socket_addrs()?.collect())
    }
}

impl From<SocketAddr> for HostPort {
    fn from(addr: SocketAddr) -> HostPort {
        let host = match addr {
            SocketAddr::V4(a) => a.ip().to_string(),
            SocketAddr::V6(a) => format!("[{}]", a.ip()),
        };
        HostPort { host, port: addr.port() }
    }
}

impl FromStr for HostPort {
    type Err = String;
    fn from_str(s: &str) -> Result<HostPort, String> {
        if let Ok(addr) = s.parse::<SocketAddr>() {
            return Ok(addr.into());
        }
        let Some((host, port)) = s.rsplit_once(':') else {
            return Err(format!("{s:?} is not HOST:PORT"));
        };
        let port = port.parse().map_err(|e| format!("port {port:?}: {e}"))?;
        let name_chars = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
        if host.is_empty() || !host.chars().all(name_chars) {
            return Err(format!("{host:?} is not a host name or IP address"));
        }
        Ok(HostPort { host: host.to_string(), port })
    }
}

impl TryFrom<String> for HostPort {
    type Error = String;
    fn try_from(s: String) -> Result<HostPort, String> {
        s.parse()
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// A listener that can be switched off: `HOST:PORT` or `off`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum Listen {
    Off,
    At(HostPort),
}

impl FromStr for Listen {
    type Err = String;
    fn from_str(s: &str) -> Result<Listen, String> {
        match s {
            "off" => Ok(Listen::Off),
            addr => addr.parse().map(Listen::At).map_err(|e| format!("{e} (or off)")),
        }
    }
}

impl TryFrom<String> for Listen {
    type Error = String;
    fn try_from(s: String) -> Result<Listen, String> {
        s.parse()
    }
}

impl fmt::Display for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listen::Off => f.write_str("off"),
            Listen::At(addr) => addr.fmt(f),
        }
    }
}

/// An integer in `MIN..=MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "u64")]
pub struct Bounded<const MIN: u64, const MAX: u64>(pub u64);

impl<const MIN: u64, const MAX: u64> TryFrom<u64> for Bounded<MIN, MAX> {
    type Error = String;
    fn try_from(n: u64) -> Result<Self, String> {
        match (MIN..=MAX).contains(&n) {
            true => Ok(Bounded(n)),
            false if MAX == u64::MAX => Err(format!("must be at least {MIN}")),
            false => Err(format!("must be between {MIN} and {MAX}")),
        }
    }
}

impl<const MIN: u64, const MAX: u64> FromStr for Bounded<MIN, MAX> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.parse::<u64>().map_err(|e| e.to_string())?.try_into()
    }
}

impl<const MIN: u64, const MAX: u64> fmt::Display for Bounded<MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Ensemble members by id: `1=HOST:PORT,2=HOST:PORT,...` as text, or in a config file also
/// a table (`[ensemble]` then `1 = "HOST:PORT"` lines). Ids are unique and start at 1.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Members(pub BTreeMap<u64, String>);

impl Members {
    fn add(&mut self, id: &str, addr: &str) -> Result<(), String> {
        let id: u64 = id.trim().parse().map_err(|e| format!("member id {id:?}: {e}"))?;
        if id == 0 {
            return Err("member ids start at 1".into());
        }
        let addr: HostPort = addr.trim().parse().map_err(|e| format!("member {id}: {e}"))?;
        match self.0.insert(id, addr.to_string()) {
            Some(_) => Err(format!("member {id} is listed twice")),
            None => Ok(()),
        }
    }

    fn non_empty(self) -> Result<Members, String> {
        match self.0.is_empty() {
            true => Err("no members".into()),
            false => Ok(self),
        }
    }
}

impl FromStr for Members {
    type Err = String;
    fn from_str(list: &str) -> Result<Members, String> {
        let mut members = Members::default();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((id, addr)) = item.split_once('=') else {
                return Err(format!("{item:?} is not ID=HOST:PORT"));
            };
            members.add(id, addr)?;
        }
        members.non_empty()
    }
}

impl fmt::Display for Members {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: Vec<String> = self.0.iter().map(|(id, addr)| format!("{id}={addr}")).collect();
        f.write_str(&list.join(","))
    }
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Members, D::Error> {
        deserializer.deserialize_any(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string \"1=HOST:PORT,2=HOST:PORT\" or a table of id = \"HOST:PORT\"")
    }

    fn visit_str<E: de::Error>(self, list: &str) -> Result<Members, E> {
        list.parse().map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut members = Members::default();
        while let Some((id, addr)) = map.next_entry::<String, String>()? {
            members.add(&id, &addr).map_err(de::Error::custom)?;
        }
        members.non_empty().map_err(de::Error::custom)
    }
}

/// `--log-format`: how each line on stderr is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines (coloured only when stderr is a terminal).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

/// `--tls-client-auth`: whether clients of a listener with a client CA must show a
/// certificate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// A client without a certificate is refused (ZooKeeper's ssl.clientAuth=need).
    #[default]
    Required,
    /// A client may connect without one; one it shows must be valid (ZooKeeper's want).
    Optional,
}

impl fmt::Display for ClientAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClientAuth::Required => "required",
            ClientAuth::Optional => "optional",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_takes_names_and_addresses() {
        assert_eq!("localhost:7181".parse::<HostPort>().map(|a| a.to_string()), Ok("localhost:7181".into()));
        assert_eq!("[::1]:0".parse::<HostPort>().map(|a| a.to_string()), Ok("[::1]:0".into()));
        assert!("localhost".parse::<HostPort>().is_err());
        assert!("localhost:x".parse::<HostPort>().is_err());
        assert!(":7181".parse::<HostPort>().is_err());
        assert!("a b:1".parse::<HostPort>().is_err());
    }

    #[test]
    fn members_from_text_and_checks() {
        let m: Members = "1=a:1, 2=b:2".parse().expect("parse");
        assert_eq!(m.to_string(), "1=a:1,2=b:2");
        assert!("0=a:1".parse::<Members>().is_err());
        assert!("1=a:1,1=b:2".parse::<Members>().is_err());
        assert!("".parse::<Members>().is_err());
        assert!("1".parse::<Members>().is_err());
    }

    #[test]
    fn bounded_says_its_range() {
        assert_eq!("0".parse::<Bounded<1, 9>>(), Err("must be between 1 and 9".into()));
        assert_eq!("0".parse::<Bounded<1, { u64::MAX }>>(), Err("must be at least 1".into()));
        assert_eq!("9".parse::<Bounded<1, 9>>(), Ok(Bounded(9)));
    }
}

/// A value that must never be shown: not in `Debug`, and not in an error about it (a
/// mistyped super digest may be a password). Any text parses; its meaning is checked where
/// it is used, by a message that does not repeat it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl FromStr for Secret {
    type Err = String;
    fn from_str(s: &str) -> Result<Secret, String> {
        Ok(Secret(s.to_string()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}
