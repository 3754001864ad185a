//! Latency samples and the figures a workload reports.

use std::time::Duration;

/// Latency samples in nanoseconds.
#[derive(Default, Clone)]
pub struct Samples {
    nanos: Vec<u64>,
}

impl Samples {
    pub fn with_capacity(n: usize) -> Self {
        Samples { nanos: Vec::with_capacity(n) }
    }

    pub fn push(&mut self, d: Duration) {
        self.nanos.push(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    pub fn extend(&mut self, other: Samples) {
        self.nanos.extend(other.nanos);
    }

    pub fn len(&self) -> usize {
        self.nanos.len()
    }

    /// The `q` quantile (0..=1) in milliseconds, nearest rank; NaN when empty.
    pub fn quantile_ms(&mut self, q: f64) -> f64 {
        if self.nanos.is_empty() {
            return f64::NAN;
        }
        self.nanos.sort_unstable();
        let rank = ((q * self.nanos.len() as f64).ceil() as usize).clamp(1, self.nanos.len());
        self.nanos[rank - 1] as f64 / 1e6
    }
}

/// Figures of one workload run against one system: (metric, value).
#[derive(Default, Debug, Clone)]
pub struct Figures {
    pub rows: Vec<(String, f64)>,
}

impl Figures {
    pub fn add(&mut self, metric: impl Into<String>, value: f64) {
        self.rows.push((metric.into(), value));
    }

    /// Adds "<what> p50 (ms)" and "<what> p99 (ms)".
    pub fn latency(&mut self, what: &str, samples: &mut Samples) {
        self.add(format!("{what} p50 (ms)"), samples.quantile_ms(0.50));
        self.add(format!("{what} p99 (ms)"), samples.quantile_ms(0.99));
    }

    pub fn rate(&mut self, metric: &str, count: usize, elapsed: Duration) {
        self.add(metric, count as f64 / elapsed.as_secs_f64().max(1e-9));
    }

    /// Lock violations of any kind these figures count (mutual exclusion, FIFO).
    pub fn violations(&self) -> f64 {
        self.rows.iter().filter(|(m, _)| m.ends_with("violations")).map(|(_, v)| v).sum()
    }
}

/// The median of some values (mean of the middle two for an even count); NaN if none.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
