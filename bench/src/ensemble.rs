//! A local ensemble of real `ward-server` processes for `--ensemble N`: free ports, data
//! directories under the run's temporary directory, kill -9, SIGTERM and restart of one
//! member, and the leader as the members report it. Peer links are direct, or each through
//! a proxy ([`Links::Proxied`]) for the partition measurement.
//!
//! Every process it started is killed when it is dropped: at the end, and also when the run
//! fails or panics (unwinding drops it) or is stopped by SIGINT/SIGTERM (main turns those
//! into dropping the run). Only a SIGKILL of the benchmark itself leaves members behind.

use crate::peer_links::PeerLinks;
use crate::sys::{Error, Result};
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};
use ward_client::{Client, MemberRole};

/// How long one member may take to print its banner (a cold binary on a loaded machine).
const STARTUP: Duration = Duration::from_secs(30);
/// How long the ensemble may take to agree on a leader, or a restarted member to catch up.
const SETTLE: Duration = Duration::from_secs(60);
/// Tries at binding a killed member's ports again: its old sockets may linger a moment.
const BIND_TRIES: u32 = 20;
/// A member counts as caught up when it is at most this many log entries behind the leader.
const CAUGHT_UP: u64 = 8;
/// How long a member stopped by SIGTERM may take to hand its leadership over and exit
/// before it is killed.
const STOP: Duration = Duration::from_secs(30);
const BANNER: &str = "ward-server listening on ";
const PEER_BANNER: &str = "ward-server peer listening on ";
/// The last of the listening lines, which the server writes all at once.
const ADMIN_BANNER: &str = "ward-server admin listening on ";
/// What a member logs once it leads and is ready (earlier terms applied, expiry on). Only
/// for a figure: if the wording changes, that figure is missing, nothing else.
const READY_LINE: &str = "leading: sessions get a fresh timeout";

struct Member {
    /// Where clients connect; fixed, so that a restarted member is found at the same place.
    addr: SocketAddr,
    peer: SocketAddr,
    /// The admin listener (`/metrics`), fixed like `addr`.
    admin: SocketAddr,
    dir: PathBuf,
    /// `None` while killed.
    child: Option<Child>,
}

pub struct LocalEnsemble {
    bin: PathBuf,
    /// `1=PEER,2=PEER,...`, the same `--ensemble` for every member.
    list: String,
    members: BTreeMap<u64, Member>,
    /// `Some` for [`Links::Proxied`].
    links: Option<PeerLinks>,
    /// Flags every member gets beyond the ensemble's own (`--lease-read`).
    extra: Vec<String>,
}

/// How the members reach each other's peer ports.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Links {
    Direct,
    /// Through a proxy per directed link, so that a member can be partitioned.
    Proxied,
}

