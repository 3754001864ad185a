//! An ensemble of `ward-server` processes whose peer traffic runs through a [`Proxy`] per
//! directed link (member `a` reaches member `b` only through link `(a, b)`), so a test can
//! cut any member off, or any one direction between two members, without touching the
//! processes: partitions, one-way partitions and bridges. Members are real processes with
//! both listeners, killed, paused and restarted through [`ServerProcess`], and replaced by
//! newcomers ([`Ensemble::try_rejoin`]) after a membership change removed them.

use crate::error::HarnessError;
use crate::proxy::Proxy;
use crate::rng::{seed, Rng};
use crate::server::ServerProcess;
use crate::wait::DEADLINE;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use ward_client::{Client, MemberRole};

pub struct Ensemble {
    members: BTreeMap<u64, ServerProcess>,
    /// `(from, to)`: the proxy `from` uses to reach `to`'s peer port.
    links: BTreeMap<(u64, u64), Proxy>,
    /// Each member's own peer listener (its peers reach it through the links).
    peer_addrs: BTreeMap<u64, SocketAddr>,
    /// The flags every member was started with beyond the ensemble's own.
    flags: Vec<String>,
}

/// How [`Ensemble::launch`] starts an ensemble.
#[derive(Clone, Debug)]
pub struct EnsembleOptions {
    pub members: u64,
    /// Added to every member's command line.
    pub flags: Vec<String>,
    /// Picks the start order.
    pub seed: u64,
    /// `None`: the test build's `ward-server` ([`crate::locate::server_binary`]).
    pub binary: Option<PathBuf>,
    /// Environment variables for every member (the harness passes none of its own
    /// `WARD_*` variables on).
    pub envs: Vec<(String, String)>,
    /// `Some(dir)`: each member's whole stderr is kept in `dir/member-ID.log`.
    pub log_dir: Option<PathBuf>,
}

impl Ensemble {
    /// `n` members started in a random order (the seed is printed), each serving Ward's
    /// protocol, ZooKeeper's and the admin HTTP listener on ports of their own, with `flags`
    /// added.
    pub async fn start(n: u64, flags: &[&str]) -> Ensemble {
        let seed = seed();
        eprintln!("ensemble of {n}: start order from WARD_TEST_SEED={seed}");
        let flags = flags.iter().map(|f| f.to_string()).collect();
        let options = EnsembleOptions { members: n, flags, seed, binary: None, envs: Vec::new(), log_dir: None };
        Ensemble::launch(&options).await.unwrap_or_else(|why| panic!("ensemble of {n} did not start: {why}"))
    }

