use super::{push, Finding, Verdict};
use crate::check::report::ms;
use crate::check::sequential::{suffix, SeqCreate};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The children of the sequential directory as one member listed them at the end, and the
/// data of those no acknowledged create named.
#[derive(Clone, Debug)]
pub struct Listing {
    pub member: String,
    /// The names, or why the member did not list them.
    pub names: Result<Vec<String>, String>,
    /// Data of the names no acknowledged create returned (`Err`: unread).
    pub unclaimed: Vec<(String, Result<String, String>)>,
}

fn line(c: &SeqCreate) -> String {
    match &c.created {
        Some((name, at)) => format!("p{} create {:?} -> {name} [{}, {}]", c.process, c.data, ms(c.invoked), ms(*at)),
        None => format!("p{} create {:?} -> ? [{}, ...]", c.process, c.data, ms(c.invoked)),
    }
}

fn marked(f: Finding, c: &SeqCreate) -> Finding {
    f.at(c.process, c.invoked, c.created.as_ref().map_or(c.invoked, |(_, at)| *at))
}

/// Sequential creates (G4): acknowledged names are unique, and a create that started after
/// another returned got a larger suffix; at the end every member lists every acknowledged
/// create, and any other child it lists is a create of unknown outcome, applied once.
pub fn sequential(creates: &[SeqCreate], listings: &[Listing]) -> Verdict {
    let mut verdict = Verdict::new("sequential");
    verdict.operations = creates.len();
    let acked: Vec<(&SeqCreate, &str, u64, i64)> = creates
        .iter()
        .filter_map(|c| c.created.as_ref().map(|(name, at)| (c, name.as_str(), *at, suffix(name).unwrap_or(-1))))
        .collect();
    let mut by_name: HashMap<&str, &SeqCreate> = HashMap::new();
    for &(c, name, _, _) in &acked {
        if let Some(first) = by_name.insert(name, c) {
            let f = Finding::new(format!("{name} given to two creates"), vec![line(first), line(c)]);
            push(&mut verdict, marked(marked(f, first), c));
        }
    }
    // Real-time order: the largest suffix of creates returned before each one started.
    let mut by_end: Vec<&(&SeqCreate, &str, u64, i64)> = acked.iter().collect();
    by_end.sort_by_key(|a| a.2);
    let mut by_start: Vec<&(&SeqCreate, &str, u64, i64)> = acked.iter().collect();
    by_start.sort_by_key(|a| a.0.invoked);
    let (mut next, mut top): (usize, Option<&(&SeqCreate, &str, u64, i64)>) = (0, None);
    for b in by_start {
        while next < by_end.len() && by_end[next].2 < b.0.invoked {
            if top.is_none_or(|t| by_end[next].3 > t.3) {
                top = Some(by_end[next]);
            }
            next += 1;
        }
        if let Some(a) = top.filter(|a| a.3 >= b.3) {
            let what = format!("{} after {}: a later create got a smaller suffix", b.1, a.1);
            push(&mut verdict, marked(marked(Finding::new(what, vec![line(a.0), line(b.0)]), a.0), b.0));
        }
    }
    for listing in listings {
        listed(listing, creates, &by_name, &mut verdict);
    }
    verdict
}

