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
        let skipped = changes.get(&a.key).and_then(|c| c.range(a.zxid + 1..event.zxid).next());
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
