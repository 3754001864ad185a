//! Outside records of who held a lock: files that holders append whole lines to
//! ("enter <token> ...", "exit <token>"), checked after the fact.

use std::path::{Path, PathBuf};
use ward_testkit::TempDir;

/// A record file in a fresh scratch directory (removed on drop, kept when the test fails).
pub struct RecordFile {
    /// `None` only while dropping.
    dir: Option<TempDir>,
    path: PathBuf,
}

impl RecordFile {
    pub fn new(what: &str) -> RecordFile {
        let dir = TempDir::new(what);
        let path = dir.path().join("record.txt");
        RecordFile { dir: Some(dir), path }
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
        if let (true, Some(dir)) = (std::thread::panicking(), self.dir.take()) {
            dir.keep();
            eprintln!("record kept for inspection: {}", self.path.display());
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

/// What a record of sections that may overlap showed.
#[derive(Debug, Default)]
pub struct Overlaps {
    /// Completed enter/exit pairs.
    pub count: usize,
    /// The most sections open at once.
    pub most_at_once: usize,
}

/// The kind and token of a record line: `("enter", token, rest)` or `("exit", token, "")`.
fn parse_line(n: usize, line: &str) -> (&str, u64, Vec<&str>) {
    let mut words = line.split_whitespace();
    let kind = words.next().unwrap_or_default();
    let token = words
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("line {}: malformed record line {line:?}", n + 1));
    if kind != "enter" && kind != "exit" {
        panic!("line {}: unknown record line {line:?}", n + 1);
    }
    (kind, token, words.collect())
}

/// Checks a record whose sections may overlap ("enter <token> ...", "exit <token>", one
/// token per section): every exit closes an open section, none is left open, and never
/// more than `limit` are open at once. Panics with the offending line otherwise.
pub fn check_at_most(text: &str, limit: usize) -> Overlaps {
    let mut open = std::collections::HashSet::new();
    let mut seen = Overlaps::default();
    for (n, line) in text.lines().enumerate() {
        match parse_line(n, line) {
            ("enter", token, _) => {
                assert!(open.insert(token), "line {}: token {token} entered twice", n + 1);
                assert!(open.len() <= limit, "line {}: {} sections open at once (at most {limit})", n + 1, open.len());
                seen.most_at_once = seen.most_at_once.max(open.len());
                seen.count += 1;
            }
            (_, token, _) => assert!(open.remove(&token), "line {}: {line:?} closes no open section", n + 1),
        }
    }
    assert!(open.is_empty(), "the record ends inside sections {open:?}");
    seen
}

/// What a read/write record showed.
#[derive(Debug, Default)]
pub struct ReadWrite {
    pub reads: usize,
    pub writes: usize,
    /// The most read sections open at once.
    pub most_readers: usize,
    /// The most processes with a read section open at once (for enter lines that go on
    /// "R <pid>/<k>").
    pub most_reader_processes: usize,
}

/// Checks a read/write record ("enter <token> R|W ...", "exit <token>"): a writer's section
/// never overlaps any other section, readers' sections overlap only each other, every exit
/// closes an open section and none is left open. Tokens follow the queue: a writer's is
/// above every token entered before it, a reader's above every earlier writer's.
pub fn check_read_write(text: &str) -> ReadWrite {
    // Open read sections: token -> the pid they name.
    let mut readers = std::collections::HashMap::new();
    let mut writer: Option<u64> = None;
    let (mut highest, mut highest_writer) = (0u64, 0u64);
    let mut seen = ReadWrite::default();
    for (n, line) in text.lines().enumerate() {
        match parse_line(n, line) {
            ("enter", token, rest) => {
                if let Some(w) = writer {
                    panic!("line {}: overlap: {line:?} while writer {w} is inside", n + 1);
                }
                match rest.first().copied() {
                    Some("W") => {
                        assert!(
                            readers.is_empty(),
                            "line {}: writer {token} enters while readers {readers:?} are inside",
                            n + 1
                        );
                        assert!(token > highest, "line {}: writer token {token} not above {highest}", n + 1);
                        writer = Some(token);
                        highest_writer = token;
                        seen.writes += 1;
                    }
                    Some("R") => {
                        assert!(
                            token > highest_writer,
                            "line {}: reader token {token} not above writer {highest_writer}",
                            n + 1
                        );
                        let pid = rest.get(1).and_then(|who| who.split('/').next()).unwrap_or_default();
                        assert!(readers.insert(token, pid).is_none(), "line {}: token {token} entered twice", n + 1);
                        seen.most_readers = seen.most_readers.max(readers.len());
                        let processes: std::collections::HashSet<&&str> = readers.values().collect();
                        seen.most_reader_processes = seen.most_reader_processes.max(processes.len());
                        seen.reads += 1;
                    }
                    _ => panic!("line {}: {line:?} says neither R nor W", n + 1),
                }
                highest = highest.max(token);
            }
            (_, token, _) => {
                if writer == Some(token) {
                    writer = None;
                } else {
                    assert!(readers.remove(&token).is_some(), "line {}: {line:?} closes no open section", n + 1);
                }
            }
        }
    }
    assert!(writer.is_none() && readers.is_empty(), "the record ends inside a section");
    seen
}
