//! Connection limits, applied at accept (docs/security.md "Limits"): at most
//! `max_connections` client connections open at once, and at most `max_connections_per_ip`
//! from one address (ZooKeeper's `maxClientCnxns`). Both client listeners count together:
//! a host is one host whichever protocol it speaks, and both spend the same descriptors and
//! memory. A connection past a limit is closed at once, before anything is read from it.
//!
//! Refusals are logged at most once per [`LOG_EVERY`], each line saying how many were not
//! logged since the one before, so a flood of connections does not flood the log.

use crate::metrics::Metrics;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The shortest time between two logged refusals.
pub(crate) const LOG_EVERY: Duration = Duration::from_secs(1);

/// The connections open now, against the limits (0: none).
pub struct ConnLimits {
    metrics: Arc<Metrics>,
    max_total: usize,
    max_per_ip: usize,
    // std mutexes: held for a counter update, never across an await.
    counts: Mutex<Counts>,
    log: Mutex<RefusalLog>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    /// Only addresses with a connection open (kept only when there is a per-address limit).
    per_ip: HashMap<IpAddr, usize>,
}

#[derive(Default)]
struct RefusalLog {
    last: Option<Instant>,
    unlogged: u64,
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("too many connections from this address (limit {0})")]
    PerAddress(usize),
    #[error("too many connections in total (limit {0})")]
    Total(usize),
}

/// An admitted connection, counted until dropped.
pub(crate) struct Admitted {
    limits: Arc<ConnLimits>,
    ip: IpAddr,
}

impl ConnLimits {
    pub fn new(max_total: usize, max_per_ip: usize, metrics: Arc<Metrics>) -> Self {
        ConnLimits { metrics, max_total, max_per_ip, counts: Mutex::default(), log: Mutex::default() }
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        // Every critical section is one counter update: nothing is left half-done.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a connection from `ip`, unless that would pass a limit.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refusal> {
        // An IPv4 client of a dual-stack listener shows up as ::ffff:a.b.c.d.
        let ip = ip.to_canonical();
        let mut counts = self.counts();
        if self.max_total != 0 && counts.total >= self.max_total {
            return Err(Refusal::Total(self.max_total));
        }
        if self.max_per_ip != 0 {
            let from = counts.per_ip.entry(ip).or_default();
            if *from >= self.max_per_ip {
                return Err(Refusal::PerAddress(self.max_per_ip));
            }
            *from += 1;
        }
        counts.total += 1;
        Ok(Admitted { limits: self.clone(), ip })
    }

    /// Counts a refused connection, and logs it unless another was logged less than
    /// [`LOG_EVERY`] ago.
    pub fn refused(&self, peer: SocketAddr, protocol: &'static str, why: Refusal) {
        self.metrics.count_refused_connection();
        if let Some(unlogged) = self.to_log(Instant::now()) {
            tracing::warn!(%peer, protocol, reason = %why, unlogged, "refusing connection");
        }
    }

    /// Whether a refusal at `now` is logged, and if so how many before it were not.
    fn to_log(&self, now: Instant) -> Option<u64> {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if log.last.is_some_and(|last| now.saturating_duration_since(last) < LOG_EVERY) {
            log.unlogged += 1;
            return None;
        }
        log.last = Some(now);
        Some(std::mem::take(&mut log.unlogged))
    }

    /// Connections open now, and those from `ip`.
    pub fn open(&self, ip: IpAddr) -> (usize, usize) {
        let counts = self.counts();
        (counts.total, counts.per_ip.get(&ip.to_canonical()).copied().unwrap_or(0))
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self.limits.counts();
        counts.total = counts.total.saturating_sub(1);
        if let Some(from) = counts.per_ip.get_mut(&self.ip) {
            *from = from.saturating_sub(1);
            if *from == 0 {
                // The map holds only addresses with connections open.
                counts.per_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn limits_per_address_and_in_total_and_a_closed_connection_frees_its_place() {
        let limits = Arc::new(ConnLimits::new(3, 2, Arc::default()));
        let a1 = limits.admit(ip(1)).expect("first from .1");
        let a2 = limits.admit(ip(1)).expect("second from .1");
        assert_eq!(limits.admit(ip(1)).err(), Some(Refusal::PerAddress(2)));
        // The same address as IPv4-mapped IPv6 is the same client.
        let mapped = IpAddr::from(std::net::Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(limits.admit(mapped).err(), Some(Refusal::PerAddress(2)));
        let b1 = limits.admit(ip(2)).expect("first from .2");
        assert_eq!(limits.admit(ip(3)).err(), Some(Refusal::Total(3)));
        drop(a1);
        assert_eq!(limits.open(ip(1)), (2, 1));
        let a3 = limits.admit(ip(1)).expect("room again from .1");
        drop((a2, a3, b1));
        assert_eq!(limits.open(ip(1)), (0, 0));
        assert!(limits.counts().per_ip.is_empty(), "no entry is kept for an address with nothing open");
    }

    #[test]
    fn zero_means_no_limit() {
        let limits = Arc::new(ConnLimits::new(0, 0, Arc::default()));
        let open: Vec<Admitted> = (0..1000).map(|_| limits.admit(ip(1)).expect("no limit")).collect();
        assert_eq!(limits.open(ip(1)), (1000, 0), "no per-address counts without a per-address limit");
        drop(open);
        assert_eq!(limits.open(ip(1)), (0, 0));
    }

    #[test]
    fn a_burst_of_refusals_is_logged_once_a_second_with_the_count_left_out() {
        let limits = ConnLimits::new(1, 1, Arc::default());
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert_eq!(limits.to_log(at(0)), Some(0));
        for ms in 1..100 {
            assert_eq!(limits.to_log(at(ms * 10)), None, "at {ms}0 ms");
        }
        assert_eq!(limits.to_log(at(1000)), Some(99), "a second later: logged, with the 99 left out");
        assert_eq!(limits.to_log(at(1500)), None);
        assert_eq!(limits.to_log(at(5000)), Some(1));
    }

    #[test]
    fn refusals_are_counted() {
        let metrics = Arc::new(Metrics::default());
        ConnLimits::new(1, 1, metrics.clone()).refused(SocketAddr::from(([10, 0, 0, 1], 1)), "Ward", Refusal::Total(1));
        assert_eq!(metrics.refused_connections(), 1);
    }
}
