//! The three-way race: Ward's ensemble, ZooKeeper's and etcd's side by side on the headline
//! figures, the ratios against the targets, and a chart. Each system's figures are recorded in
//! its own [`Results`] under the same "<N> members: <workload>" keys, medians over the runs.

use crate::report::{fmt_ratio, fmt_value, Results};
use crate::stats::median;
use std::fmt::Write as _;

/// One headline figure of the race.
struct Line {
    workload: &'static str,
    metric: &'static str,
    label: &'static str,
    higher_is_better: bool,
    /// Ward/rival to reach (≥ if higher is better, ≤ otherwise), against ZooKeeper and etcd.
    target_zk: Option<f64>,
    target_etcd: Option<f64>,
}

const fn line(
    workload: &'static str,
    metric: &'static str,
    label: &'static str,
    higher_is_better: bool,
    target_zk: Option<f64>,
    target_etcd: Option<f64>,
) -> Line {
    Line { workload, metric, label, higher_is_better, target_zk, target_etcd }
}

const LINES: &[Line] = &[
    line("a. sequential create+delete", "ops/s", "writes, 1 outstanding (ops/s)", true, None, None),
    line(
        "a. sequential create+delete",
        "create p50 (ms)",
        "write p50, 1 outstanding (ms)",
        false,
        Some(0.5),
        Some(0.5),
    ),
    line(
        "b. create, delete (64 outstanding)",
        "create/s",
        "writes, 64 outstanding (creates/s)",
        true,
        Some(3.0),
        Some(3.0),
    ),
    line("durable writes (64 writers)", "acked writes/s", "writes, 64 writers (sets/s)", true, Some(2.0), Some(2.0)),
    line("c. get_data (64 outstanding)", "get_data/s", "reads, 64 outstanding (gets/s)", true, None, None),
    line("d. uncontended lock", "cycles/s", "uncontended lock (cycles/s)", true, None, None),
    line("e. contended lock N=10", "acquisitions/s", "contended lock N=10 (acquisitions/s)", true, None, None),
    line(
        "e. contended lock N=10",
        "handoff p50 (ms)",
        "contended lock N=10, handoff p50 (ms)",
        false,
        Some(0.5),
        Some(0.5),
    ),
    line(
        "leader kill -9",
        "kill → first write acked via a survivor, median (ms)",
        "failover: kill -9 leader → first write (ms)",
        false,
        Some(0.5),
        None,
    ),
    line(
        crate::replicated::RESTART,
        "longest gap between acked writes around the stop, median (ms)",
        "planned leader restart: longest write gap (ms)",
        false,
        None,
        None,
    ),
];

/// The three systems' results; a rival not run is `None`.
pub struct Race<'a> {
    pub label: String,
    pub ward: &'a Results,
    pub zk: Option<&'a Results>,
    pub etcd: Option<&'a Results>,
}

/// Ward's figure over the rival's, or NaN.
fn ratio(w: f64, r: f64) -> f64 {
    if r == 0.0 || r.is_nan() || w.is_nan() {
        f64::NAN
    } else {
        w / r
    }
}

/// "met" / "not met" for a ratio against a target.
fn verdict(ratio: f64, target: Option<f64>, higher_is_better: bool) -> String {
    match target {
        None => String::new(),
        Some(_) if ratio.is_nan() => "no figure".into(),
        Some(t) if (higher_is_better && ratio >= t) || (!higher_is_better && ratio <= t) => {
            format!("{} {t}×: met", if higher_is_better { "≥" } else { "≤" })
        }
        Some(t) => format!("{} {t}×: NOT met", if higher_is_better { "≥" } else { "≤" }),
    }
}