fn listed(listing: &Listing, creates: &[SeqCreate], by_name: &HashMap<&str, &SeqCreate>, verdict: &mut Verdict) {
    let names = match &listing.names {
        Ok(names) => names,
        Err(why) => return verdict.undecided.push(format!("{} did not list the creates: {why}", listing.member)),
    };
    let present: HashSet<&str> = names.iter().map(String::as_str).collect();
    for (name, c) in by_name.iter().filter(|(name, _)| !present.contains(*name)) {
        let what = format!("acknowledged create {name} missing on {}", listing.member);
        push(verdict, marked(Finding::new(what, vec![line(c)]), c));
    }
    let unknown: BTreeMap<&str, &SeqCreate> =
        creates.iter().filter(|c| c.created.is_none()).map(|c| (c.data.as_str(), c)).collect();
    let acked: HashMap<&str, &SeqCreate> = by_name.values().map(|c| (c.data.as_str(), *c)).collect();
    let mut claimed: HashSet<&str> = HashSet::new();
    for (name, data) in &listing.unclaimed {
        let data = match data {
            Ok(data) => data.as_str(),
            Err(why) => {
                verdict.undecided.push(format!("{name} on {} unread: {why}", listing.member));
                continue;
            }
        };
        let seen = format!("{} lists {name} holding {data:?}", listing.member);
        match (unknown.get(data), acked.get(data)) {
            (Some(_), _) if claimed.insert(data) => {}
            (Some(c), _) | (None, Some(c)) => {
                let what = format!("create {data:?} applied twice on {}", listing.member);
                push(verdict, marked(Finding::new(what, vec![line(c), seen]), c));
            }
            (None, None) => {
                push(verdict, Finding::new(format!("{name} on {}: never created", listing.member), vec![seen]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(process: u64, n: u64, invoked: u64, name: Option<(&str, u64)>) -> SeqCreate {
        SeqCreate { process, data: format!("p{process}-{n}"), invoked, created: name.map(|(n, at)| (n.to_owned(), at)) }
    }

    fn listing(names: &[&str], unclaimed: &[(&str, &str)]) -> Listing {
        Listing {
            member: "m1".into(),
            names: Ok(names.iter().map(|n| n.to_string()).collect()),
            unclaimed: unclaimed.iter().map(|(n, d)| (n.to_string(), Ok(d.to_string()))).collect(),
        }
    }

    /// p1's create returned n-1 before p2's began, which got n-2; p2's second create's
    /// outcome is unknown, and it did apply (as n-3).
    fn healthy() -> Vec<SeqCreate> {
        vec![
            create(1, 1, 0, Some(("n-0000000001", 10))),
            create(2, 1, 20, Some(("n-0000000002", 30))),
            create(2, 2, 40, None),
        ]
    }

    #[test]
    fn unique_increasing_names_all_present_pass() {
        let all = listing(&["n-0000000001", "n-0000000002", "n-0000000003"], &[("n-0000000003", "p2-2")]);
        assert!(sequential(&healthy(), &[all]).passed());
    }

    #[test]
    fn a_smaller_suffix_after_a_returned_create_is_caught() {
        let mut creates = healthy();
        creates[1].created = Some(("n-0000000000".into(), 30));
        let verdict = sequential(&creates, &[]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("smaller suffix")), "{verdict:?}");
    }

    #[test]
    fn one_name_given_twice_is_caught() {
        let mut creates = healthy();
        creates[1].created = Some(("n-0000000001".into(), 30));
        let verdict = sequential(&creates, &[]);
        assert!(verdict.violations.iter().any(|f| f.what.contains("given to two creates")), "{verdict:?}");
    }

    #[test]
    fn a_lost_create_a_create_applied_twice_and_a_phantom_are_caught() {
        let lost = sequential(&healthy(), &[listing(&["n-0000000002"], &[])]);
        assert!(lost.violations.iter().any(|f| f.what.contains("n-0000000001 missing")), "{lost:?}");
        let twice = listing(&["n-0000000001", "n-0000000002", "n-0000000004"], &[("n-0000000004", "p1-1")]);
        let twice = sequential(&healthy(), &[twice]);
        assert!(twice.violations.iter().any(|f| f.what.contains("applied twice")), "{twice:?}");
        let phantom = listing(&["n-0000000001", "n-0000000002", "n-0000000009"], &[("n-0000000009", "p7-7")]);
        let phantom = sequential(&healthy(), &[phantom]);
        assert!(phantom.violations.iter().any(|f| f.what.contains("never created")), "{phantom:?}");
    }
}
