//! A histogram of fixed buckets kept in atomics, for figures observed on the hot path.
//!
//! prometheus-client's own `Histogram` keeps its buckets behind a mutex, taken on every
//! observation; at tens of thousands of requests a second on every worker thread that lock
//! would be shared by all connections. Here an observation is two relaxed atomic additions
//! (its bucket and the sum) after a search of a dozen or two bounds. The count is the sum of
//! the buckets, read at scrape time; a scrape that races observations may see the sum and
//! the buckets a few observations apart, which Prometheus tolerates.
//!
//! Values are integers in the unit the caller observes (nanoseconds, milliseconds, or a
//! number of entries); [`Histogram::snapshot`] scales them for exposition.

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds for request and fsync latencies, in nanoseconds: 50 µs to 10 s, roughly
/// 1-2.5-5 per decade. The last bound is the `+Inf` bucket.
pub(crate) const LATENCY_NS: [u64; 19] = {
    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;
    [
        50 * US,
        100 * US,
        250 * US,
        500 * US,
        MS,
        2_500 * US,
        5 * MS,
        10 * MS,
        25 * MS,
        50 * MS,
        100 * MS,
        250 * MS,
        500 * MS,
        S,
        2_500 * MS,
        5 * S,
        10 * S,
        // 10 s already means trouble; one more bound tells a slow request from a stuck one.
        30 * S,
        u64::MAX,
    ]
};

/// Nanoseconds per second, to expose [`LATENCY_NS`] histograms in seconds.
pub(crate) const NANOS: f64 = 1e9;

/// A histogram over [`LATENCY_NS`], observed in nanoseconds.
pub(crate) type Latency = Histogram<{ LATENCY_NS.len() }>;

/// A histogram over `N` buckets; `bounds[N - 1]` must be `u64::MAX` (the `+Inf` bucket).
#[derive(Debug)]
pub struct Histogram<const N: usize> {
    bounds: &'static [u64; N],
    /// Observations per bucket, not cumulative.
    buckets: [AtomicU64; N],
    sum: AtomicU64,
}

impl<const N: usize> Histogram<N> {
    pub const fn new(bounds: &'static [u64; N]) -> Self {
        Histogram { bounds, buckets: [const { AtomicU64::new(0) }; N], sum: AtomicU64::new(0) }
    }

    pub fn observe(&self, value: u64) {
        // The first bound at or above the value: Prometheus buckets are `le`.
        let at = self.bounds.partition_point(|bound| *bound < value).min(N - 1);
        self.buckets[at].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    /// The sum of the observed values, in the observed unit.
    pub fn sum(&self) -> u64 {
        self.sum.load(Ordering::Relaxed)
    }

    /// The figures as of now, bounds and sum divided by `per_unit` (e.g. [`NANOS`] to
    /// expose nanoseconds as seconds).
    pub fn snapshot(&self, per_unit: f64) -> Snapshot {
        let buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .zip(&self.buckets)
            .map(|(bound, n)| {
                let bound = if *bound == u64::MAX { f64::INFINITY } else { *bound as f64 / per_unit };
                (bound, n.load(Ordering::Relaxed))
            })
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        Snapshot { sum: self.sum() as f64 / per_unit, count, buckets }
    }
}

/// One histogram's figures at scrape time, ready to encode.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub sum: f64,
    pub count: u64,
    /// (upper bound, observations in this bucket alone); the encoder accumulates them.
    pub(crate) buckets: Vec<(f64, u64)>,
}

impl EncodeMetric for Snapshot {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_histogram::<NoLabelSet>(self.sum, self.count, &self.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// Labelled histograms of one name, for a registry built for one scrape.
#[derive(Debug)]
pub(crate) struct Series<S> {
    pub series: Vec<(S, Snapshot)>,
}

impl<S: EncodeLabelSet + std::fmt::Debug> EncodeMetric for Series<S> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, snapshot) in &self.series {
            snapshot.encode(encoder.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BOUNDS: [u64; 3] = [10, 100, u64::MAX];

    #[test]
    fn a_value_lands_in_the_first_bucket_at_or_above_it() {
        let h = Histogram::new(&BOUNDS);
        for v in [0, 10, 11, 100, 101, u64::MAX / 2] {
            h.observe(v);
        }
        let s = h.snapshot(10.0);
        assert_eq!(s.buckets, vec![(1.0, 2), (10.0, 2), (f64::INFINITY, 2)]);
        assert_eq!(s.count, 6);
        assert_eq!(h.count(), 6);
    }

    #[test]
    fn latency_bounds_rise_and_end_in_inf() {
        assert!(LATENCY_NS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(LATENCY_NS[LATENCY_NS.len() - 1], u64::MAX);
        assert_eq!(LATENCY_NS[0], 50_000, "50 µs");
    }
}
