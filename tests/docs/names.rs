//! What a doc names and whether the code has it. Backticked spans are read outside fenced
//! blocks; inside them (diagrams, examples) only `Type::member` names are, since commands
//! and output there are not names.

use super::index::Index;

/// Names of other projects that the docs cite on purpose (openraft's API, tokio's, the
/// files of ZooKeeper's and openraft's sources), and files that are made, not kept.
const ALLOWED: &[&str] = &[
    // openraft
    "Raft::client_write_ff",
    "Raft::handle_transfer_leader",
    "Raft::install_full_snapshot",
    "Raft::transfer_leader",
    "RaftNetworkV2::full_snapshot",
    "RaftLogReader::read_vote",
    "ReadPolicy::LeaseRead",
    "ReadPolicy::ReadIndex",
    "SnapshotPolicy::LogsSinceLast",
    "raft_core.rs",
    "core/raft_core.rs",
    // tokio-util
    "FramedWrite::with_capacity",
    // redb's design notes
    "docs/implementation.md",
    // ZooKeeper's ACL syntax (scheme `auth`, empty id, every permission)
    "auth::cdrwa",
];

/// The standard library's types and primitives, named as `Type::item` in examples.
const STD_TYPES: &[&str] = &[
    "Duration",
    "Instant",
    "String",
    "Vec",
    "Option",
    "Result",
    "Arc",
    "Box",
    "HashMap",
    "BTreeMap",
    "u8",
    "u16",
    "u32",
    "u64",
    "usize",
    "i32",
    "i64",
    "f64",
    "SystemTime",
];

/// Crates whose paths the docs may name: not ours to check.
const OTHER_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "tokio",
    "tokio_util",
    "openraft",
    "futures",
    "futures_util",
    "serde",
    "postcard",
    "bytes",
    "hyper",
    "rustls",
    "tokio_rustls",
    "loom",
    "dashmap",
    "tracing",
    "clap",
    "rcgen",
    "prometheus_client",
    "turmoil",
    "madsim",
    "kazoo",
    "io",
    "fs",
    "org",
    "java",
    "zookeeper",
    "etcd",
    "libc",
    "nix",
];

const OUR_CRATES: &[&str] = &[
    "crate",
    "self",
    "super",
    "ward",
    "ward_server",
    "ward_client",
    "ward_proto",
    "ward_linearizability",
    "ward_testkit",
    "ward_procs",
    "ward_bench",
];

const FILE_EXTENSIONS: &[&str] =
    &["rs", "md", "sh", "py", "mjs", "js", "toml", "json", "java", "png", "html", "css", "yml", "yaml"];

pub struct Gap {
    pub line: usize,
    pub name: String,
    pub why: &'static str,
}

pub fn missing(doc: &str, index: &Index) -> Vec<Gap> {
    let mut gaps = Vec::new();
    let mut fenced = false;
    for (n, line) in doc.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let names: Vec<&str> = if fenced { type_members_in(line) } else { backticked(line) };
        for name in names {
            if let Some(why) = absent(name, index) {
                gaps.push(Gap { line: n + 1, name: name.to_string(), why });
            }
        }
    }
    gaps
}

fn backticked(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// `Upper::member` runs in a line of a fenced block.
fn type_members_in(line: &str) -> Vec<&str> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    line.split(|c: char| !word(c))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_uppercase()) && w.contains("::") && !w.ends_with(':'))
        .collect()
}

/// Why the code lacks what `name` names, or None where it has it (or it is no name of code).
fn absent(name: &str, index: &Index) -> Option<&'static str> {
    let name = name.trim_start_matches('&').trim_end_matches("()");
    let name = name.strip_suffix("(..)").unwrap_or(name);
    if ALLOWED.contains(&name) {
        return None;
    }
    if is_file(name) {
        let found = index.files.iter().any(|f| f == name || f.ends_with(&format!("/{name}")));
        return (!found).then_some("no such file in the workspace");
    }
    if is_path(name) {
        return absent_path(name, index);
    }
    None
}

fn is_file(name: &str) -> bool {
    let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    let ext = name.rsplit_once('.').map(|(_, ext)| ext);
    plain
        && !name.starts_with(['/', '.', '~'])
        && ext.is_some_and(|e| FILE_EXTENSIONS.contains(&e))
        && !name.contains("..")
}

fn is_path(name: &str) -> bool {
    let segs: Vec<&str> = name.split("::").collect();
    segs.len() >= 2
        && segs.iter().all(|s| {
            s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

fn absent_path(name: &str, index: &Index) -> Option<&'static str> {
    let mut segs: Vec<&str> = name.split("::").collect();
    if OTHER_CRATES.contains(&segs[0]) || STD_TYPES.contains(&segs[0]) {
        return None;
    }
    if OUR_CRATES.contains(&segs[0]) {
        segs.remove(0);
    }
    // A type starts with a capital; a constant (`MAX_REPLY`) is all capitals.
    let is_type =
        |s: &&str| s.starts_with(|c: char| c.is_ascii_uppercase()) && s.chars().any(|c| c.is_ascii_lowercase());
    let upper = segs.iter().position(is_type);
    let modules = &segs[..upper.unwrap_or(segs.len() - 1)];
    if modules.iter().any(|m| !index.modules.contains(*m)) {
        return Some("no such module");
    }
    let Some(at) = upper else {
        let last = segs[segs.len() - 1];
        let found = index.items.contains(last) || index.modules.contains(last) || index.types.contains(last);
        return (!found).then_some("no such function, constant or module");
    };
    let ty = segs[at];
    if !index.types.contains(ty) {
        return Some("no such type");
    }
    match segs.get(at + 1) {
        Some(member) if !index.members.get(ty).is_some_and(|m| m.contains(*member)) => {
            Some("the type has no such method, field, variant or associated item")
        }
        _ => None,
    }
}