    /// Like [`start`](Self::start), `Err` instead of a panic, and silent.
    pub async fn launch(options: &EnsembleOptions) -> Result<Ensemble, HarnessError> {
        // A peer port is chosen free before its member binds it (every member must know all
        // of them up front), so another process can take it meanwhile: start over then.
        let mut attempt = 1;
        loop {
            match Ensemble::try_start(options).await {
                Err(HarnessError::Start(why)) if attempt < 3 && why.contains("Address already in use") => {
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    async fn try_start(options: &EnsembleOptions) -> Result<Ensemble, HarnessError> {
        let n = options.members;
        let mut peer_addrs = BTreeMap::new();
        for id in 1..=n {
            peer_addrs.insert(id, crate::port::stable()?);
        }
        let list = peer_addrs.iter().map(|(id, a)| format!("{id}={a}")).collect::<Vec<_>>().join(",");
        let mut links = BTreeMap::new();
        for from in 1..=n {
            for (&to, &addr) in peer_addrs.iter().filter(|(to, _)| **to != from) {
                links.insert((from, to), Proxy::try_start(addr).await?);
            }
        }
        let mut order: Vec<u64> = (1..=n).collect();
        let mut rng = Rng::new(options.seed);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut members = BTreeMap::new();
        for id in order {
            let mut args = vec!["--id".to_string(), id.to_string(), "--ensemble".into(), list.clone()];
            args.extend(peer_flags(id, &peer_addrs, &links));
            args.extend(options.flags.iter().cloned());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let envs: Vec<(&str, &str)> = options.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let mut builder = ServerProcess::builder().zookeeper().admin().flags(&args).envs(&envs);
            if let Some(binary) = &options.binary {
                builder = builder.binary(binary.clone());
            }
            if let Some(dir) = &options.log_dir {
                builder = builder.log_file(dir.join(format!("member-{id}.log")));
            }
            members.insert(id, builder.launch()?);
        }
        Ok(Ensemble { members, links, peer_addrs, flags: options.flags.clone() })
    }

    pub fn ids(&self) -> Vec<u64> {
        self.members.keys().copied().collect()
    }

    pub fn member(&mut self, id: u64) -> &mut ServerProcess {
        self.members.get_mut(&id).unwrap_or_else(|| panic!("no member {id}"))
    }

    /// Waits (bounded by [`DEADLINE`]) until every member, synced with the leader, has the
    /// node `path`: a write has reached them all.
    pub async fn wait_all_have(&self, path: &str) {
        for id in self.ids() {
            let addr = self.addr(id);
            let has = || crate::member::member_has(&addr, path);
            crate::wait::wait_until(&format!("member {id} has {path}"), DEADLINE, has).await;
        }
    }

    /// The tail of member `id`'s stderr ([`ServerProcess::log_tail`]).
    pub fn log_tail(&self, id: u64) -> String {
        self.members[&id].log_tail()
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
        self.try_leader(among, DEADLINE).await.unwrap_or_else(|e| panic!("timed out waiting until a leader: {e}"))
    }

    /// Like [`leader`](Self::leader), bounded by `limit`, `Err` instead of a panic.
    pub async fn try_leader(&self, among: &[u64], limit: Duration) -> Result<u64, HarnessError> {
        let addrs: Vec<String> = self
            .ids()
            .into_iter()
            .filter(|id| among.is_empty() || among.contains(id))
            .map(|id| self.addr(id))
            .collect();
        let addrs = addrs.join(",");
        let start = Instant::now();
        while start.elapsed() < limit {
            let asked = tokio::time::timeout(limit.saturating_sub(start.elapsed()), ask_leader(&addrs)).await;
            if let Ok(Some(leader)) = asked {
                return Ok(leader);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(HarnessError::NoLeader(limit))
    }

    /// Silently drops every peer message to and from `id` (its clients still reach it).
    pub fn isolate(&self, id: u64) {
        for ((from, to), proxy) in &self.links {
            if *from == id || *to == id {
                proxy.partition();
            }
        }
    }

    /// Cuts `id` off loudly: every peer connection to and from it is closed, and new ones are
    /// closed as soon as they are accepted (to the others, its port serves nothing, as if it
    /// were gone), while its clients still reach it. Until [`Ensemble::heal`].
    pub fn cut_off(&self, id: u64) {
        for ((from, to), proxy) in &self.links {
            if *from == id || *to == id {
                proxy.isolate();
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

    /// Member `id`'s peer listener: where `members add` tells the others to reach it (they
    /// go through their links to it all the same).
    pub fn peer_addr(&self, id: u64) -> SocketAddr {
        self.peer_addrs[&id]
    }

    /// Restarts member `id` as a newcomer: killed, its data directory emptied, started again
    /// on the same ports with `--join` (no group of its own; it waits to be added with
    /// `members add`). For a member that was removed from the ensemble. Blocking.
    pub fn try_rejoin(&mut self, id: u64) -> Result<(), HarnessError> {
        let mut flags = vec!["--id".to_string(), id.to_string(), "--join".into()];
        flags.extend(peer_flags(id, &self.peer_addrs, &self.links));
        flags.extend(self.flags.iter().cloned());
        let member = self.members.get_mut(&id).ok_or_else(|| HarnessError::Start(format!("no member {id}")))?;
        member.try_restart_fresh(flags)
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

/// `--peer-listen` and, in an ensemble of more than one, `--peer-route` through the member's
/// outgoing links.
fn peer_flags(id: u64, peer_addrs: &BTreeMap<u64, SocketAddr>, links: &BTreeMap<(u64, u64), Proxy>) -> Vec<String> {
    let mut flags = vec!["--peer-listen".to_string(), peer_addrs[&id].to_string()];
    let routes: Vec<String> = links
        .iter()
        .filter(|((from, _), _)| *from == id)
        .map(|((_, to), proxy)| format!("{to}={}", proxy.addr_str()))
        .collect();
    if !routes.is_empty() {
        flags.extend(["--peer-route".to_string(), routes.join(",")]);
    }
    flags
}

/// The leader as a member of `addrs` reports it, if one answers.
async fn ask_leader(addrs: &str) -> Option<u64> {
    let client = Client::builder(addrs)
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
