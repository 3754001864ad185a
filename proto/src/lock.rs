//! Lock queues: contender names, and the rule that decides who holds.
//!
//! A lock is a directory of ephemeral-sequential children ordered by their 10-digit
//! sequence suffix (only the suffix, so Ward's contenders queue in one order with those of
//! other ZooKeeper recipes in the same directory). Ward names its own contenders
//!
//! ```text
//! ward-<session:016x>-<tag:016x><infix><sequence:010>
//! ```
//!
//! The session and the client's tag let a retried acquire find the contender an earlier,
//! unanswered attempt created (no orphans after a lost reply). The infix says what kind of
//! contender it is, and matches kazoo's recipes so that kazoo sees Ward's contenders:
//!
//! | infix       | kind       | holds when                                     |
//! |-------------|------------|------------------------------------------------|
//! | `__lock__`  | exclusive  | it is first in the queue                       |
//! | `__rlock__` | shared     | no exclusive contender is ahead of it          |
//! | `__sem__`   | semaphore  | fewer than `permits` contenders are ahead of it |
//!
//! Any other sequential child (Curator's `-lock-`, a plain recipe's node) counts as
//! exclusive. A directory's data may record its semaphore's permits and its lock-delay
//! ([`DirHeader`]).

use crate::ids::SessionId;
use serde::{Deserialize, Serialize};

const SEQ_DIGITS: usize = 10;
const EXCLUSIVE: &str = "__lock__";
const SHARED: &str = "__rlock__";
const SEMAPHORE: &str = "__sem__";

/// What a contender asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockKind {
    /// A mutex, or the write side of a read/write lock.
    Exclusive,
    /// The read side of a read/write lock.
    Shared,
    /// One of `permits` permits; every contender must agree on `permits`.
    Semaphore { permits: u32 },
}

impl LockKind {
    fn infix(self) -> &'static str {
        match self {
            LockKind::Exclusive => EXCLUSIVE,
            LockKind::Shared => SHARED,
            LockKind::Semaphore { .. } => SEMAPHORE,
        }
    }
}

/// The name a Ward contender gets before the server appends the sequence suffix.
pub fn contender_prefix(session: SessionId, tag: u64, kind: LockKind) -> String {
    format!("ward-{:016x}-{tag:016x}{}", session.0, kind.infix())
}

/// What every contender name of one attempt starts with, whatever its kind: how a release
/// finds the contenders of an attempt.
pub fn attempt_prefix(session: SessionId, tag: u64) -> String {
    format!("ward-{:016x}-{tag:016x}__", session.0)
}

/// The session and tag of a Ward contender name.
pub fn parse_contender(name: &str) -> Option<(SessionId, u64)> {
    let rest = name.strip_prefix("ward-")?;
    sequence(rest)?;
    let head = &rest[..rest.len() - SEQ_DIGITS];
    let head = [EXCLUSIVE, SHARED, SEMAPHORE].iter().find_map(|infix| head.strip_suffix(infix))?;
    let (session, tag) = head.split_once('-')?;
    let session = u64::from_str_radix(session, 16).ok()?;
    let tag = u64::from_str_radix(tag, 16).ok()?;
    Some((SessionId(session), tag))
}

/// The sequence suffix of a node name, if it ends in one (10 ASCII digits).
pub fn sequence(name: &str) -> Option<u64> {
    let start = name.len().checked_sub(SEQ_DIGITS)?;
    let digits = name.get(start..)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Exclusive,
    Shared,
    Permit,
}

fn class(name: &str) -> Class {
    let head = &name[..name.len().saturating_sub(SEQ_DIGITS)];
    if head.ends_with(SHARED) {
        Class::Shared
    } else if head.ends_with(SEMAPHORE) {
        Class::Permit
    } else {
        Class::Exclusive
    }
}

/// What a contender asks for, as [`holders`] judges it: `"exclusive"`, `"shared"` or
/// `"permit"` (for people and tools that show queues).
pub fn contender_kind(name: &str) -> &'static str {
    match class(name) {
        Class::Exclusive => "exclusive",
        Class::Shared => "shared",
        Class::Permit => "permit",
    }
}

/// Contenders among `children` in queue order (lowest sequence first). Children without a
/// sequence suffix are not contenders.
pub fn queue<'a>(children: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut contenders: Vec<(u64, &str)> =
        children.into_iter().filter_map(|name| sequence(name).map(|seq| (seq, name))).collect();
    contenders.sort_unstable();
    contenders.into_iter().map(|(_, name)| name).collect()
}

/// Which contenders of `queue` (in queue order) hold: one flag per contender. `permits`
/// applies to semaphore contenders.
pub fn holders(queue: &[&str], permits: u32) -> Vec<bool> {
    let mut exclusive_ahead = false;
    let mut permits_taken = 0u32;
    queue
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let holds = match class(name) {
                Class::Exclusive => index == 0,
                Class::Shared => !exclusive_ahead,
                Class::Permit => permits_taken < permits,
            };
            match class(name) {
                Class::Exclusive => exclusive_ahead = true,
                Class::Permit => permits_taken += 1,
                Class::Shared => {}
            }
            holds
        })
        .collect()
}

const SEMAPHORE_HEADER: &str = "ward-semaphore";
const LOCK_HEADER: &str = "ward-lock";
const PERMITS: &str = "permits=";
const LOCK_DELAY: &str = "lock-delay-ms=";

