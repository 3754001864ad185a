//! The longest stretch without an acknowledged write in a window of a writer's timeline:
//! what a client with one write outstanding sees of a leader restart or a partition.

use std::time::{Duration, Instant};

/// The longest time between two consecutive acknowledgements (`acks`, in order) where that
/// stretch overlaps `from..=to`, measured in full even where it reaches outside the window:
/// a write stalled across the window's edge stalled that long. Where no acknowledgement came
/// before `from` (or after `to`), the window's edge stands in for it, so a writer that never
/// got through counts the whole window. `None` for an empty window.
pub fn longest_gap(acks: &[Instant], from: Instant, to: Instant) -> Option<Duration> {
    if to <= from {
        return None;
    }
    let before = acks.iter().rev().find(|&&a| a <= from).copied().unwrap_or(from);
    let after = acks.iter().find(|&&a| a >= to).copied().unwrap_or(to);
    let inside = acks.iter().copied().filter(|&a| a > from && a < to);
    let points: Vec<Instant> = std::iter::once(before).chain(inside).chain(std::iter::once(after)).collect();
    points.windows(2).map(|w| w[1].saturating_duration_since(w[0])).max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: &[u64]) -> Vec<Instant> {
        ms.iter().map(|&m| base + Duration::from_millis(m)).collect()
    }

    fn gap(acks: &[u64], from: u64, to: u64) -> Option<u64> {
        let base = Instant::now();
        let acks = at(base, acks);
        let ms = |m: u64| base + Duration::from_millis(m);
        longest_gap(&acks, ms(from), ms(to)).map(|d| d.as_millis() as u64)
    }

    #[test]
    fn the_longest_stretch_inside_the_window() {
        assert_eq!(gap(&[0, 2, 4, 30, 32, 34, 100], 1, 34), Some(26));
        // The stall from 34 to 100 crosses the end of a longer window.
        assert_eq!(gap(&[0, 2, 4, 30, 32, 34, 100], 1, 40), Some(66));
    }

    #[test]
    fn a_stretch_across_an_edge_counts_in_full() {
        // Stalled from 10 to 90 and the window is 50..60: the writer waited 80 ms.
        assert_eq!(gap(&[0, 10, 90, 95], 50, 60), Some(80));
        // Across the start only.
        assert_eq!(gap(&[0, 10, 70, 72, 74], 50, 100), Some(60));
    }

    #[test]
    fn stretches_outside_the_window_do_not_count() {
        assert_eq!(gap(&[0, 100, 101, 102, 103, 300], 100, 103), Some(1));
    }

    #[test]
    fn without_acks_the_window_edges_stand_in() {
        assert_eq!(gap(&[], 10, 50), Some(40));
        // Nothing after the last ack before the window's end.
        assert_eq!(gap(&[0, 20], 10, 50), Some(30));
        // Nothing before the first one.
        assert_eq!(gap(&[45, 60], 10, 50), Some(35));
    }

    #[test]
    fn an_empty_window_has_no_gap() {
        assert_eq!(gap(&[0, 1, 2], 5, 5), None);
    }
}
