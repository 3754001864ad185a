//! Outside records of who held a lock: files that holders append whole lines to
//! ("enter <token> ...", "exit <token>"), checked after the fact.

use std::path::{Path, PathBuf};

/// A record file in a fresh scratch directory (removed on drop).
pub struct RecordFile {
    dir: PathBuf,
    path: PathBuf,
}

impl RecordFile {
    pub fn new(what: &str) -> RecordFile {
        let dir = super::server::scratch_dir(what);
        let path = dir.join("record.txt");
        RecordFile { dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn path_str(&self) -> String {
        self.path.to_str().expect("UTF-8 temp path").to_string()
    }

    /// The whole file ("" if nobody wrote yet).
    pub fn read(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap_or_default()
    }
}

impl Drop for RecordFile {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("record kept for inspection: {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// What an exclusive-section record showed.
#[derive(Debug)]
pub struct Sections {
    /// Completed enter/exit pairs.
    pub count: usize,
    /// What each enter line said after its token (who entered), in order.
    pub who: Vec<String>,
}

/// Checks that enter/exit lines never overlap (every enter follows the previous exit, and
/// the exit names the token of its enter) and that tokens strictly increase. Panics with
/// the offending line otherwise.
pub fn check_exclusive(text: &str) -> Sections {
    let mut inside: Option<u64> = None;
    let mut tokens: Vec<u64> = Vec::new();
    let mut who = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let kind = words.next();
        let token: u64 = words
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("line {}: malformed record line {line:?}", n + 1));
        match kind {
            Some("enter") => {
                if let Some(holder) = inside {
                    panic!("line {}: overlap: {line:?} while token {holder} is inside", n + 1);
                }
                if let Some(&last) = tokens.last() {
                    assert!(token > last, "line {}: token {token} not above the previous {last}", n + 1);
                }
                inside = Some(token);
                tokens.push(token);
                who.push(words.collect::<Vec<_>>().join(" "));
            }
            Some("exit") => {
                assert_eq!(inside, Some(token), "line {}: {line:?} does not close the open section", n + 1);
                inside = None;
            }
            _ => panic!("line {}: unknown record line {line:?}", n + 1),
        }
    }
    assert_eq!(inside, None, "the record ends inside a section");
    Sections { count: tokens.len(), who }
}
