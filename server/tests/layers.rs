//! The server's import graph, read from its sources: which top-level module of
//! `server/src` names which other (`crate::x` anywhere outside a comment, tests included).
//! Two promises of docs/architecture.md ("Layers") hold on it:
//!
//! * the connection's layers stack without a cycle: `metrics`, `core`, `conn`, `watch`,
//!   `session`, `local`, each naming only modules before it in that list;
//! * the only cycles in the whole graph are the ones named below, each one concept spread over
//!   several modules; a new cycle fails here with the modules that make it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Lower first: each may name only those before it.
const STACK: &[&str] = &["metrics", "core", "conn", "watch", "session", "local"];

/// Cycles that are one concept: the state machine's data (a command's changes, the tree's
/// nodes and their ACLs), its locks (applied to the state, read from it), and the replication
/// (the peer link carries Raft's own types, and Raft talks through it).
const ONE_CONCEPT: &[&[&str]] = &[&["acl", "command", "tree"], &["lock", "state"], &["peer", "raft"]];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules: BTreeSet<String> = std::fs::read_dir(&src)
        .expect("server/src")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|m| m != "lib" && m != "bin")
        .collect();
    let mut graph = Graph::new();
    for module in &modules {
        let names = graph.entry(module.clone()).or_default();
        for file in sources(&src, module) {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for named in crate_paths(&text) {
                if named != *module && modules.contains(&named) {
                    names.insert(named);
                }
            }
        }
    }
    graph
}

/// `src/<module>.rs`, or every `.rs` file under `src/<module>/`.
fn sources(src: &Path, module: &str) -> Vec<std::path::PathBuf> {
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let mut files = Vec::new();
    let mut dirs = vec![src.join(module)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The first segment after every `crate::` outside `//` comments.
fn crate_paths(text: &str) -> Vec<String> {
    let mut named = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let whole_word = !code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            if whole_word && !name.is_empty() {
                named.push(name);
            }
        }
    }
    named
}

/// The graph's strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(graph: &Graph) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    component.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

fn shown(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(m, names)| format!("  {m} -> {}", names.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_connection_layers_stack_without_a_cycle() {
    let graph = graph();
    let mut upward = Vec::new();
    for (at, module) in STACK.iter().enumerate() {
        let names = graph.get(*module).unwrap_or_else(|| panic!("no module {module} in server/src"));
        for higher in &STACK[at + 1..] {
            if names.contains(*higher) {
                upward.push(format!("{module} names {higher}"));
            }
        }
    }
    assert!(upward.is_empty(), "a lower layer names a higher one: {}\n{}", upward.join("; "), shown(&graph));
}

#[test]
fn the_only_cycles_are_one_concept_each() {
    let graph = graph();
    let allowed: Vec<BTreeSet<String>> =
        ONE_CONCEPT.iter().map(|group| group.iter().map(|m| m.to_string()).collect()).collect();
    let unexpected: Vec<_> = cycles(&graph).into_iter().filter(|c| !allowed.contains(c)).collect();
    assert!(unexpected.is_empty(), "module cycles: {unexpected:?}\n{}", shown(&graph));
}

/// The checks see a cycle and an upward name when there is one.
#[test]
fn a_cycle_and_a_path_are_found() {
    assert_eq!(
        crate_paths("use crate::conn::outbox; // crate::local\nlet x = crate::core::Core::new();"),
        ["conn", "core"]
    );
    let mut graph = Graph::new();
    for (from, to) in [("conn", "local"), ("local", "conn"), ("local", "core")] {
        graph.entry(from.into()).or_default().insert(to.into());
    }
    graph.entry("core".into()).or_default();
    assert_eq!(cycles(&graph), vec![BTreeSet::from(["conn".to_string(), "local".to_string()])]);
}