impl Race<'_> {
    /// Median of `system`'s figure for a line; the rivals' are in their Results' second column.
    fn value(&self, l: &Line, which: usize) -> f64 {
        let key = format!("{}: {}", self.label, l.workload);
        let row = |r: &Results, own: bool| {
            r.get(&key, l.metric).map_or(f64::NAN, |row| median(if own { &row.ward } else { &row.zk }))
        };
        match which {
            0 => row(self.ward, true),
            1 => self.zk.map_or(f64::NAN, |r| row(r, false)),
            _ => self.etcd.map_or(f64::NAN, |r| row(r, false)),
        }
    }

    /// The Markdown table: figures, ratios, verdicts.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "| figure | Ward-3 | ZooKeeper-3 | etcd-3 | Ward/ZK | target vs ZK | Ward/etcd | target vs etcd |\n\
             |---|---:|---:|---:|---:|---|---:|---|\n",
        );
        for l in LINES {
            let (w, z, e) = (self.value(l, 0), self.value(l, 1), self.value(l, 2));
            let (rz, re) = (ratio(w, z), ratio(w, e));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                l.label,
                fmt_value(w),
                fmt_value(z),
                fmt_value(e),
                fmt_ratio(rz),
                verdict(rz, l.target_zk, l.higher_is_better),
                fmt_ratio(re),
                verdict(re, l.target_etcd, l.higher_is_better)
            );
        }
        out
    }

    /// A bar chart of Ward's advantage (rival/Ward for times, Ward/rival for rates: above 1×
    /// Ward is ahead) against each rival, on a log scale from 0.1× to 100×.
    pub fn svg(&self, title: &str) -> String {
        let (left, top, row_h, width) = (330.0, 60.0, 44.0, 420.0);
        let height = top + row_h * LINES.len() as f64 + 50.0;
        let x = |r: f64| left + width * ((r.clamp(0.1, 100.0).log10() + 1.0) / 3.0);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">",
            left + width + 110.0
        );
        let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
        let _ = writeln!(s, "<text x=\"10\" y=\"22\" font-size=\"15\">{}</text>", escape(title));
        let _ = writeln!(
            s,
            "<text x=\"10\" y=\"42\">Ward's advantage, log scale (&gt;1× = Ward ahead). <tspan fill=\"#d9822b\">■ vs ZooKeeper-3</tspan> <tspan fill=\"#3b7dd8\">■ vs etcd-3</tspan></text>"
        );
        for (tick, name) in [(0.1, "0.1×"), (1.0, "1×"), (2.0, "2×"), (10.0, "10×"), (100.0, "100×")] {
            let tx = x(tick);
            let dash = if tick == 2.0 { " stroke-dasharray=\"4 3\"" } else { "" };
            let _ = writeln!(
                s,
                "<line x1=\"{tx:.1}\" y1=\"{top}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#999\"{dash}/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{name}</text>",
                height - 40.0,
                height - 25.0
            );
        }
        for (i, l) in LINES.iter().enumerate() {
            let y = top + row_h * i as f64;
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 8.0,
                y + 24.0,
                escape(l.label)
            );
            let w = self.value(l, 0);
            for (k, colour) in [(1, "#d9822b"), (2, "#3b7dd8")] {
                let r = self.value(l, k);
                // A time of 0 for Ward (it rounds to 0 ms) is drawn at the scale's end.
                let nil = !l.higher_is_better && w == 0.0 && r > 0.0;
                let adv = if nil {
                    100.0
                } else if l.higher_is_better {
                    ratio(w, r)
                } else {
                    ratio(r, w)
                };
                if adv.is_nan() {
                    continue;
                }
                let text = if nil { "∞ (Ward 0 ms)".to_string() } else { fmt_ratio(adv) };
                let (x0, x1) = (x(1.0), x(adv));
                let by = y + 6.0 + 16.0 * (k - 1) as f64;
                let _ = writeln!(
                    s,
                    "<rect x=\"{:.1}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"14\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>",
                    x0.min(x1),
                    (x1 - x0).abs().max(1.0),
                    x0.max(x1) + 4.0,
                    by + 11.0,
                    text
                );
            }
        }
        s.push_str("</svg>\n");
        s
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_direction_of_the_figure() {
        assert_eq!(verdict(2.5, Some(2.0), true), "≥ 2×: met");
        assert_eq!(verdict(1.5, Some(2.0), true), "≥ 2×: NOT met");
        assert_eq!(verdict(0.4, Some(0.5), false), "≤ 0.5×: met");
        assert_eq!(verdict(0.7, Some(0.5), false), "≤ 0.5×: NOT met");
        assert_eq!(verdict(f64::NAN, Some(0.5), false), "no figure");
        assert_eq!(verdict(3.0, None, true), "");
    }
}