/// What a lock directory's data records about its lock, set by the first acquire that asks
/// while the queue is empty: a semaphore's permits, and the lock-delay. Written as text, so
/// that `ward get` and zkCli show it:
///
/// ```text
/// ward-semaphore permits=3
/// ward-semaphore permits=3 lock-delay-ms=5000
/// ward-lock lock-delay-ms=5000
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirHeader {
    /// A semaphore's permits; `None` for a mutex or read/write lock.
    pub permits: Option<u32>,
    /// How long after a holder's session ended without a release the next contender waits
    /// (0: none, ZooKeeper's behaviour).
    pub lock_delay_ms: u64,
}

impl DirHeader {
    /// The header in a directory's `data`: empty data is the default header; `None` if the
    /// data is something else (the application's own).
    pub fn parse(data: &[u8]) -> Option<DirHeader> {
        if data.is_empty() {
            return Some(DirHeader::default());
        }
        let text = std::str::from_utf8(data).ok()?;
        let mut words = text.split(' ');
        let semaphore = match words.next()? {
            SEMAPHORE_HEADER => true,
            LOCK_HEADER => false,
            _ => return None,
        };
        let mut header = DirHeader::default();
        for word in words {
            if let Some(permits) = word.strip_prefix(PERMITS) {
                header.permits = Some(permits.parse().ok()?);
            } else if let Some(delay) = word.strip_prefix(LOCK_DELAY) {
                header.lock_delay_ms = delay.parse().ok()?;
            } else {
                return None;
            }
        }
        (semaphore == header.permits.is_some()).then_some(header)
    }

    /// The data that records this header (empty for the default one).
    pub fn encode(&self) -> Vec<u8> {
        let mut text = match self.permits {
            Some(permits) => format!("{SEMAPHORE_HEADER} {PERMITS}{permits}"),
            None if self.lock_delay_ms == 0 => return Vec::new(),
            None => LOCK_HEADER.to_string(),
        };
        if self.lock_delay_ms != 0 {
            text.push_str(&format!(" {LOCK_DELAY}{}", self.lock_delay_ms));
        }
        text.into_bytes()
    }
}

/// The data of a semaphore's directory: it fixes the number of permits.
pub fn semaphore_header(permits: u32) -> Vec<u8> {
    DirHeader { permits: Some(permits), lock_delay_ms: 0 }.encode()
}

/// The permits a directory's data fixes, if it is a semaphore header.
pub fn parse_semaphore_header(data: &[u8]) -> Option<u32> {
    DirHeader::parse(data)?.permits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(kind: LockKind, seq: u32) -> String {
        format!("{}{seq:010}", contender_prefix(SessionId(0xabc), 7, kind))
    }

    #[test]
    fn names_round_trip_and_order_by_suffix_only() {
        let ours = name(LockKind::Exclusive, 42);
        assert_eq!(ours, "ward-0000000000000abc-0000000000000007__lock__0000000042");
        assert_eq!(parse_contender(&ours), Some((SessionId(0xabc), 7)));
        assert_eq!(parse_contender(&name(LockKind::Shared, 1)), Some((SessionId(0xabc), 7)));
        assert_eq!(parse_contender("0f1e__lock__0000000001"), None);
        let kazoo = "8a6c0d2f__lock__0000000041";
        let curator = "_c_2d5e-lock-0000000043";
        assert_eq!(queue([ours.as_str(), curator, "not-a-contender", kazoo]), vec![kazoo, &ours, curator]);
        assert_eq!(sequence("x12345"), None);
    }

    #[test]
    fn readers_share_until_a_writer_and_permits_count() {
        let (w, r) = (LockKind::Exclusive, LockKind::Shared);
        let names = [name(r, 1), name(r, 2), name(w, 3), name(r, 4), "k__rlock__0000000005".to_string()];
        let q: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(holders(&q, 0), [true, true, false, false, false]);
        let names = [name(w, 1), name(r, 2)];
        let q: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(holders(&q, 0), [true, false]);
        let s = LockKind::Semaphore { permits: 2 };
        let names = [name(s, 1), name(s, 2), name(s, 3)];
        let q: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(holders(&q, 2), [true, true, false]);
        assert_eq!(parse_semaphore_header(&semaphore_header(3)), Some(3));
        assert_eq!(parse_semaphore_header(b"other"), None);
    }

    /// The header keeps the semaphore's old form, and adds the lock-delay as a word of its own.
    #[test]
    fn directory_headers_round_trip_and_foreign_data_is_no_header() {
        assert_eq!(semaphore_header(3), b"ward-semaphore permits=3");
        let cases = [
            (DirHeader::default(), ""),
            (DirHeader { permits: Some(2), lock_delay_ms: 0 }, "ward-semaphore permits=2"),
            (DirHeader { permits: Some(2), lock_delay_ms: 5000 }, "ward-semaphore permits=2 lock-delay-ms=5000"),
            (DirHeader { permits: None, lock_delay_ms: 250 }, "ward-lock lock-delay-ms=250"),
        ];
        for (header, text) in cases {
            assert_eq!(header.encode(), text.as_bytes());
            assert_eq!(DirHeader::parse(text.as_bytes()), Some(header), "{text:?}");
        }
        assert_eq!(parse_semaphore_header(b"ward-semaphore permits=2 lock-delay-ms=9"), Some(2));
        for foreign in ["config", "ward-lock permits=2", "ward-semaphore lock-delay-ms=1", "ward-lock lock-delay-ms=x"]
        {
            assert_eq!(DirHeader::parse(foreign.as_bytes()), None, "{foreign:?}");
        }
    }
}
