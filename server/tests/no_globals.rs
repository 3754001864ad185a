//! No process-global state in the server, read from its sources: two servers in one process
//! (the tests' in-process servers, the members of a simulated ensemble) share nothing but the
//! code. Every `static` is immutable data (no atomics, locks, cells or lazily set values), and
//! only the binary's configuration (`server/src/bin/ward-server/args/env.rs`) reads the
//! environment. docs/architecture.md ("No process-global state") names this test.

mod sources;

use sources::{rust_files, workspace};

/// The one file that may read the environment.
const CONFIGURATION: &str = "server/src/bin/ward-server/args/env.rs";

/// What makes a `static` mutable state, or a value shared by the whole process.
const MUTABLE: &[&str] = &["Atomic", "Mutex", "RwLock", "Cell", "OnceLock", "LazyLock", "Once", "static mut"];

/// What reads the environment at run time (`env!` reads it at build time, and is fine).
const ENV_READS: &[&str] = &["env::var(", "env::var_os(", "env::vars(", "env::vars_os("];

/// Lines of `text` (named `file`) that hold process-global state or read the environment.
fn globals(file: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("").trim_start();
        let is_static =
            code.starts_with("static ") || code.starts_with("pub static ") || code.starts_with("pub(crate) static ");
        let shared = code.contains("thread_local!") || code.contains("lazy_static!");
        if shared || (is_static && MUTABLE.iter().any(|m| code.contains(m))) {
            found.push(format!("{file}:{}: process-global state: {}", n + 1, line.trim()));
        }
        if file != CONFIGURATION && ENV_READS.iter().any(|r| code.contains(r)) {
            found.push(format!("{file}:{}: reads the environment outside {CONFIGURATION}: {}", n + 1, line.trim()));
        }
    }
    found
}

#[test]
fn the_server_keeps_no_process_global_state_and_reads_the_environment_in_one_place() {
    let root = workspace();
    let mut sources = Vec::new();
    rust_files(&root.join("server/src"), &mut sources);
    let mut found = Vec::new();
    for path in sources {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.strip_prefix(&root).unwrap_or(&path).display().to_string();
        found.extend(globals(&name, &text));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_static_counter_and_a_stray_environment_read_are_found() {
    let text = "static BOUNDS: [u64; 3] = [1, 2, 3];\n\
                pub(crate) static COUNT: AtomicU64 = AtomicU64::new(0);\n\
                let n = std::env::var(\"WARD_X\");\n\
                // std::env::var(\"IN_A_COMMENT\")\n";
    let found = globals("server/src/x.rs", text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("server/src/x.rs:2: process-global state"));
    assert!(found[1].starts_with("server/src/x.rs:3: reads the environment"));
    assert!(globals(CONFIGURATION, "let n = std::env::var(\"WARD_X\");").is_empty());
}
