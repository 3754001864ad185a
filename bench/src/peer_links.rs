//! A proxy on every directed peer link of a local ensemble (`from` dials `to` through
//! `(from, to)`'s proxy, by `--peer-route`), so that one member can be partitioned from the
//! others while its clients, and theirs, still reach it.
//!
//! Only the partition measurement runs through these: a member killed behind a proxy looks
//! different to the others (the proxy still accepts, then closes) than one killed on a
//! direct link (its port refuses), and the kill measurements time the latter.

use crate::sys::{Error, Result};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use ward_procs::Proxy;

pub struct PeerLinks {
    links: BTreeMap<(u64, u64), Proxy>,
}

impl PeerLinks {
    /// A proxy for every ordered pair of distinct members, each forwarding to `to`'s peer port.
    pub async fn start(peers: &BTreeMap<u64, SocketAddr>) -> Result<PeerLinks> {
        let mut links = BTreeMap::new();
        for &from in peers.keys() {
            for (&to, &addr) in peers {
                if from != to {
                    let proxy = Proxy::try_start(addr).await.map_err(|e| Error(format!("peer proxy: {e}")))?;
                    links.insert((from, to), proxy);
                }
            }
        }
        Ok(PeerLinks { links })
    }

    /// `--peer-route`'s value for member `from`: `to=PROXY,...`; `None` if it has no links.
    pub fn routes(&self, from: u64) -> Option<String> {
        let routes: Vec<String> = self
            .links
            .iter()
            .filter(|((f, _), _)| *f == from)
            .map(|((_, to), p)| format!("{to}={}", p.addr()))
            .collect();
        (!routes.is_empty()).then(|| routes.join(","))
    }

    /// Silently drops every peer message to and from `id`: open connections stay up and
    /// carry nothing, new ones are refused, and nobody sees a close.
    pub fn partition(&self, id: u64) {
        for proxy in self.touching(id) {
            proxy.partition();
        }
    }

    /// Ends `id`'s partition: its dead connections are closed and new ones let through, so
    /// the members reconnect on their own. The other links are left alone.
    pub fn heal(&self, id: u64) {
        for proxy in self.touching(id) {
            proxy.cut();
            proxy.unblock();
        }
    }

    fn touching(&self, id: u64) -> impl Iterator<Item = &Proxy> {
        self.links.iter().filter(move |((from, to), _)| *from == id || *to == id).map(|(_, p)| p)
    }
}
