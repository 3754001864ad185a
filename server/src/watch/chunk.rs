//! A run of recorded changes, packed into one buffer for the history ([`super::history`]).
//!
//! A change as a struct costs a 40-byte entry and a path allocation of its own; packed, it
//! costs its path's difference from the change before it and four small numbers. A create
//! records the node (`/app/jobs/job-0000000042` after `/app/jobs/job-0000000041`: the last two
//! bytes differ) and its parent (`/app/jobs`, a prefix of the path before it: no bytes at
//! all), so a create takes about 11 bytes where it took about 150 of memory.
//!
//! Each change is, in order: the zxid's increase over the change before it (varint), its
//! index in its command (varint), its kind (a byte), how many bytes its path shares with the
//! reference path (varint), and the rest of its path (varint length, then bytes). The
//! reference is the last path recorded that was not a prefix of the reference before it, so
//! that a parent's change between two siblings' does not cut what the siblings share. The
//! first change of a chunk is taken relative to its own zxid and an empty reference, so
//! decoding starts at a chunk's beginning.

use ward_proto::{EventKind, Position, Zxid};

/// One change, as a watch event would report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub position: Position,
    pub kind: EventKind,
    pub path: String,
}

pub(super) struct Chunk {
    /// The position of the chunk's first change.
    first: Position,
    /// The position of the chunk's last change.
    pub last: Position,
    /// The path the next change is packed against.
    reference: String,
    bytes: Vec<u8>,
}

impl Chunk {
    /// An empty chunk, which holds `capacity` bytes of changes before it grows.
    pub(super) fn new(capacity: usize) -> Chunk {
        let nowhere = Position::default();
        Chunk { first: nowhere, last: nowhere, reference: String::new(), bytes: Vec::with_capacity(capacity) }
    }

    /// The memory the chunk holds, as the history counts it.
    pub(super) fn size(&self) -> usize {
        self.bytes.capacity() + self.reference.capacity() + std::mem::size_of::<Chunk>()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// What the chunk can take before it grows.
    pub(super) fn spare(&self) -> usize {
        self.bytes.capacity() - self.bytes.len()
    }

    /// Appends a change. `None`, and nothing appended, if it comes before the chunk's last
    /// change: the chunk's order is its positions' order.
    pub(super) fn push(&mut self, position: Position, kind: EventKind, path: &str) -> Option<()> {
        let base = if self.bytes.is_empty() {
            self.first = position;
            position.zxid
        } else if position > self.last {
            self.last.zxid
        } else {
            return None;
        };
        let rise = position.zxid.checked_sub(base)?;
        let shared = shared_prefix(&self.reference, path);
        put_varint(&mut self.bytes, rise);
        put_varint(&mut self.bytes, u64::from(position.index));
        self.bytes.push(kind_byte(kind));
        put_varint(&mut self.bytes, shared as u64);
        let rest = &path.as_bytes()[shared..];
        put_varint(&mut self.bytes, rest.len() as u64);
        self.bytes.extend_from_slice(rest);
        self.last = position;
        if !rest.is_empty() {
            self.reference.truncate(shared);
            self.reference.push_str(&path[shared..]);
        }
        Some(())
    }

    /// The chunk's changes, oldest first.
    pub(super) fn entries(&self) -> Entries<'_> {
        Entries { rest: &self.bytes, zxid: self.first.zxid, reference: String::new() }
    }
}

pub(super) struct Entries<'a> {
    rest: &'a [u8],
    zxid: Zxid,
    reference: String,
}

impl Iterator for Entries<'_> {
    type Item = Entry;

    /// Stops at the end, or at bytes that `push` cannot have written.
    fn next(&mut self) -> Option<Entry> {
        if self.rest.is_empty() {
            return None;
        }
        let decoded = self.decode();
        if decoded.is_none() {
            self.rest = &[];
        }
        decoded
    }
}

impl Entries<'_> {
    fn decode(&mut self) -> Option<Entry> {
        self.zxid = self.zxid.checked_add(get_varint(&mut self.rest)?)?;
        let index = u32::try_from(get_varint(&mut self.rest)?).ok()?;
        let (&kind, rest) = self.rest.split_first()?;
        self.rest = rest;
        let kind = byte_kind(kind)?;
        let shared = usize::try_from(get_varint(&mut self.rest)?).ok()?;
        let len = usize::try_from(get_varint(&mut self.rest)?).ok()?;
        if len > self.rest.len() || shared > self.reference.len() || !self.reference.is_char_boundary(shared) {
            return None;
        }
        let (suffix, rest) = self.rest.split_at(len);
        self.rest = rest;
        let suffix = std::str::from_utf8(suffix).ok()?;
        let path = if suffix.is_empty() {
            self.reference[..shared].to_string()
        } else {
            self.reference.truncate(shared);
            self.reference.push_str(suffix);
            self.reference.clone()
        };
        Some(Entry { position: Position { zxid: self.zxid, index }, kind, path })
    }
}

