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

/// Adds "<what>, median|min|max (ms)" over `values` (NaN for none).
pub fn spread(f: &mut Figures, what: &str, values: impl Iterator<Item = Duration>) {
    let values: Vec<f64> = values.map(ms).collect();
    f.add(format!("{what}, median (ms)"), median(&values));
    f.add(format!("{what}, min (ms)"), values.iter().copied().reduce(f64::min).unwrap_or(f64::NAN));
    f.add(format!("{what}, max (ms)"), values.iter().copied().reduce(f64::max).unwrap_or(f64::NAN));
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts_ignores_nan() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn spread_adds_median_min_and_max_in_ms() {
        let mut f = Figures::default();
        spread(&mut f, "gap", [30, 10, 20].into_iter().map(Duration::from_millis));
        let value = |m: &str| f.rows.iter().find(|(metric, _)| metric == m).map(|(_, v)| *v);
        assert_eq!(value("gap, median (ms)"), Some(20.0));
        assert_eq!(value("gap, min (ms)"), Some(10.0));
        assert_eq!(value("gap, max (ms)"), Some(30.0));
        let mut none = Figures::default();
        spread(&mut none, "gap", std::iter::empty());
        assert!(none.rows.iter().all(|(_, v)| v.is_nan()));
    }
}
