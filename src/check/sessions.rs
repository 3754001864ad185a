//! The sessions workload (G5): each worker opens short sessions, each owning one ephemeral
//! node, which the session proves alive by writing to it while an observer (a session of
//! its own) looks for it after `sync`; then the session ends, closed or expired. An owner
//! reaches the servers through proxies of its own, so that the worker can cut it off, as a
//! crashed client would be, and let its session expire.

use super::shared::{connect_with, recover, Shared, OP_LIMIT};
use super::CheckError;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::{Client, CreateMode, Error};
use ward_procs::{Proxy, Rng};

/// The owners' session timeout: the shortest a server grants by default.
pub const OWNER_TIMEOUT: Duration = Duration::from_secs(4);
/// Writes by the owner (and looks by the observer) per session.
const ROUNDS: u64 = 4;
/// How long an expired session's node may take to go: its timeout, and again after each
/// leader change (a new leader gives every session a fresh timeout; faults a few seconds
/// apart can change leaders several times in a row), and a cluster slow to answer after a
/// fault.
pub const GONE_WITHIN: Duration = Duration::from_secs(60);

/// One ephemeral node's life as the run saw it, on the run's clock.
#[derive(Clone, Debug)]
pub struct Ephemeral {
    pub process: u64,
    pub path: String,
    pub session: u64,
    /// When the create was sent, and when it was acknowledged (`None`: outcome unknown).
    pub created: (u64, Option<u64>),
    /// Writes by the owner that succeeded: the node existed within each interval.
    pub alive: Vec<(u64, u64)>,
    /// What the observer saw after `sync`.
    pub looks: Vec<Look>,
    pub end: End,
}

#[derive(Clone, Copy, Debug)]
pub struct Look {
    pub invoked: u64,
    pub completed: u64,
    pub present: bool,
}

/// How the owning session ended.
#[derive(Clone, Copy, Debug)]
pub enum End {
    /// `close()` returned: from its return on the node is gone.
    Closed { invoked: u64, completed: u64 },
    /// Cut off at `cut`; the observer first saw the node gone at `gone` (`None`: not within
    /// [`GONE_WITHIN`]).
    Expired { cut: u64, gone: Option<u64> },
    /// Unknown: the close failed, or the run stopped first.
    Unknown,
}

/// The owners' proxies: one per server.
struct Route {
    proxies: Vec<Proxy>,
}

impl Route {
    async fn start(addrs: &str) -> Result<Route, CheckError> {
        let mut proxies = Vec::new();
        for addr in addrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let failed = |e| CheckError::Io { path: addr.into(), source: e };
            let upstream = tokio::net::lookup_host(addr).await.map_err(failed)?.next();
            let upstream = upstream.ok_or_else(|| failed(std::io::Error::other("no address")))?;
            proxies.push(Proxy::try_start(upstream).await?);
        }
        Ok(Route { proxies })
    }

    fn connect_string(&self) -> String {
        self.proxies.iter().map(Proxy::addr_str).collect::<Vec<_>>().join(",")
    }
}

pub struct Worker {
    pub process: u64,
    addrs: String,
    observer: Client,
    route: Route,
    rng: Rng,
    root: String,
    pub nodes: Vec<Ephemeral>,
    pub sessions_lost: u32,
}

impl Worker {
    pub async fn new(process: u64, addrs: &str, root: &str, seed: u64) -> Result<Worker, CheckError> {
        Ok(Worker {
            process,
            addrs: addrs.to_owned(),
            observer: super::connect(addrs).await?,
            route: Route::start(addrs).await?,
            rng: Rng::new(seed),
            root: root.to_owned(),
            nodes: Vec::new(),
            sessions_lost: 0,
        })
    }

    pub async fn run(mut self, shared: Shared) -> Worker {
        let mut n = 0;
        while !shared.stopped() {
            n += 1;
            if let Some(node) = self.cycle(n, &shared).await {
                self.nodes.push(node);
                shared.completed();
            } else if recover(&mut self.observer, &self.addrs, &shared).await {
                self.sessions_lost += 1;
            }
        }
        let _ = timeout(OP_LIMIT, self.observer.close()).await;
        self
    }

