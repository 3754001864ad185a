//! A node's record: its fields, its name and its data in one allocation.
//!
//! Every znode pays for its record, so the record stores only what it must. Most nodes are
//! leaves that were created and never changed: their `mzxid` and `pzxid` are their `czxid`,
//! their `mtime` is their `ctime`, their versions and counters are 0, their owner is 0 and
//! their ACL the open one. So the record starts with a word of flags saying which of those
//! fields differ from that default, and holds only the ones that do, after the fields every
//! node has (parent, `czxid`, `ctime`) and its name. A fresh leaf's fields then take 22
//! bytes instead of 68, and with its name and data it is one allocation rather than three
//! (node, name, data). The parent and the name come at fixed places, first: they are what
//! the index and the child lists read on every probe and comparison.
//!
//! Layout, little-endian:
//!
//! ```text
//! flags u16 | parent u32 | czxid u64 | ctime i64 | name length (LEB128) | name |
//! [mzxid u64] [pzxid u64] [mtime i64] [version i32] [cversion i32] [child_creates i32]
//! [owner u64] [acl u32] | data
//! ```
//!
//! A change that keeps the same optional fields is written in place; one that adds or drops
//! an optional field, or changes the data, builds a new record (a copy of a few hundred
//! bytes).
//! Everything here is safe code: fields are read and written through byte slices.

use crate::acl::table::{AclId, OPEN};
use ward_proto::Zxid;

/// A node's fields, decoded. What the record stores, in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fields {
    /// The parent's id in the slab (the root is its own parent).
    pub parent: u32,
    pub czxid: Zxid,
    pub mzxid: Zxid,
    pub pzxid: Zxid,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub(crate) child_creates: i32,
    /// `ephemeralOwner`'s word ([`super::NodeKind`]'s encoding).
    pub owner: u64,
    pub acl: AclId,
    /// Null data, which only ZooKeeper's protocol can say (see `znode.rs`).
    pub null: bool,
}

impl Fields {
    /// A node made at `zxid` and `time_ms`: every optional field at its default.
    pub(crate) fn new(parent: u32, zxid: Zxid, time_ms: i64) -> Fields {
        Fields {
            parent,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time_ms,
            mtime: time_ms,
            version: 0,
            cversion: 0,
            child_creates: 0,
            owner: 0,
            acl: OPEN,
            null: false,
        }
    }

    /// Which optional fields differ from their defaults, as the record's flags.
    fn flags(&self) -> u16 {
        let present = [
            self.mzxid != self.czxid,
            self.pzxid != self.czxid,
            self.mtime != self.ctime,
            self.version != 0,
            self.cversion != 0,
            self.child_creates != 0,
            self.owner != 0,
            self.acl != OPEN,
            self.null,
        ];
        present.iter().enumerate().fold(0, |flags, (bit, &on)| flags | (u16::from(on) << bit))
    }

    /// The fixed fields' bytes: flags, parent, czxid, ctime.
    fn fixed(&self) -> [u8; FIXED] {
        let mut out = [0; FIXED];
        out[..2].copy_from_slice(&self.flags().to_le_bytes());
        out[2..6].copy_from_slice(&self.parent.to_le_bytes());
        out[6..14].copy_from_slice(&self.czxid.to_le_bytes());
        out[14..].copy_from_slice(&self.ctime.to_le_bytes());
        out
    }

    /// Appends the optional fields that differ from their defaults.
    fn push_optional(&self, out: &mut Vec<u8>) {
        let flags = self.flags();
        let optional: [(u16, &[u8]); 8] = [
            (MZXID, &self.mzxid.to_le_bytes()),
            (PZXID, &self.pzxid.to_le_bytes()),
            (MTIME, &self.mtime.to_le_bytes()),
            (VERSION, &self.version.to_le_bytes()),
            (CVERSION, &self.cversion.to_le_bytes()),
            (CREATES, &self.child_creates.to_le_bytes()),
            (OWNER, &self.owner.to_le_bytes()),
            (ACL, &self.acl.to_le_bytes()),
        ];
        for (bit, bytes) in optional {
            if flags & bit != 0 {
                out.extend_from_slice(bytes);
            }
        }
    }
}

const MZXID: u16 = 1;
const PZXID: u16 = 1 << 1;
const MTIME: u16 = 1 << 2;
const VERSION: u16 = 1 << 3;
const CVERSION: u16 = 1 << 4;
const CREATES: u16 = 1 << 5;
const OWNER: u16 = 1 << 6;
const ACL: u16 = 1 << 7;
const NULL: u16 = 1 << 8;
/// Flags, parent, czxid, ctime.
const FIXED: usize = 2 + 4 + 8 + 8;

/// The optional fields' widths, in flag order.
const WIDTHS: [(u16, usize); 8] =
    [(MZXID, 8), (PZXID, 8), (MTIME, 8), (VERSION, 4), (CVERSION, 4), (CREATES, 4), (OWNER, 8), (ACL, 4)];

/// The length of the optional fields these flags say are there.
fn optional_len(flags: u16) -> usize {
    WIDTHS.iter().filter(|(bit, _)| flags & bit != 0).map(|(_, w)| w).sum::<usize>()
}

/// See the module's doc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record(Box<[u8]>);

