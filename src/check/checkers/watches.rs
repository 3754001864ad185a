use super::{push, Finding, Verdict};
use crate::check::report::ms;
use crate::check::watches::{Armed, WatchWrite};
use std::collections::BTreeMap;
use ward_client::EventKind;

/// Watch promises (G6), per armed watch:
/// * no read shows a change after the watch was armed before its event has arrived (the
///   event comes before the data that shows it);
/// * the event reports a data change made after the watch was armed, and the first such
///   change: no acknowledged write to the key lies between the armed state and the event
///   (unless the client reconnected meanwhile, when `SetWatches` reports the latest one);
/// * each watcher's events on a key come in zxid order, none twice.
pub fn watch_order(keys: &[String], writes: &[WatchWrite], armed: &[Armed]) -> Verdict {
    let mut verdict = Verdict::new("watches");
    verdict.operations = writes.len() + armed.len();
    // Acknowledged changes per key, by zxid.
    let mut changes: BTreeMap<usize, BTreeMap<u64, &WatchWrite>> = BTreeMap::new();
    for w in writes {
        if let Some((_, zxid)) = w.done {
            changes.entry(w.key).or_default().insert(zxid, w);
        }
    }
    let mut last_event: BTreeMap<(u64, usize), (u64, &Armed)> = BTreeMap::new();
    for a in armed {
        let key = keys.get(a.key).map_or("?", String::as_str);
        let armed_line = format!(
            "p{} armed a data watch on {key} at zxid {} [{}, {}]",
            a.process,
            a.zxid,
            ms(a.invoked),
            ms(a.completed)
        );
        if let Some((zxid, at)) = a.early {
            let finding = Finding::new(
                format!("{key}: a read showed zxid {zxid} before the watch armed at zxid {} fired", a.zxid),
                vec![armed_line.clone(), format!("p{} read zxid {zxid} at {}, no event yet", a.process, ms(at))],
            );
            push(&mut verdict, finding.at(a.process, a.invoked, at));
        }
        let Some(event) = a.event else { continue };
        let event_line = format!("p{} got {:?} zxid {} at {}", a.process, event.kind, event.zxid, ms(event.at));
        let marked = |f: Finding| f.at(a.process, a.invoked, event.at);
        if event.kind != EventKind::NodeDataChanged {
            let what = format!("{key}: a {:?} event on a node that was only ever set", event.kind);
            push(&mut verdict, marked(Finding::new(what, vec![armed_line.clone(), event_line.clone()])));
        }
        if event.zxid <= a.zxid {
            let what = format!("{key}: event for zxid {}, not after the armed zxid {}", event.zxid, a.zxid);
            push(&mut verdict, marked(Finding::new(what, vec![armed_line.clone(), event_line.clone()])));
        }
        let between = a.zxid.saturating_add(1)..event.zxid.max(a.zxid.saturating_add(1));
        let skipped = changes.get(&a.key).and_then(|c| c.range(between).next());
        if let (Some((zxid, w)), false) = (skipped, a.reconnected) {
            let write = format!("p{} set {key} at zxid {zxid}, acknowledged [{}, ...]", w.process, ms(w.invoked));
            let what = format!("{key}: the watch reported zxid {}, not the first change after it, {zxid}", event.zxid);
            push(&mut verdict, marked(Finding::new(what, vec![armed_line.clone(), write, event_line.clone()])));
        }
        if let Some((previous, earlier)) = last_event.get(&(a.process, a.key)) {
            if event.zxid <= *previous {
                let what =
                    format!("{key}: p{}'s events out of zxid order ({previous}, then {})", a.process, event.zxid);
                let before =
                    format!("p{} earlier watch fired for zxid {previous} at {}", a.process, ms(earlier.completed));
                push(&mut verdict, marked(Finding::new(what, vec![before, armed_line.clone(), event_line])));
            }
        }
        last_event.insert((a.process, a.key), (event.zxid, a));
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::watches::Fired;

    fn write(zxid: u64) -> WatchWrite {
        WatchWrite { process: 301, key: 0, invoked: zxid * 10, done: Some((zxid * 10 + 5, zxid)) }
    }

    /// Armed at zxid 5 over [0, 1], its event for `event` at 100.
    fn armed(event: u64) -> Armed {
        let event = Some(Fired { kind: EventKind::NodeDataChanged, zxid: event, at: 100 });
        Armed { process: 302, key: 0, zxid: 5, invoked: 0, completed: 1, event, early: None, reconnected: false }
    }

    fn keys() -> Vec<String> {
        vec!["/w".to_owned()]
    }

    #[test]
    fn an_event_for_the_first_change_after_arming_passes() {
        let verdict = watch_order(&keys(), &[write(5), write(7), write(9)], &[armed(7)]);
        assert!(verdict.passed(), "{verdict:?}");
    }

    #[test]
    fn a_read_showing_the_change_before_its_event_is_caught() {
        let mut a = armed(7);
        a.early = Some((7, 50));
        let verdict = watch_order(&keys(), &[write(7)], &[a]);
        assert!(
            verdict.violations.iter().any(|f| f.what.contains("before the watch armed at zxid 5 fired")),
            "{verdict:?}"
        );
    }

    #[test]
    fn an_event_not_after_the_armed_state_is_caught() {
        let verdict = watch_order(&keys(), &[write(5)], &[armed(5)]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("not after the armed zxid")), "{verdict:?}");
    }

    #[test]
    fn an_event_that_skipped_a_change_is_caught_unless_the_client_reconnected() {
        let writes = [write(6), write(7)];
        let verdict = watch_order(&keys(), &writes, &[armed(7)]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("not the first change after it, 6")), "{verdict:?}");
        let mut reconnected = armed(7);
        reconnected.reconnected = true;
        assert!(watch_order(&keys(), &writes, &[reconnected]).passed());
    }

    #[test]
    fn events_out_of_zxid_order_are_caught() {
        let mut later = armed(6);
        later.zxid = 3;
        let verdict = watch_order(&keys(), &[write(6), write(7)], &[armed(7), later]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("out of zxid order")), "{verdict:?}");
    }
}
