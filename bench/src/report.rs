//! Collecting figures over runs, and printing them: the table, the JSON array, the SVG chart.

use crate::stats::{median, Figures};
use std::fmt::Write as _;

pub const WARD: &str = "ward";
pub const ZK: &str = "zookeeper";

pub struct Row {
    pub workload: String,
    pub metric: String,
    pub ward: Vec<f64>,
    pub zk: Vec<f64>,
}

impl Row {
    pub fn ward(&self) -> f64 {
        median(&self.ward)
    }

    pub fn zk(&self) -> f64 {
        median(&self.zk)
    }

    pub fn ratio(&self) -> f64 {
        let (w, z) = (self.ward(), self.zk());
        if z == 0.0 || z.is_nan() || w.is_nan() {
            f64::NAN
        } else {
            w / z
        }
    }
}

#[derive(Default)]
pub struct Results {
    pub rows: Vec<Row>,
}

impl Results {
    pub fn record(&mut self, workload: &str, system: &str, figures: &Figures) {
        for (metric, value) in &figures.rows {
            let row = match self.rows.iter().position(|r| r.workload == workload && r.metric == *metric) {
                Some(i) => &mut self.rows[i],
                None => {
                    self.rows.push(Row {
                        workload: workload.to_string(),
                        metric: metric.clone(),
                        ward: Vec::new(),
                        zk: Vec::new(),
                    });
                    let last = self.rows.len() - 1;
                    &mut self.rows[last]
                }
            };
            if system == WARD {
                row.ward.push(*value);
            } else {
                row.zk.push(*value);
            }
        }
    }

    pub fn get(&self, workload: &str, metric: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.workload == workload && r.metric == metric)
    }

    /// Adds "memory per X (B)" rows: Ward's RSS delta against ZooKeeper's live-heap delta
    /// (its RSS delta when jcmd was not available), the comparison the targets are set in.
    pub fn add_memory_rows(&mut self) {
        let mut extra = Vec::new();
        for r in &self.rows {
            let Some(what) = r.metric.strip_prefix("RSS per ").and_then(|m| m.strip_suffix(" (B)")) else { continue };
            let heap = self.get(&r.workload, &format!("live heap per {what} (B)"));
            let zk = match heap {
                Some(h) if !h.zk.is_empty() => h.zk.clone(),
                _ => r.zk.clone(),
            };
            extra.push(Row {
                workload: r.workload.clone(),
                metric: format!("memory per {what} (B)"),
                ward: r.ward.clone(),
                zk,
            });
        }
        self.rows.extend(extra);
        // Keep each workload's rows together, in first-seen order.
        let order: Vec<String> = self.rows.iter().fold(Vec::new(), |mut v, r| {
            if !v.contains(&r.workload) {
                v.push(r.workload.clone());
            }
            v
        });
        self.rows.sort_by_key(|r| order.iter().position(|w| *w == r.workload));
    }

    pub fn table(&self, with_zk: bool) -> String {
        let mut cells: Vec<[String; 5]> =
            vec![["workload".into(), "metric".into(), "Ward".into(), "ZooKeeper".into(), "Ward/ZK".into()]];
        for r in &self.rows {
            cells.push([
                r.workload.clone(),
                r.metric.clone(),
                fmt_value(r.ward()),
                if with_zk { fmt_value(r.zk()) } else { "-".into() },
                if with_zk { fmt_ratio(r.ratio()) } else { "-".into() },
            ]);
        }
        let widths: Vec<usize> =
            (0..5).map(|c| cells.iter().map(|row| row[c].chars().count()).max().unwrap_or(0)).collect();
        let mut out = String::new();
        for (i, row) in cells.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:<w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {:>w4$}",
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3],
                w4 = widths[4]
            );
            if i == 0 {
                let _ = writeln!(out, "{}", "-".repeat(widths.iter().sum::<usize>() + 8));
            }
        }
        out
    }

    /// The same table as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::from("| workload | metric | Ward | ZooKeeper | Ward/ZK |\n|---|---|---:|---:|---:|\n");
        for r in &self.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                r.workload,
                r.metric,
                fmt_value(r.ward()),
                fmt_value(r.zk()),
                fmt_ratio(r.ratio())
            );
        }
        out
    }

    /// Figures read back from what [`Results::json`] wrote (for `--replot`).
    pub fn from_json(text: &str) -> Result<Results, String> {
        let items: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut results = Results::default();
        for item in items {
            let field = |name: &str| item.get(name).and_then(|v| v.as_str()).map(str::to_string);
            let (Some(workload), Some(metric), Some(system)) = (field("workload"), field("metric"), field("system"))
            else {
                return Err(format!("not a ward-bench figure: {item}"));
            };
            let value = item.get("value").and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN);
            results.record(&workload, &system, &Figures { rows: vec![(metric, value)] });
        }
        Ok(results)
    }

    pub fn has_zk(&self) -> bool {
        self.rows.iter().any(|r| !r.zk.is_empty())
    }

    /// Every figure (medians over runs) as one JSON array.
    pub fn json(&self) -> String {
        let mut items = Vec::new();
        for r in &self.rows {
            for (system, values) in [(WARD, &r.ward), (ZK, &r.zk)] {
                if values.is_empty() {
                    continue;
                }
                let v = median(values);
                let value = if v.is_finite() { serde_json::json!(v) } else { serde_json::Value::Null };
                items.push(serde_json::json!({
                    "workload": r.workload,
                    "metric": r.metric,
                    "system": system,
                    "value": value,
                }));
            }
        }
        serde_json::to_string_pretty(&serde_json::Value::Array(items)).unwrap_or_else(|_| "[]".into())
    }
}

