//! The charts' memory: one [`Sample`] a second for the last [`KEEP`] seconds (15 minutes),
//! made from the differences between two readings of the server's cumulative counters and
//! histograms ([`Reading`]). Pure: the sampler task ([`super::sampler`]) does the reading.

use crate::metrics::Op;
use serde::Serialize;
use std::collections::VecDeque;

/// Samples kept: 15 minutes at one a second.
pub(crate) const KEEP: usize = 15 * 60;

/// The cumulative figures at one instant. Histograms as (upper bound, observations in that
/// bucket alone), bounds in milliseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Reading {
    pub(crate) at_ms: i64,
    /// Requests answered per [`Op`], both listeners together.
    pub requests: Vec<u64>,
    /// Request latencies over every op but the long-polling `lock_wait`.
    pub latency: Vec<(f64, u64)>,
    pub fsync: Vec<(f64, u64)>,
    /// Lock waits of the grants this server delivered.
    pub waits: Vec<(f64, u64)>,
    pub sessions: u64,
    pub znodes: u64,
    pub connections: u64,
}

/// One second (or whatever passed between two readings) of the server's life.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Sample {
    /// When the interval ended (ms since the epoch).
    pub t: i64,
    /// Requests per second by operation; operations with none are left out.
    pub requests: Vec<(&'static str, f64)>,
    pub(crate) latency_p50_ms: Option<f64>,
    pub(crate) latency_p99_ms: Option<f64>,
    pub(crate) fsync_p50_ms: Option<f64>,
    pub(crate) fsync_p99_ms: Option<f64>,
    pub(crate) fsyncs_per_s: f64,
    pub(crate) lock_grants_per_s: f64,
    pub(crate) lock_wait_p50_ms: Option<f64>,
    pub(crate) lock_wait_p99_ms: Option<f64>,
    pub sessions: u64,
    pub znodes: u64,
    pub connections: u64,
}

impl Sample {
    /// The interval from `before` to `after`; `None` if no time passed.
    pub(crate) fn between(before: &Reading, after: &Reading) -> Option<Sample> {
        let seconds = (after.at_ms - before.at_ms) as f64 / 1000.0;
        if seconds <= 0.0 {
            return None;
        }
        let rate = |n: u64| n as f64 / seconds;
        let requests = Op::ALL
            .iter()
            .zip(after.requests.iter().zip(before.requests.iter().chain(std::iter::repeat(&0))))
            .filter(|(_, (a, b))| a > b)
            .map(|(op, (a, b))| (op.name(), rate(a - b)))
            .collect();
        let latency = delta(&before.latency, &after.latency);
        let fsync = delta(&before.fsync, &after.fsync);
        let waits = delta(&before.waits, &after.waits);
        Some(Sample {
            t: after.at_ms,
            requests,
            latency_p50_ms: quantile(&latency, 0.5),
            latency_p99_ms: quantile(&latency, 0.99),
            fsync_p50_ms: quantile(&fsync, 0.5),
            fsync_p99_ms: quantile(&fsync, 0.99),
            fsyncs_per_s: rate(fsync.iter().map(|(_, n)| n).sum()),
            lock_grants_per_s: rate(waits.iter().map(|(_, n)| n).sum()),
            lock_wait_p50_ms: quantile(&waits, 0.5),
            lock_wait_p99_ms: quantile(&waits, 0.99),
            sessions: after.sessions,
            znodes: after.znodes,
            connections: after.connections,
        })
    }
}

/// Per-bucket observations between two readings of one histogram.
fn delta(before: &[(f64, u64)], after: &[(f64, u64)]) -> Vec<(f64, u64)> {
    after
        .iter()
        .enumerate()
        .map(|(i, (bound, n))| (*bound, n.saturating_sub(before.get(i).map_or(0, |(_, m)| *m))))
        .collect()
}

/// The `q` quantile of a histogram, interpolated linearly within its bucket as
/// Prometheus's `histogram_quantile` does; in the top (`+Inf`) bucket, the bound below it.
/// `None` without observations.
pub(crate) fn quantile(buckets: &[(f64, u64)], q: f64) -> Option<f64> {
    let total: u64 = buckets.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let rank = q * total as f64;
    let mut below = 0u64;
    let mut lower = 0.0;
    for (bound, n) in buckets {
        if *n > 0 && (below + n) as f64 >= rank {
            if bound.is_infinite() {
                return Some(lower);
            }
            let within = (rank - below as f64) / *n as f64;
            return Some(lower + (bound - lower) * within.clamp(0.0, 1.0));
        }
        below += n;
        if bound.is_finite() {
            lower = *bound;
        }
    }
    Some(lower)
}

/// The last [`KEEP`] samples, oldest first.
#[derive(Default)]
pub(crate) struct Ring(VecDeque<Sample>);

impl Ring {
    pub(crate) fn push(&mut self, sample: Sample) {
        if self.0.len() == KEEP {
            self.0.pop_front();
        }
        self.0.push_back(sample);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }

    /// The samples that ended after `since_ms`.
    pub(crate) fn since(&self, since_ms: i64) -> Vec<Sample> {
        let start = self.0.partition_point(|s| s.t <= since_ms);
        self.0.range(start..).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_within_their_bucket() {
        let h = [(1.0, 0), (2.0, 10), (4.0, 10), (f64::INFINITY, 0)];
        assert_eq!(quantile(&h, 0.5), Some(2.0));
        assert_eq!(quantile(&h, 0.25), Some(1.5));
        assert_eq!(quantile(&h, 0.75), Some(3.0));
        assert_eq!(quantile(&[(1.0, 0), (f64::INFINITY, 3)], 0.99), Some(1.0));
        assert_eq!(quantile(&[(1.0, 0)], 0.5), None);
    }

    #[test]
    fn a_sample_is_the_rates_and_quantiles_between_two_readings() {
        let mut before = Reading { at_ms: 1_000, requests: vec![0; Op::ALL.len()], ..Reading::default() };
        before.latency = vec![(1.0, 5), (10.0, 0), (f64::INFINITY, 0)];
        let mut after = before.clone();
        after.at_ms = 3_000;
        after.requests[Op::Create as usize] = 10;
        after.latency = vec![(1.0, 5), (10.0, 10), (f64::INFINITY, 0)];
        after.waits = vec![(5.0, 4)];
        after.sessions = 7;
        let s = Sample::between(&before, &after).expect("time passed");
        assert_eq!(s.requests, vec![("create", 5.0)]);
        assert_eq!(s.latency_p50_ms, Some(5.5), "only the interval's observations count");
        assert_eq!((s.lock_grants_per_s, s.fsync_p99_ms, s.sessions), (2.0, None, 7));
        assert_eq!(Sample::between(&after, &after), None);

        let mut ring = Ring::default();
        for t in 0..(KEEP as i64 + 5) {
            ring.push(Sample { t, ..s.clone() });
        }
        assert_eq!(ring.len(), KEEP);
        assert_eq!(
            ring.since(KEEP as i64 + 2).iter().map(|s| s.t).collect::<Vec<_>>(),
            [KEEP as i64 + 3, KEEP as i64 + 4]
        );
    }
}