/// The length of the longest common prefix of `a` and `b` that ends between characters.
fn shared_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(n) {
        n -= 1;
    }
    n
}

fn kind_byte(kind: EventKind) -> u8 {
    match kind {
        EventKind::NodeCreated => 0,
        EventKind::NodeDeleted => 1,
        EventKind::NodeDataChanged => 2,
        EventKind::NodeChildrenChanged => 3,
    }
}

fn byte_kind(byte: u8) -> Option<EventKind> {
    Some(match byte {
        0 => EventKind::NodeCreated,
        1 => EventKind::NodeDeleted,
        2 => EventKind::NodeDataChanged,
        3 => EventKind::NodeChildrenChanged,
        _ => return None,
    })
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn get_varint(input: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = input.split_first()?;
        *input = rest;
        value |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(zxid: Zxid, index: u32) -> Position {
        Position { zxid, index }
    }

    #[test]
    fn changes_come_back_as_they_went_in() {
        let changes = [
            (at(7, 0), EventKind::NodeCreated, "/app/jobs/job-0000000041"),
            (at(7, 1), EventKind::NodeChildrenChanged, "/app/jobs"),
            (at(8, 0), EventKind::NodeCreated, "/app/jobs/job-0000000042"),
            (at(8, 1), EventKind::NodeChildrenChanged, "/app/jobs"),
            (at(300, 0), EventKind::NodeDataChanged, "/"),
            (at(300, 1), EventKind::NodeDeleted, "/ünïcödé/é"),
            (at(u64::MAX - 1, 70_000), EventKind::NodeDeleted, "/ünïcödé/è"),
            (at(u64::MAX, u32::MAX), EventKind::NodeDataChanged, "/ünïcödé/è"),
        ];
        let mut chunk = Chunk::new(64);
        for (position, kind, path) in changes {
            assert_eq!(chunk.push(position, kind, path), Some(()));
        }
        let back: Vec<_> = chunk.entries().map(|e| (e.position, e.kind, e.path)).collect();
        let sent: Vec<_> = changes.iter().map(|(p, k, path)| (*p, *k, path.to_string())).collect();
        assert_eq!(back, sent);
        assert_eq!(chunk.last, at(u64::MAX, u32::MAX));
    }

    /// What the history's memory budget buys: the node and its parent's children, per create.
    #[test]
    fn a_create_in_sequence_packs_into_a_few_bytes() {
        let mut chunk = Chunk::new(1 << 16);
        for n in 1..=1000u64 {
            let path = format!("/app/jobs/job-{n:010}");
            assert!(chunk.push(at(n, 0), EventKind::NodeCreated, &path).is_some());
            assert!(chunk.push(at(n, 1), EventKind::NodeChildrenChanged, "/app/jobs").is_some());
        }
        assert!(chunk.len() <= 1000 * 12, "{} bytes for 1,000 creates", chunk.len());
        assert_eq!(chunk.entries().count(), 2000);
    }

    #[test]
    fn a_change_out_of_order_is_refused() {
        let mut chunk = Chunk::new(64);
        assert_eq!(chunk.push(at(5, 2), EventKind::NodeCreated, "/a"), Some(()));
        assert_eq!(chunk.push(at(5, 1), EventKind::NodeCreated, "/a"), None, "before the last");
        assert_eq!(chunk.push(at(5, 2), EventKind::NodeCreated, "/b"), None, "the same position twice");
        assert_eq!(chunk.push(at(4, 9), EventKind::NodeCreated, "/b"), None);
        assert_eq!(chunk.entries().count(), 1);
    }

    #[test]
    fn bytes_push_cannot_write_end_the_entries() {
        let mut chunk = Chunk::new(64);
        assert!(chunk.push(at(1, 0), EventKind::NodeCreated, "/a").is_some());
        chunk.bytes.extend_from_slice(&[0, 0, 9, 0, 0]);
        assert_eq!(chunk.entries().count(), 1, "kind 9 does not exist");
        chunk.bytes.truncate(chunk.bytes.len() - 5);
        chunk.bytes.extend_from_slice(&[0, 1, 0, 0, 5, b'x']);
        assert_eq!(chunk.entries().count(), 1, "a path longer than what is left");
        chunk.bytes.truncate(chunk.bytes.len() - 6);
        chunk.bytes.extend_from_slice(&[0xff; 11]);
        assert_eq!(chunk.entries().count(), 1, "a varint past 64 bits");
    }
}
