//! What the server crate exports, read from its sources: every `pub` item of `server/src`
//! (the binary's files aside) is named somewhere outside the library (the `ward-server`
//! binary, the server's and the workspace's tests, the `ward` CLI, the bench), or is listed
//! in [`EXPOSED`] with the reason the compiler needs it public. Everything else is
//! `pub(crate)`. The library denies `unreachable_pub`, so no `pub` hides in a private module
//! either. docs/architecture.md ("What the crate exports") says how to run it.
//!
//! The check is by name: a name that something outside uses for another item counts as
//! used (`new`, `len`), so it can miss an unused item, never refuse a used one.

mod sources;

use sources::{rust_files, workspace};
use std::collections::BTreeSet;
use std::path::Path;

/// `pub` items nothing outside names, and why they stay `pub`: a type in the signature of an
/// item that is used outside (the compiler's `private_interfaces` check), or a field of a
/// configuration struct that callers build with `..Default::default()` (which needs every
/// field visible).
const EXPOSED: &[(&str, &str)] = &[
    ("Change", "in `Outcome`, what `Replication::submit` resolves to"),
    ("Forced", "returned by `raft::force_new_ensemble`"),
    ("Restored", "returned by `raft::restore`"),
    ("SnapshotCopying", "returned by `Replication::snapshot_copy`"),
    ("SnapshotCopy", "what `SnapshotCopying` resolves to"),
    ("CopyError", "what `SnapshotCopying` resolves to when there is no copy"),
    ("SessionRecord", "returned by `StateMachine::sessions`"),
    ("Effects", "taken by `Core::new`"),
    ("max_data_len", "a field of `Config`"),
    ("handshake_timeout", "a field of `Config`"),
    ("expiry_tick", "a field of `Config`"),
    ("ConnLimits", "a field of `Server`"),
    ("Refusal", "returned by `ConnLimits::admit`"),
    ("WatchRegistry", "a field of `Local`"),
    ("Znode", "returned by `DataTree::get` through `StateMachine::tree`"),
    ("NodeKind", "returned by `Znode::kind`"),
    ("Children", "returned by `Znode::children`"),
    ("SnapshotFigures", "a field of `Metrics`"),
    ("Histogram", "fields of the figures in `Metrics`"),
    ("Stamp", "returned by `ListenerFigures::stamp`"),
    ("ListenerFigures", "a field of `Metrics`"),
    ("LockFigures", "a field of `Metrics`"),
    ("LogFigures", "a field of `Metrics`, taken by `LogStore::open_with`"),
    ("OpenConnections", "a field of `Server`"),
    ("OpenGuard", "returned by `OpenConnections::open`"),
    ("RaftFigures", "returned by `Replication::raft_figures`"),
    ("HeardFrom", "a field of `RaftFigures`"),
    ("CloseReason", "taken by `SessionTracker::close_all`"),
    ("Outbound", "taken by `SessionTracker::send`"),
    ("Batch", "in `Entry`, openraft's entry type"),
    ("SnapshotFile", "in openraft's snapshot type"),
    ("max_commands", "a field of `BatchLimits`"),
    ("max_bytes", "a field of `BatchLimits`"),
    ("LogReader", "`LogStore`'s reader in openraft's storage trait"),
    ("Evictor", "returned by `LogStore::evictor`"),
    ("replay_timeout", "a field of `RaftOptions`"),
    ("Readiness", "a field of `Local`"),
    ("Barrier", "returned by `Replication::barrier`"),
    ("Rejected", "what `Replication` calls fail with"),
    ("MemberChange", "taken by `Replication::change_members`"),
    ("Transfer", "returned by `Replication::transfer_leader`"),
    ("PeerConfigs", "in `EnsembleOptions::peer_tls`"),
    ("Reloading", "in `Config::tls` and `EnsembleOptions::peer_tls`"),
];

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

/// The name of a `pub` item or field declared on `line`, if it declares one.
fn pub_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("pub ")?;
    let mut tokens = words(rest).skip_while(|t| matches!(*t, "async" | "unsafe"));
    let first = tokens.next()?;
    match first {
        "const" | "fn" | "struct" | "enum" | "trait" | "type" | "static" | "mod" => {
            let name = tokens.next()?;
            if first == "const" && name == "fn" {
                return tokens.next();
            }
            Some(name)
        }
        // A field: `pub name: Type`.
        _ => {
            let after = rest.trim_start().strip_prefix(first)?;
            (after.starts_with(':') && !after.starts_with("::")).then_some(first)
        }
    }
}

/// Every `pub` item of the files under `lib` (as "file:line: name"), with names in
/// `outside` or `exposed` left out.
fn unused(lib: &[(String, String)], outside: &BTreeSet<String>, exposed: &BTreeSet<&str>) -> Vec<String> {
    let mut found = Vec::new();
    for (file, text) in lib {
        for (n, line) in text.lines().enumerate() {
            if let Some(name) = pub_name(line) {
                if !outside.contains(name) && !exposed.contains(name) {
                    found.push(format!("{file}:{}: `{name}`", n + 1));
                }
            }
        }
    }
    found
}

fn library() -> Vec<(String, String)> {
    let root = workspace();
    let mut files = Vec::new();
    rust_files(&root.join("server/src"), &mut files);
    files
        .into_iter()
        .filter(|f| !f.starts_with(root.join("server/src/bin")))
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (f.strip_prefix(&root).unwrap_or(&f).display().to_string(), text)
        })
        .collect()
}

fn outside() -> BTreeSet<String> {
    let root = workspace();
    let mut files = Vec::new();
    for dir in ["server/src/bin", "server/tests", "src", "tests", "bench", "client/tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    let this = Path::new(file!()).file_name().map(|n| n.to_os_string());
    let mut names = BTreeSet::new();
    for file in files {
        // This file names the exposed types; it must not count as their user.
        if file.starts_with(root.join("server/tests")) && file.file_name().map(|n| n.to_os_string()) == this {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        names.extend(words(&text).map(str::to_string));
    }
    names
}

#[test]
fn every_pub_item_of_the_server_is_used_outside_it() {
    let exposed: BTreeSet<&str> = EXPOSED.iter().map(|(name, _)| *name).collect();
    let found = unused(&library(), &outside(), &exposed);
    assert!(
        found.is_empty(),
        "{} `pub` item(s) of server/src that nothing outside the crate names: make them pub(crate), \
         or list them in EXPOSED with the signature that needs them:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn every_exposed_name_is_still_pub() {
    let declared: BTreeSet<String> = library()
        .iter()
        .flat_map(|(_, text)| text.lines().filter_map(pub_name).map(str::to_string).collect::<Vec<_>>())
        .collect();
    let stale: Vec<&str> = EXPOSED.iter().map(|(name, _)| *name).filter(|name| !declared.contains(*name)).collect();
    assert!(stale.is_empty(), "EXPOSED lists names no longer pub in server/src: {stale:?}");
}

#[test]
fn a_pub_item_nobody_outside_names_is_refused() {
    let lib = vec![(
        "server/src/x.rs".to_string(),
        "pub struct Used;\npub(crate) fn inner() {}\npub fn forgotten() {}\npub struct S {\n    pub field: u8,\n}\n"
            .to_string(),
    )];
    let outside: BTreeSet<String> = ["Used".to_string()].into();
    let found = unused(&lib, &outside, &BTreeSet::new());
    assert_eq!(found, ["server/src/x.rs:3: `forgotten`", "server/src/x.rs:4: `S`", "server/src/x.rs:5: `field`"]);
}
