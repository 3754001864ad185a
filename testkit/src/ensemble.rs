//! An ensemble of `ward-server` processes whose peer traffic runs through a [`Proxy`] per
//! directed link (member `a` reaches member `b` only through link `(a, b)`), so a test can
//! cut any member off, or any one direction between two members, without touching the
//! processes: partitions, one-way partitions and bridges. Members are real processes with
//! both listeners, killed, paused and restarted through [`ServerProcess`].

use crate::proxy::Proxy;
use crate::rng::{seed, Rng};
use crate::server::ServerProcess;
use crate::wait::{wait_for, DEADLINE};
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;
use ward_client::{Client, MemberRole};

pub struct Ensemble {
    members: BTreeMap<u64, ServerProcess>,
    /// `(from, to)`: the proxy `from` uses to reach `to`'s peer port.
    links: BTreeMap<(u64, u64), Proxy>,
}

/// A free port on 127.0.0.1 now. Another process could take it before the member binds it;
/// on a test machine that is rare, and the member's start then fails loudly.
fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a probe port");
    listener.local_addr().expect("probe address")
}

impl Ensemble {
    /// `n` members started in a random order (the seed is printed), each serving Ward's
    /// protocol, ZooKeeper's and the admin HTTP listener on ports of their own, with `flags`
    /// added.
    pub async fn start(n: u64, flags: &[&str]) -> Ensemble {
        let seed = seed();
        eprintln!("ensemble of {n}: start order from WARD_TEST_SEED={seed}");
        // A peer port is chosen free before its member binds it (every member must know all
        // of them up front), so another process can take it meanwhile: start over then.
        for attempt in 1.. {
            match Ensemble::try_start(n, flags, seed).await {
                Ok(ensemble) => return ensemble,
                Err(why) if attempt < 3 && why.contains("Address already in use") => {
                    eprintln!("ensemble start {attempt} lost a port race; starting over: {why}");
                }
                Err(why) => panic!("ensemble of {n} did not start: {why}"),
            }
        }
        unreachable!("the loop returns or panics")
    }

    async fn try_start(n: u64, flags: &[&str], seed: u64) -> Result<Ensemble, String> {
        let peer_addrs: BTreeMap<u64, SocketAddr> = (1..=n).map(|id| (id, free_port())).collect();
        let list = peer_addrs.iter().map(|(id, a)| format!("{id}={a}")).collect::<Vec<_>>().join(",");
        let mut links = BTreeMap::new();
        for from in 1..=n {
            for (&to, &addr) in peer_addrs.iter().filter(|(to, _)| **to != from) {
                links.insert((from, to), Proxy::start(addr).await);
            }
        }
        let mut order: Vec<u64> = (1..=n).collect();
        let mut rng = Rng::new(seed);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut members = BTreeMap::new();
        for id in order {
            let routes = links
                .iter()
                .filter(|((from, _), _)| *from == id)
                .map(|((_, to), proxy)| format!("{to}={}", proxy.addr_str()))
                .collect::<Vec<_>>()
                .join(",");
            let mut args = vec![
                "--id".to_string(),
                id.to_string(),
                "--ensemble".into(),
                list.clone(),
                "--peer-listen".into(),
                peer_addrs[&id].to_string(),
                "--peer-route".into(),
                routes,
            ];
            args.extend(flags.iter().map(|f| f.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let server = ServerProcess::builder().zookeeper().admin().flags(&args).try_start()?;
            members.insert(id, server);
        }
        Ok(Ensemble { members, links })
    }

    pub fn ids(&self) -> Vec<u64> {
        self.members.keys().copied().collect()
    }

    pub fn member(&mut self, id: u64) -> &mut ServerProcess {
        self.members.get_mut(&id).unwrap_or_else(|| panic!("no member {id}"))
    }

    /// Member `id`'s client address.
    pub fn addr(&self, id: u64) -> String {
        self.members[&id].addr_str()
    }

    /// Member `id`'s ZooKeeper address.
    pub fn zk_addr(&self, id: u64) -> String {
        self.members[&id].zk_addr_str()
    }

    /// Member `id`'s admin HTTP listener (`/metrics`, `/healthz`, `/readyz`).
    pub fn admin_addr(&self, id: u64) -> SocketAddr {
        self.members[&id].admin_addr()
    }

    /// Every member's client address, as a connect string.
    pub fn connect_string(&self) -> String {
        self.members.values().map(ServerProcess::addr_str).collect::<Vec<_>>().join(",")
    }

    /// Every member's ZooKeeper address, as a ZooKeeper connect string.
    pub fn zk_connect_string(&self) -> String {
        self.members.values().map(ServerProcess::zk_addr_str).collect::<Vec<_>>().join(",")
    }

    /// The leader, once the members agree on one that answers (bounded by [`DEADLINE`]).
    /// Asks through members in `among` only (pass `&[]` for all).
    pub async fn leader(&self, among: &[u64]) -> u64 {
        let addrs: Vec<String> = self
            .ids()
            .into_iter()
            .filter(|id| among.is_empty() || among.contains(id))
            .map(|id| self.addr(id))
            .collect();
        let addrs = addrs.join(",");
        wait_for("a leader", DEADLINE, || {
            let addrs = addrs.clone();
            async move {
                let client = Client::builder(&addrs)
                    .connect_timeout(Duration::from_secs(2))
                    .session_timeout(Duration::from_secs(4))
                    .connect()
                    .await
                    .ok()?;
                // Bounded per attempt: a member may be waiting on a leader that is cut off.
                let members = tokio::time::timeout(Duration::from_secs(3), client.members()).await.ok()?.ok();
                let _ = client.close().await;
                members?.into_iter().find(|m| m.role == MemberRole::Leader).map(|m| m.id)
            }
        })
        .await
    }

    /// Silently drops every peer message to and from `id` (its clients still reach it).
    pub fn isolate(&self, id: u64) {
        for ((from, to), proxy) in &self.links {
            if *from == id || *to == id {
                proxy.partition();
            }
        }
    }

    /// Silently drops what `from` sends `to` (one direction only).
    pub fn cut_one_way(&self, from: u64, to: u64) {
        self.links[&(from, to)].partition();
    }

    /// Holds what `from` sends `to` (one direction) until [`Ensemble::release`]: it arrives
    /// late, not never.
    pub fn hold(&self, from: u64, to: u64) {
        self.links[&(from, to)].hold();
    }

    pub fn release(&self, from: u64, to: u64) {
        self.links[&(from, to)].release();
    }

    /// Lets every link carry traffic again (new connections; the partitioned ones stay
    /// dead, and members reconnect on their own).
    pub fn heal(&self) {
        for proxy in self.links.values() {
            proxy.cut();
            proxy.unblock();
        }
    }
}
