//! The docs name the code as it is: every backticked file, module path and `Type::member`
//! in README.md and docs/*.md must exist in the workspace's sources, or be a name of another
//! project on the allow-list (`names.rs`). docs/benchmarks/ is left out: its dated records
//! describe the code as it was on their day.
//!
//! * [`lex`]: enough of a Rust lexer to read definitions; [`index`]: what the code defines;
//! * [`names`]: what a doc names, and whether it exists.

mod index;
mod lex;
mod names;

use index::Index;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn docs(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![root.join("README.md")];
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        docs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "md")));
    }
    docs.sort();
    docs
}

#[test]
fn every_name_the_docs_give_exists_in_the_code() {
    let root = workspace();
    let index = Index::of_workspace(&root);
    let mut missing = Vec::new();
    for doc in docs(&root) {
        let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("reading {}: {e}", doc.display()));
        let rel = doc.strip_prefix(&root).unwrap_or(&doc).display().to_string();
        for gap in names::missing(&text, &index) {
            missing.push(format!("{rel}:{}: `{}`: {}", gap.line, gap.name, gap.why));
        }
    }
    assert!(
        missing.is_empty(),
        "{} name(s) in the docs match nothing in the code (rename them, or add another project's names to tests/docs/names.rs's ALLOWED):\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn a_doc_naming_what_the_code_lacks_is_refused() {
    let index = Index::of_workspace(&workspace());
    let doc = "The writer (`conn::writer`, `server/src/conn/writer.rs`) runs `WriterLoop::serve`;\n\
               see `server/src/conn/nowhere.rs`, `WriterLoop::no_such_method`, `NoSuchType::run`\n\
               and `conn::no_such_module::thing`; `openraft::Raft` is another project's.\n";
    let gaps: Vec<String> = names::missing(doc, &index).into_iter().map(|g| g.name).collect();
    assert_eq!(
        gaps,
        ["server/src/conn/nowhere.rs", "WriterLoop::no_such_method", "NoSuchType::run", "conn::no_such_module::thing"]
    );
}