    /// One owner session: open, create, prove alive while looked at, end. `None` if it did
    /// not get as far as a create.
    async fn cycle(&mut self, n: u64, shared: &Shared) -> Option<Ephemeral> {
        let owner = connect_with(&self.route.connect_string(), OWNER_TIMEOUT).await.ok()?;
        let path = format!("{}/p{}-{n}", self.root, self.process);
        let session = owner.session_id().0;
        let invoked = shared.clock.now();
        let created = timeout(OP_LIMIT, owner.create(&path, b"", CreateMode::Ephemeral)).await;
        let created = match created {
            Ok(Ok(_)) => (invoked, Some(shared.clock.now())),
            // Refused before it was logged.
            Ok(Err(Error::Unavailable)) => {
                let _ = timeout(OP_LIMIT, owner.close()).await;
                return None;
            }
            _ => (invoked, None),
        };
        let mut node = Ephemeral {
            process: self.process,
            path,
            session,
            created,
            alive: vec![],
            looks: vec![],
            end: End::Unknown,
        };
        for round in 0..ROUNDS {
            let invoked = shared.clock.now();
            if let Ok(Ok(_)) = timeout(OP_LIMIT, owner.set_data(&node.path, &round.to_be_bytes(), None)).await {
                node.alive.push((invoked, shared.clock.now()));
            }
            self.look(&mut node, shared).await;
        }
        node.end = match self.rng.below(3) {
            0 => self.expire(owner, &mut node, shared).await,
            _ => {
                let invoked = shared.clock.now();
                match timeout(OP_LIMIT, owner.close()).await {
                    Ok(Ok(())) => End::Closed { invoked, completed: shared.clock.now() },
                    _ => End::Unknown,
                }
            }
        };
        self.look(&mut node, shared).await;
        Some(node)
    }

    /// The observer's `sync` and `exists`, if both succeed.
    async fn look(&self, node: &mut Ephemeral, shared: &Shared) -> Option<bool> {
        let invoked = shared.clock.now();
        if !matches!(timeout(OP_LIMIT, self.observer.sync(&node.path)).await, Ok(Ok(()))) {
            return None;
        }
        let Ok(Ok(stat)) = timeout(OP_LIMIT, self.observer.exists(&node.path)).await else { return None };
        let look = Look { invoked, completed: shared.clock.now(), present: stat.is_some() };
        node.looks.push(look);
        Some(look.present)
    }

    /// Cuts the owner off and looks until its node is gone (or [`GONE_WITHIN`] passed).
    async fn expire(&self, owner: Client, node: &mut Ephemeral, shared: &Shared) -> End {
        for proxy in &self.route.proxies {
            proxy.partition();
        }
        let cut = shared.clock.now();
        let start = Instant::now();
        let mut gone = None;
        while start.elapsed() < GONE_WITHIN && !shared.stopped() {
            if self.look(node, shared).await == Some(false) {
                gone = node.looks.last().map(|l| l.completed);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for proxy in &self.route.proxies {
            proxy.cut();
            proxy.unblock();
        }
        // Its session is over (or the run stops): nothing to wait for.
        let _ = timeout(Duration::from_secs(1), owner.close()).await;
        match (gone, shared.stopped()) {
            (None, true) => End::Unknown,
            _ => End::Expired { cut, gone },
        }
    }
}

/// Figures of a run.
pub fn summary(nodes: &[Ephemeral], sessions_lost: u32) -> String {
    let closed = nodes.iter().filter(|n| matches!(n.end, End::Closed { .. })).count();
    let expiries: Vec<u64> = nodes
        .iter()
        .filter_map(|n| match n.end {
            End::Expired { cut, gone: Some(gone) } => Some(gone.saturating_sub(cut)),
            _ => None,
        })
        .collect();
    let looks: usize = nodes.iter().map(|n| n.looks.len()).sum();
    let slowest = expiries.iter().max().map_or_else(|| "-".to_owned(), |ns| format!("{:.1} s", *ns as f64 / 1e9));
    format!(
        "{} sessions with an ephemeral: {closed} closed, {} expired (slowest gone after {slowest}), \
         {looks} synced looks, {sessions_lost} observer sessions replaced",
        nodes.len(),
        expiries.len(),
    )
}