impl Drop for LocalEnsemble {
    fn drop(&mut self) {
        for m in self.members.values_mut() {
            if let Some(mut child) = m.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// Free loopback addresses, all distinct: every probe listener is held until all are taken.
/// Another process could take one before the member binds it; the member then fails to start
/// and says so.
fn free_addrs(n: usize) -> Result<Vec<SocketAddr>> {
    let probes = (0..n).map(|_| TcpListener::bind("127.0.0.1:0")).collect::<std::io::Result<Vec<_>>>()?;
    Ok(probes.iter().map(TcpListener::local_addr).collect::<std::io::Result<Vec<_>>>()?)
}

impl LocalEnsemble {
    /// Starts `n` members of a new ensemble running `bin`, with data and logs under `root`,
    /// and waits until they have elected a leader and every member serves clients.
    pub async fn start(n: u64, bin: &Path, root: &Path, links: Links) -> Result<LocalEnsemble> {
        LocalEnsemble::start_with(n, bin, root, links, &[]).await
    }

    /// [`LocalEnsemble::start`], every member also given `extra` flags.
    pub async fn start_with(n: u64, bin: &Path, root: &Path, links: Links, extra: &[&str]) -> Result<LocalEnsemble> {
        std::fs::create_dir_all(root)?;
        let count = usize::try_from(n).map_err(|_| Error("too many members".into()))?;
        let addrs = free_addrs(3 * count)?;
        let mut members = BTreeMap::new();
        for (id, ports) in (1..=n).zip(addrs.chunks(3)) {
            let dir = root.join(id.to_string());
            members.insert(id, Member { addr: ports[0], peer: ports[1], admin: ports[2], dir, child: None });
        }
        let list = members.iter().map(|(id, m)| format!("{id}={}", m.peer)).collect::<Vec<_>>().join(",");
        let links = match links {
            Links::Direct => None,
            Links::Proxied => Some(PeerLinks::start(&members.iter().map(|(&id, m)| (id, m.peer)).collect()).await?),
        };
        let extra = extra.iter().map(|f| f.to_string()).collect();
        let mut ensemble = LocalEnsemble { bin: bin.to_path_buf(), list, members, links, extra };
        // Members wait for each other to form the group, so start them all before waiting
        // for any banner.
        let mut starting = Vec::new();
        for id in ensemble.ids() {
            starting.push((id, ensemble.spawn(id)?));
        }
        for (id, lines) in starting {
            tokio::task::block_in_place(|| ensemble.await_banner(id, &lines))?;
        }
        ensemble.wait_healthy().await?;
        Ok(ensemble)
    }

    pub fn ids(&self) -> Vec<u64> {
        self.members.keys().copied().collect()
    }

    /// The connect string of these members (in id order; the client starts at a random one).
    pub fn connect_string(&self, ids: &[u64]) -> String {
        ids.iter().filter_map(|id| self.members.get(id)).map(|m| m.addr.to_string()).collect::<Vec<_>>().join(",")
    }

    /// Every member's client address.
    pub fn all(&self) -> String {
        self.connect_string(&self.ids())
    }

    /// Member `id`'s admin listener (`/metrics`).
    pub fn admin(&self, id: u64) -> Option<SocketAddr> {
        self.members.get(&id).map(|m| m.admin)
    }

    pub fn pid(&self, id: u64) -> Option<u32> {
        self.members.get(&id)?.child.as_ref().map(Child::id)
    }

    fn member(&mut self, id: u64) -> Result<&mut Member> {
        self.members.get_mut(&id).ok_or_else(|| Error(format!("no member {id}")))
    }

    /// Starts member `id`'s process; its stdout lines arrive on the returned channel.
    fn spawn(&mut self, id: u64) -> Result<mpsc::Receiver<String>> {
        let (bin, list, extra) = (self.bin.clone(), self.list.clone(), self.extra.clone());
        let route = self.links.as_ref().and_then(|l| l.routes(id));
        let m = self.member(id)?;
        // Appended to, so that a restarted member's log follows its earlier incarnation's.
        let log = OpenOptions::new().create(true).append(true).open(m.dir.with_extension("log"))?;
        let mut child = Command::new(&bin)
            .args(["--id", &id.to_string(), "--ensemble", &list])
            .args(["--max-connections-per-ip", "0", "--max-connections", "0"])
            .args(["--peer-listen", &m.peer.to_string(), "--listen", &m.addr.to_string(), "--zk-listen", "off"])
            .args(["--admin-listen", &m.admin.to_string()])
            .args(route.iter().flat_map(|r| ["--peer-route", r]))
            .args(&extra)
            .arg("--data-dir")
            .arg(&m.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| Error(format!("starting member {id} ({}): {e}", bin.display())))?;
        let stdout = child.stdout.take().ok_or_else(|| Error("member spawned without stdout".into()))?;
        m.child = Some(child);
        let (tx, rx) = mpsc::channel();
        // Reads to the end, so that the member never blocks on a full pipe; the channel
        // closes when the process exits.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(std::io::Result::ok) {
                let _ = tx.send(line);
            }
        });
        Ok(rx)
    }

