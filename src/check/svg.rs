//! `ward check --svg FILE`: the run drawn as a timeline, one lane per client process, its
//! operations as bars (acknowledged, refused, of unknown outcome), the faults as bands
//! across every lane, and the violations outlined in red. Plain SVG text; a hover over a
//! band or an outline names it.

use super::nemesis::FaultEvent;
use super::report::Finding;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How an operation ended, as drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Acknowledged (or answered).
    Ok,
    /// Refused: a bad version, a stale fence, a watch given up.
    Refused,
    /// No answer: it may have taken effect.
    Unknown,
}

/// One operation on the run's clock (nanoseconds).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub process: u64,
    pub start: u64,
    pub end: u64,
    pub status: Status,
}

impl Span {
    pub fn new(process: u64, start: u64, end: Option<u64>, status: Status) -> Span {
        Span { process, start, end: end.unwrap_or(start).max(start), status }
    }
}

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 110.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const LANE: f64 = 14.0;
const GAP: f64 = 4.0;

fn fill(status: Status) -> &'static str {
    match status {
        Status::Ok => "#4c9a5f",
        Status::Refused => "#9aa0a6",
        Status::Unknown => "#e8912d",
    }
}

fn band(kind: &str) -> &'static str {
    match kind {
        "kill" | "restart" => "#d93025",
        "pause" => "#9334e6",
        "member" => "#1a73e8",
        _ => "#f9ab00",
    }
}

/// Text safe inside an SVG element or attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A tick step of 1, 2 or 5 times a power of ten seconds, about ten ticks over `span_s`.
fn tick(span_s: f64) -> f64 {
    let raw = (span_s / 10.0).max(1e-3);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|step| *step >= raw).unwrap_or(raw)
}