impl Record {
    pub(crate) fn new(fields: &Fields, name: &str, data: &[u8]) -> Record {
        let mut len = u32::try_from(name.len()).unwrap_or(u32::MAX);
        let len_bytes = (1..5).find(|&n| u64::from(len) < 1 << (7 * n)).unwrap_or(5);
        let size = FIXED + len_bytes + name.len() + optional_len(fields.flags()) + data.len();
        // At its exact size, so that the allocation is made once and never trimmed.
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&fields.fixed());
        loop {
            let low = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(low);
                break;
            }
            out.push(low | 0x80);
        }
        out.extend_from_slice(name.as_bytes());
        fields.push_optional(&mut out);
        out.extend_from_slice(data);
        Record(out.into_boxed_slice())
    }

    fn flags(&self) -> u16 {
        u16::from_le_bytes([self.0[0], self.0[1]])
    }

    fn u32_at(&self, at: usize) -> u32 {
        let mut b = [0; 4];
        b.copy_from_slice(&self.0[at..at + 4]);
        u32::from_le_bytes(b)
    }

    fn u64_at(&self, at: usize) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.0[at..at + 8]);
        u64::from_le_bytes(b)
    }

    /// The parent's id: at a fixed place, as the index reads it for every probe.
    pub(crate) fn parent(&self) -> u32 {
        self.u32_at(2)
    }

    /// The name's bounds within the record.
    fn name_span(&self) -> (usize, usize) {
        let (mut at, mut len, mut shift) = (FIXED, 0usize, 0);
        while let Some(&b) = self.0.get(at) {
            len |= usize::from(b & 0x7f) << shift;
            at += 1;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        (at, (at + len).min(self.0.len()))
    }

    pub(crate) fn name_bytes(&self) -> &[u8] {
        let (start, end) = self.name_span();
        &self.0[start..end]
    }

    /// The node's name. It was a `&str` when the record was made, so it always converts.
    pub(crate) fn name(&self) -> &str {
        std::str::from_utf8(self.name_bytes()).unwrap_or_default()
    }

    /// The data; `None` when null.
    pub(crate) fn data(&self) -> Option<&[u8]> {
        let start = self.name_span().1 + optional_len(self.flags());
        (self.flags() & NULL == 0).then(|| self.0.get(start..).unwrap_or_default())
    }

    pub(crate) fn fields(&self) -> Fields {
        let flags = self.flags();
        let czxid = self.u64_at(6);
        let ctime = self.u64_at(14) as i64;
        let mut f = Fields::new(self.parent(), czxid, ctime);
        let mut at = self.name_span().1;
        for (bit, width) in WIDTHS {
            if flags & bit == 0 {
                continue;
            }
            let word = if width == 8 { self.u64_at(at) } else { u64::from(self.u32_at(at)) };
            match bit {
                MZXID => f.mzxid = word,
                PZXID => f.pzxid = word,
                MTIME => f.mtime = word as i64,
                VERSION => f.version = word as u32 as i32,
                CVERSION => f.cversion = word as u32 as i32,
                CREATES => f.child_creates = word as u32 as i32,
                OWNER => f.owner = word,
                _ => f.acl = word as u32,
            }
            at += width;
        }
        f.null = flags & NULL != 0;
        f
    }

    /// Writes `fields`: in place if the optional fields keep their length, else as a new
    /// record.
    pub(crate) fn set_fields(&mut self, fields: &Fields) {
        let len = optional_len(fields.flags());
        if len == optional_len(self.flags()) {
            let mut optional = Vec::with_capacity(len);
            fields.push_optional(&mut optional);
            let at = self.name_span().1;
            self.0[at..at + len].copy_from_slice(&optional);
            self.0[..FIXED].copy_from_slice(&fields.fixed());
        } else {
            *self = Record::new(fields, self.name(), self.data().unwrap_or_default());
        }
    }

    /// Bytes the record holds (its allocation, less the allocator's own overhead).
    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips_alone_and_together() {
        let base = Fields::new(7, 100, 5_000);
        let mut all = base;
        let changes: [fn(&mut Fields); 9] = [
            |f| f.mzxid = 101,
            |f| f.pzxid = u64::MAX,
            |f| f.mtime = -1,
            |f| f.version = -5,
            |f| f.cversion = i32::MAX,
            |f| f.child_creates = i32::MIN,
            |f| f.owner = 1 << 63,
            |f| f.acl = 3,
            |f| f.null = true,
        ];
        for change in changes {
            let mut one = base;
            change(&mut one);
            change(&mut all);
            for fields in [one, all] {
                let r = Record::new(&fields, "name", b"data");
                assert_eq!((r.fields(), r.name(), r.parent()), (fields, "name", 7));
                assert_eq!(r.data(), (!fields.null).then_some(&b"data"[..]));
            }
        }
    }

    #[test]
    fn a_fresh_leaf_stores_only_what_every_node_has() {
        let r = Record::new(&Fields::new(1, 2, 3), "n00-000001", &[0; 100]);
        assert_eq!(r.size(), FIXED + 1 + 10 + 100);
    }

    #[test]
    fn changes_go_in_place_or_into_a_new_record() {
        let mut fields = Fields::new(1, 2, 3);
        let mut r = Record::new(&fields, "a", b"xyz");
        fields.pzxid = 9;
        r.set_fields(&fields);
        fields.pzxid = 10;
        fields.cversion = 0;
        r.set_fields(&fields);
        assert_eq!((r.fields(), r.name(), r.data()), (fields, "a", Some(&b"xyz"[..])));
        fields.pzxid = 2;
        r.set_fields(&fields);
        assert_eq!(r.size(), FIXED + 1 + 1 + 3, "back to the default, the field is dropped");
    }

    #[test]
    fn long_names_keep_their_length() {
        let name = "x".repeat(70_000);
        let r = Record::new(&Fields::new(0, 1, 1), &name, b"d");
        assert_eq!((r.name(), r.data()), (name.as_str(), Some(&b"d"[..])));
    }
}