    /// Waits (blocking) until member `id` has printed its admin banner, the last of its
    /// listening lines.
    fn await_banner(&mut self, id: u64, lines: &mpsc::Receiver<String>) -> Result<()> {
        let deadline = Instant::now() + STARTUP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if line.starts_with(ADMIN_BANNER) => return Ok(()),
                Ok(line) if line.starts_with(BANNER) || line.starts_with(PEER_BANNER) => {}
                Ok(other) => eprintln!("ward-bench: member {id} says: {other}"),
                Err(_) => {
                    let m = self.member(id)?;
                    if let Some(mut child) = m.child.take() {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                    let log = m.dir.with_extension("log");
                    return Err(Error(format!(
                        "member {id} did not start within {STARTUP:?}: {}",
                        tail(&log, 5).join(" | ")
                    )));
                }
            }
        }
    }

    /// kill -9 of member `id`, and reaped: once this returns the process is gone.
    pub fn kill9(&mut self, id: u64) -> Result<()> {
        let m = self.member(id)?;
        let mut child = m.child.take().ok_or_else(|| Error(format!("member {id} is not running")))?;
        child.kill()?;
        child.wait()?;
        Ok(())
    }

    /// SIGTERM to member `id`, then waits until it has exited (a leader hands its leadership
    /// over first); kill -9 if it has not within [`STOP`]. Returns when it was reaped.
    pub async fn terminate(&mut self, id: u64) -> Result<Instant> {
        let m = self.member(id)?;
        let mut child = m.child.take().ok_or_else(|| Error(format!("member {id} is not running")))?;
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status()?;
        if !status.success() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error(format!("kill -TERM of member {id} failed")));
        }
        let deadline = Instant::now() + STOP;
        loop {
            if child.try_wait()?.is_some() {
                return Ok(Instant::now());
            }
            if Instant::now() > deadline {
                child.kill()?;
                child.wait()?;
                return Err(Error(format!("member {id} did not stop within {STOP:?} of SIGTERM")));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Cuts member `id` off from the others' peer links, silently (see [`PeerLinks`]).
    pub fn partition(&self, id: u64) -> Result<()> {
        self.links
            .as_ref()
            .ok_or_else(|| Error("a partition needs an ensemble with Links::Proxied".into()))?
            .partition(id);
        Ok(())
    }

    /// Ends [`partition`](Self::partition).
    pub fn heal(&self, id: u64) -> Result<()> {
        self.links.as_ref().ok_or_else(|| Error("a heal needs an ensemble with Links::Proxied".into()))?.heal(id);
        Ok(())
    }

    /// Starts killed or stopped member `id` again on its ports and data directory, retrying
    /// while its ports are still held by the kernel after the kill.
    pub fn restart(&mut self, id: u64) -> Result<()> {
        tokio::task::block_in_place(|| {
            let mut tries = 0;
            loop {
                let lines = self.spawn(id)?;
                match self.await_banner(id, &lines) {
                    Ok(()) => return Ok(()),
                    Err(e) if tries + 1 < BIND_TRIES && e.0.contains("in use") => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(250));
                    }
                    Err(e) => return Err(e),
                }
            }
        })
    }

    /// The leader, asked through members in `among`, once they agree on one that answers.
    pub async fn leader(&self, among: &[u64]) -> Result<u64> {
        let addrs = self.connect_string(among);
        let deadline = Instant::now() + SETTLE;
        loop {
            if let Ok(client) = quick_client(&addrs).await {
                let members = client.members().await;
                let _ = client.close().await;
                if let Some(m) = members.ok().and_then(|ms| ms.into_iter().find(|m| m.role == MemberRole::Leader)) {
                    return Ok(m.id);
                }
            }
            if Instant::now() > deadline {
                return Err(Error(format!("no leader among members {among:?} within {SETTLE:?}")));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// How many log entries member `id` is behind the leader, as the leader reports it,
    /// asked through members in `among`; `None` if nobody answers or it is not reported.
    pub async fn lag(&self, id: u64, among: &[u64]) -> Option<u64> {
        let client = quick_client(&self.connect_string(among)).await.ok()?;
        let members = client.members().await;
        let _ = client.close().await;
        members.ok()?.into_iter().find(|m| m.id == id)?.lag
    }

    /// Waits until every member runs, serves a session of its own (it is in contact with a
    /// leader, and `sync` through it passes), and the leader reports it at most
    /// [`CAUGHT_UP`] entries behind.
    pub async fn wait_healthy(&self) -> Result<()> {
        let deadline = Instant::now() + SETTLE;
        let mut pending: Vec<u64> = self.ids();
        loop {
            let mut still = Vec::new();
            let members = match quick_client(&self.all()).await {
                Ok(c) => {
                    let list = c.members().await.unwrap_or_default();
                    let _ = c.close().await;
                    list
                }
                Err(_) => Vec::new(),
            };
            for &id in &pending {
                let reported = members.iter().find(|m| m.id == id);
                let caught_up = reported.is_some_and(|m| {
                    m.role != MemberRole::Learner
                        && (m.role == MemberRole::Leader || m.lag.is_some_and(|l| l <= CAUGHT_UP))
                });
                if !caught_up || self.pid(id).is_none() || !serves(&self.connect_string(&[id])).await {
                    still.push(id);
                }
            }
            if still.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error(format!("members {still:?} not serving and caught up within {SETTLE:?}")));
            }
            pending = still;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// When member `id` last logged that it leads and is ready to serve, if after `after`:
    /// read from its log, so it is the member's own clock and not delayed by any client.
    pub fn ready_since(&self, id: u64, after: SystemTime) -> Option<SystemTime> {
        let log = std::fs::read_to_string(self.members.get(&id)?.dir.with_extension("log")).ok()?;
        log.lines()
            .filter(|line| line.contains(READY_LINE))
            .filter_map(|line| log_time(&strip_ansi(line)))
            .rfind(|t| *t > after)
    }

    /// The last `n` lines of every member's log, for a failed run's error report.
    pub fn log_tails(&self, n: usize) -> String {
        let mut out = String::new();
        for (id, m) in &self.members {
            out.push_str(&format!("--- member {id} ({}):\n", m.dir.with_extension("log").display()));
            for line in tail(&m.dir.with_extension("log"), n) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }
}

/// A short-lived client for asking the ensemble something; fails fast while nobody serves.
async fn quick_client(addrs: &str) -> Result<Client> {
    Ok(Client::builder(addrs)
        .connect_timeout(Duration::from_secs(2))
        .session_timeout(crate::sys::SESSION_TIMEOUT)
        .connect()
        .await?)
}

/// True if a session through `addr` alone opens and `sync` through it passes.
async fn serves(addr: &str) -> bool {
    let Ok(client) = quick_client(addr).await else { return false };
    let ok = tokio::time::timeout(Duration::from_secs(5), client.sync("/")).await.is_ok_and(|r| r.is_ok());
    let _ = client.close().await;
    ok
}

/// The last `n` lines of a log file (none if it cannot be read).
fn tail(path: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|l| l.to_string()).collect()
}

/// `line` without terminal colour sequences (ESC `[` ... `m`), which the server's log has.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The time stamp that starts a log line, `2026-11-24T05:26:40.174040Z` (UTC).
fn log_time(line: &str) -> Option<SystemTime> {
    let stamp = line.split_whitespace().next()?.strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut ymd = date.splitn(3, '-').map(str::parse::<i64>);
    let (y, m, d) = (ymd.next()?.ok()?, ymd.next()?.ok()?, ymd.next()?.ok()?);
    let mut hms = time.splitn(3, ':');
    let (h, mi) = (hms.next()?.parse::<i64>().ok()?, hms.next()?.parse::<i64>().ok()?);
    let s: f64 = hms.next()?.parse().ok()?;
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3_600 + mi * 60).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_secs_f64(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_time_reads_the_servers_stamps() {
        let line = "\u{1b}[2m2026-11-24T05:26:40.174040Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m leading: sessions get a fresh timeout";
        let t = log_time(&strip_ansi(line)).expect("a time");
        let secs = t.duration_since(SystemTime::UNIX_EPOCH).expect("after 1970").as_secs_f64();
        // date -u -d 2026-11-24T05:26:40.174040Z +%s.%N
        assert!((secs - 1_795_498_000.174_04).abs() < 1e-3, "{secs}");
    }
}