/// The timeline of a run: `lanes` names each process's lane (top to bottom), `title` heads
/// it.
pub fn render(
    title: &str,
    lanes: &[(u64, String)],
    spans: &[Span],
    faults: &[FaultEvent],
    findings: &[&Finding],
) -> String {
    let row: BTreeMap<u64, usize> = lanes.iter().enumerate().map(|(i, (p, _))| (*p, i)).collect();
    let end = spans.iter().map(|s| s.end).chain(faults.iter().map(|f| f.end)).max().unwrap_or(0).max(1);
    let x = |ns: u64| LEFT + (ns as f64 / end as f64) * (WIDTH - LEFT - RIGHT);
    let y = |lane: usize| TOP + lane as f64 * (LANE + GAP);
    let bottom = y(lanes.len());
    let height = bottom + 70.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(out, r#"<text x="{LEFT}" y="16" font-size="13">{}</text>"#, escape(title));
    let step = tick(end as f64 / 1e9);
    let mut t = 0.0;
    while t * 1e9 <= end as f64 {
        let at = x((t * 1e9) as u64);
        let _ =
            writeln!(out, r##"<line x1="{at:.1}" y1="{}" x2="{at:.1}" y2="{bottom}" stroke="#e0e0e0"/>"##, TOP - 6.0);
        let label = (t * 1000.0).round() / 1000.0;
        let _ = writeln!(out, r#"<text x="{at:.1}" y="{}" text-anchor="middle">{label}s</text>"#, TOP - 10.0);
        t += step;
    }
    for (i, f) in faults.iter().enumerate() {
        let (x0, x1) = (x(f.start), x(f.end).max(x(f.start) + 1.0));
        let _ = writeln!(
            out,
            r#"<rect x="{x0:.1}" y="{}" width="{:.1}" height="{}" fill="{}" opacity="0.18"><title>{} ({:.1} s)</title></rect>"#,
            TOP - 4.0,
            x1 - x0,
            bottom - TOP + 4.0,
            band(f.kind.name()),
            escape(&f.detail),
            (f.end - f.start) as f64 / 1e9
        );
        // Three rows of labels, so that neighbours do not overlap.
        let row = bottom + 11.0 + 9.0 * (i % 3) as f64;
        let _ = writeln!(
            out,
            r#"<text x="{x0:.1}" y="{row}" font-size="8" fill="{}">{}</text>"#,
            band(f.kind.name()),
            f.kind
        );
    }
    for (i, (_, name)) in lanes.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            y(i) + LANE - 3.0,
            escape(name)
        );
    }
    bars(&mut out, spans, &row, &x, &y);
    for f in findings {
        for m in &f.marks {
            let (x0, x1) = (x(m.from) - 1.5, x(m.to).max(x(m.from)) + 1.5);
            let (y0, h) = match m.process.and_then(|p| row.get(&p)) {
                Some(&lane) => (y(lane) - 2.0, LANE + 4.0),
                None => (TOP - 4.0, bottom - TOP + 4.0),
            };
            let _ = writeln!(
                out,
                r##"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{h}" fill="none" stroke="#d50000" stroke-width="2"><title>{}</title></rect>"##,
                x1 - x0,
                escape(&f.what)
            );
        }
    }
    legend(&mut out, bottom + 52.0);
    out.push_str("</svg>\n");
    out
}

/// Each lane's bars, drawn per pixel column: a column shows an operation of unknown outcome
/// if it holds one, else an acknowledged one if it holds one, else a refused one; runs of
/// one colour are one bar. Tens of thousands of operations stay a small file.
fn bars(
    out: &mut String,
    spans: &[Span],
    row: &BTreeMap<u64, usize>,
    x: &dyn Fn(u64) -> f64,
    y: &dyn Fn(usize) -> f64,
) {
    let columns = (WIDTH - RIGHT).ceil() as usize;
    let mut lanes: BTreeMap<usize, Vec<Option<Status>>> = BTreeMap::new();
    for s in spans {
        let Some(&lane) = row.get(&s.process) else { continue };
        let cells = lanes.entry(lane).or_insert_with(|| vec![None; columns]);
        // An operation of unknown outcome has no end: a short bar at its start.
        let (x0, x1) = match s.status {
            Status::Unknown => (x(s.start), x(s.start) + 3.0),
            _ => (x(s.start), x(s.end)),
        };
        let from = (x0.floor() as usize).min(columns - 1);
        let to = (x1.ceil() as usize).clamp(from + 1, columns);
        for cell in &mut cells[from..to] {
            *cell = Some(match (*cell, s.status) {
                (Some(Status::Unknown), _) | (_, Status::Unknown) => Status::Unknown,
                (Some(Status::Ok), _) | (_, Status::Ok) => Status::Ok,
                _ => Status::Refused,
            });
        }
    }
    for (lane, cells) in lanes {
        let mut start = 0;
        while start < cells.len() {
            let Some(status) = cells[start] else {
                start += 1;
                continue;
            };
            let end = (start..cells.len()).find(|&i| cells[i] != Some(status)).unwrap_or(cells.len());
            let _ = writeln!(
                out,
                r#"<rect x="{start}" y="{:.1}" width="{}" height="{LANE}" fill="{}"/>"#,
                y(lane),
                end - start,
                fill(status)
            );
            start = end;
        }
    }
}

fn legend(out: &mut String, at: f64) {
    let items = [
        (fill(Status::Ok), "acknowledged"),
        (fill(Status::Refused), "refused"),
        (fill(Status::Unknown), "outcome unknown"),
        (band("kill"), "kill / restart"),
        (band("pause"), "pause"),
        (band("partition"), "partition (full, one-way, bridge)"),
        (band("member"), "membership change"),
    ];
    let mut x = LEFT;
    for (color, label) in items {
        let _ = writeln!(out, r#"<rect x="{x}" y="{}" width="10" height="10" fill="{color}"/>"#, at - 9.0);
        let _ = writeln!(out, r#"<text x="{}" y="{at}">{label}</text>"#, x + 14.0);
        x += 24.0 + 6.6 * label.len() as f64;
    }
    let _ = writeln!(
        out,
        r##"<rect x="{x}" y="{}" width="10" height="10" fill="none" stroke="#d50000" stroke-width="2"/>"##,
        at - 9.0
    );
    let _ = writeln!(out, r#"<text x="{}" y="{at}">violation</text>"#, x + 14.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::FaultKind;

    #[test]
    fn a_timeline_has_a_lane_per_process_a_band_per_fault_and_an_outline_per_violation() {
        let lanes = vec![(1, "registers p1".to_owned()), (2, "locks p2".to_owned())];
        let spans = [
            Span::new(1, 0, Some(10), Status::Ok),
            // In the first one's pixel column: one bar.
            Span::new(1, 11, Some(20), Status::Ok),
            Span::new(2, 5_000_000_000, None, Status::Unknown),
            Span::new(2, 6_000_000_000, Some(9_000_000_000), Status::Refused),
        ];
        let fault = FaultEvent {
            kind: FaultKind::Kill,
            member: 2,
            was_leader: true,
            detail: "kill -9 2 <leader>".into(),
            start: 1_000_000_000,
            end: 3_000_000_000,
        };
        let finding = Finding::new("two holds overlap", vec![]).at(2, 6_000_000_000, 7_000_000_000);
        let svg = render("a run", &lanes, &spans, &[fault], &[&finding]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches(r##"fill="#4c9a5f"/>"##).count(), 2, "one merged bar and the legend's:\n{svg}");
        assert!(svg.contains("kill -9 2 &lt;leader&gt;"), "{svg}");
        assert!(svg.contains("<title>two holds overlap</title>"), "{svg}");
        assert!(svg.contains(">registers p1</text>") && svg.contains(">locks p2</text>"));
        assert_eq!(tick(120.0), 20.0);
        assert_eq!(tick(9.0), 1.0);
    }
}