pub fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        let s = format!("{:.0}", v.abs());
        let mut grouped = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        if v < 0.0 {
            format!("-{grouped}")
        } else {
            grouped
        }
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.3}")
    }
}

pub fn fmt_ratio(r: f64) -> String {
    if r.is_nan() || r.is_infinite() {
        "-".into()
    } else if r >= 10.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

/// A headline figure: what the chart shows and the issue's target for it.
pub struct Headline {
    pub workload: &'static str,
    pub metric: &'static str,
    pub label: &'static str,
    pub higher_is_better: bool,
    /// Ward/ZooKeeper ratio to reach (≥ for higher-is-better, ≤ otherwise).
    pub target: Option<f64>,
}

pub fn headlines() -> Vec<Headline> {
    let h = |workload, metric, label, higher_is_better, target| Headline {
        workload,
        metric,
        label,
        higher_is_better,
        target,
    };
    vec![
        h("a. sequential create+delete", "create p50 (ms)", "a. sequential create p50", false, Some(0.5)),
        h("b. create, delete (64 outstanding)", "create/s", "b. create throughput", true, Some(3.0)),
        h("c. get_data (64 outstanding)", "get_data/s", "c. get_data throughput", true, Some(3.0)),
        h("d. uncontended lock", "cycles/s", "d. lock cycles/s, release awaited", true, Some(4.0)),
        h(
            "d. uncontended lock",
            "cycles/s, release not awaited",
            "d. lock cycles/s, release not awaited",
            true,
            Some(4.0),
        ),
        h("e. contended lock N=10", "acquisitions/s", "e. N=10 acquisitions/s", true, None),
        h("e. contended lock N=10", "handoff p50 (ms)", "e. N=10 handoff p50", false, None),
        h("e. contended lock N=100", "acquisitions/s", "e. N=100 acquisitions/s, release awaited", true, Some(3.0)),
        h(
            "e. contended lock N=100",
            "acquisitions/s, release not awaited",
            "e. N=100 acquisitions/s, release not awaited",
            true,
            Some(3.0),
        ),
        h("e. contended lock N=100", "handoff p50 (ms)", "e. N=100 handoff p50", false, Some(0.5)),
        h("f. sessions", "sessions/s", "f. sessions opened/s", true, None),
        h("f. sessions", "memory per session (B)", "f. memory per session", false, Some(0.5)),
        h("g. 100k znodes", "create/s", "g. znode create/s", true, None),
        h("g. 100k znodes", "memory per znode (B)", "g. memory per znode", false, Some(0.5)),
        h("h. watches", "memory per watch (B)", "h. memory per watch", false, None),
        h("h. watches", "fire: all events delivered (ms)", "h. all events delivered", false, None),
        h("durable writes (64 writers)", "acked writes/s", "durable writes/s (64 writers)", true, None),
    ]
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A horizontal bar chart of Ward/ZooKeeper per headline figure on a log scale around 1×.
pub fn svg(results: &Results, title: &str) -> String {
    let rows: Vec<(&Headline, f64)> = headlines()
        .leak()
        .iter()
        .filter_map(|h| results.get(h.workload, h.metric).map(|r| (h, r.ratio())))
        // A ratio of 0 (Ward's handoff p50) is drawn at the scale's end.
        .filter(|(_, r)| r.is_finite() && *r >= 0.0)
        .collect();
    // Wide enough for the longest label at about 7 px a character.
    let longest = rows.iter().map(|(h, _)| h.label.chars().count() + 2).max().unwrap_or(0);
    let label_w = (longest as f64 * 7.0 + 16.0).max(200.0);
    let (bar_w, row_h, top) = (480.0, 26.0, 70.0);
    let width = label_w + bar_w + 90.0;
    let height = top + row_h * rows.len() as f64 + 50.0;
    let span = 5.0; // log2 units each side: 1/32× .. 32×
    let cx = label_w + bar_w / 2.0;
    let x = |r: f64| cx + (r.log2().clamp(-span, span) / span) * (bar_w / 2.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(s, r##"<text x="10" y="22" font-size="15" font-weight="bold">{}</text>"##, esc(title));
    let _ = writeln!(
        s,
        r##"<text x="10" y="42" fill="#444">Ward / ZooKeeper, log scale. Green: Ward better, red: Ward worse. Black tick: the target. ↑ higher is better, ↓ lower is better.</text>"##
    );
    for k in -span as i32..=span as i32 {
        let r = 2f64.powi(k);
        let gx = x(r);
        let label = if k >= 0 { format!("{}×", 1 << k) } else { format!("1/{}×", 1 << -k) };
        let stroke = if k == 0 { "#000" } else { "#ddd" };
        let _ = writeln!(
            s,
            r##"<line x1="{gx:.1}" y1="{y1:.1}" x2="{gx:.1}" y2="{y2:.1}" stroke="{stroke}"/><text x="{gx:.1}" y="{ty:.1}" text-anchor="middle" fill="#666" font-size="10">{label}</text>"##,
            y1 = top - 8.0,
            y2 = top + row_h * rows.len() as f64,
            ty = top + row_h * rows.len() as f64 + 14.0
        );
    }
    for (i, (h, r)) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let better = if h.higher_is_better { *r >= 1.0 } else { *r <= 1.0 };
        let color = if better { "#2e7d32" } else { "#c62828" };
        let (x0, x1) = (x(1.0).min(x(*r)), x(1.0).max(x(*r)));
        let arrow = if h.higher_is_better { "↑" } else { "↓" };
        let _ = writeln!(
            s,
            r##"<text x="{lx}" y="{ty:.1}" text-anchor="end">{} {arrow}</text>"##,
            esc(h.label),
            lx = label_w - 8.0,
            ty = y + row_h * 0.65
        );
        let _ = writeln!(
            s,
            r##"<rect x="{x0:.1}" y="{by:.1}" width="{w:.1}" height="{bh:.1}" fill="{color}"/>"##,
            by = y + 5.0,
            w = (x1 - x0).max(1.0),
            bh = row_h - 10.0
        );
        if let Some(t) = h.target {
            let tx = x(t);
            let _ = writeln!(
                s,
                r##"<line x1="{tx:.1}" y1="{y1:.1}" x2="{tx:.1}" y2="{y2:.1}" stroke="#000" stroke-width="2"/>"##,
                y1 = y + 2.0,
                y2 = y + row_h - 2.0
            );
        }
        // A bar cut off at the scale's left end carries its value inside, in white.
        let clipped = r.log2() < -span;
        let (vx, anchor, fill) = match (*r >= 1.0, clipped) {
            (true, _) => (x1 + 4.0, "start", color),
            (false, false) => (x0 - 4.0, "end", color),
            (false, true) => (x0 + 4.0, "start", "#fff"),
        };
        let _ = writeln!(
            s,
            r##"<text x="{vx:.1}" y="{ty:.1}" text-anchor="{anchor}" fill="{fill}">{}</text>"##,
            fmt_ratio(*r),
            ty = y + row_h * 0.65
        );
    }
    s.push_str("</svg>\n");
    s
}

/// One line per headline with a target: met or missed.
pub fn targets(results: &Results) -> String {
    let mut out = String::new();
    for h in headlines() {
        let Some(t) = h.target else { continue };
        let Some(r) = results.get(h.workload, h.metric) else { continue };
        let ratio = r.ratio();
        let met = if h.higher_is_better { ratio >= t } else { ratio <= t };
        let want = if h.higher_is_better { "≥" } else { "≤" };
        let _ = writeln!(
            out,
            "{:<32} Ward/ZK {:>8}  target {want} {t}×  {}",
            h.label,
            fmt_ratio(ratio),
            if ratio.is_nan() {
                "n/a"
            } else if met {
                "met"
            } else {
                "MISSED"
            }
        );
    }
    out
}
