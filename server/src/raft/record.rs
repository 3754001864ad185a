//! The log's record format: pure encoding and decoding, no I/O.
//!
//! At most one record is ever unsynced: the log's I/O thread merges the appends queued
//! together into one record ([`merge_entries`]) and syncs before any other record. A crash
//! can therefore tear at most the last record, and any damage followed by an intact later
//! record is damage at rest, not a torn write.
//!
//! ```text
//! segment header (32 bytes)                 record (8-byte aligned)
//! offset size field                         offset size field
//!      0    8 magic "WARDWAL2"                   0    4 payload length L (u32 LE), > 0
//!      8    8 segment number (u64 LE)            4    4 CRC-32 of bytes 0..4, 8..16 and the payload
//!     16    8 RSN of its first record            8    8 RSN: record serial number (u64 LE),
//!     24    4 file size in 4 KiB pages                  +1 per record across all segments
//!     28    4 CRC-32 of bytes 0..28             16    L payload: postcard(Record)
//!                                             16+L    0-7 zero padding to a multiple of 8
//! ```
//!
//! A zero length field ends the records of a segment: segments are pre-zeroed.
//!
//! The magic's digit is the format version. Version 1 had zero in place of the size; it is
//! read as it was written (its size is unknown). A version above [`VERSION`] is refused.

use super::fsutil::{array, magic, version_of};
use super::types::{Entry, LogId};
use serde::{Deserialize, Serialize};

/// The segment format written: 2 records the file's size, so that a cut file is noticed.
pub const VERSION: u8 = 2;
const KIND: &[u8; 7] = b"WARDWAL";
pub const SEGMENT_HEADER: usize = 32;
/// Segment sizes are whole pages of this many bytes (the header counts pages).
pub(crate) const PAGE: u64 = 4096;
pub const RECORD_HEADER: usize = 16;
/// Larger payloads are refused: the length must fit in the header, and a length this large
/// read from a damaged header must not look plausible.
pub(crate) const MAX_PAYLOAD: usize = 1 << 30;

/// What one record says happened to the log.
#[derive(Debug, Serialize, Deserialize)]
pub enum Record {
    /// Consecutive entries appended (one openraft `append`).
    Entries(Vec<Entry>),
    /// Entries from this index on were removed (a conflicting suffix on a follower).
    Truncate { since: u64 },
    /// Entries up to and including this id were removed behind a snapshot.
    Purge { upto: LogId },
}

/// The borrowed twin of [`Record`], so appending does not clone entries to encode them.
/// Serde encodes a slice and a `Vec` alike, so it decodes as a `Record`.
#[derive(Serialize)]
pub enum RecordRef<'a> {
    Entries(&'a [Entry]),
    Truncate { since: u64 },
    Purge { upto: LogId },
}

/// What a segment's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SegmentHeader {
    pub version: u8,
    pub number: u64,
    /// The serial number of its first record.
    pub first_rsn: u64,
    /// The size the file was created with; `None` for version 1, which did not record it.
    pub size: Option<u64>,
}

/// Why a segment header is not one this version reads.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BadHeader {
    /// Not a segment header, or a damaged one.
    Damaged,
    /// A segment of a later format version.
    Newer(u8),
}

/// The header of segment `number` of `size` bytes (a multiple of [`PAGE`]), in the current
/// format.
pub(crate) fn segment_header(number: u64, first_rsn: u64, size: u64) -> [u8; SEGMENT_HEADER] {
    let mut h = [0; SEGMENT_HEADER];
    h[..8].copy_from_slice(&magic(KIND, VERSION));
    h[8..16].copy_from_slice(&number.to_le_bytes());
    h[16..24].copy_from_slice(&first_rsn.to_le_bytes());
    // 0 (unknown) for a size past 16 TiB.
    let pages = u32::try_from(size / PAGE).unwrap_or(0);
    h[24..28].copy_from_slice(&pages.to_le_bytes());
    let crc = crc32fast::hash(&h[..28]);
    h[28..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Parses a segment header. The version comes first: a later version may have changed
/// everything after the magic, the checksum included.
pub(crate) fn parse_segment_header(bytes: &[u8]) -> Result<SegmentHeader, BadHeader> {
    let h = bytes.get(..SEGMENT_HEADER).ok_or(BadHeader::Damaged)?;
    let version = version_of(KIND, h).ok_or(BadHeader::Damaged)?;
    if version > VERSION {
        return Err(BadHeader::Newer(version));
    }
    let crc = u32::from_le_bytes(array(&h[28..]));
    if crc32fast::hash(&h[..28]) != crc {
        return Err(BadHeader::Damaged);
    }
    let pages = u64::from(u32::from_le_bytes(array(&h[24..28])));
    Ok(SegmentHeader {
        version,
        number: u64::from_le_bytes(array(&h[8..16])),
        first_rsn: u64::from_le_bytes(array(&h[16..24])),
        size: (version >= 2 && pages > 0).then_some(pages * PAGE),
    })
}

/// Bytes a record with an `len`-byte payload takes on disk.
pub fn record_size(len: usize) -> usize {
    (RECORD_HEADER + len).div_ceil(8) * 8
}

/// Appends the framed record to `out`.
pub fn encode(rsn: u64, payload: &[u8], out: &mut Vec<u8>) {
    let len = payload.len() as u32;
    let start = out.len();
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&rsn.to_le_bytes());
    out.extend_from_slice(payload);
    out.resize(start + record_size(payload.len()), 0);
    let crc = checksum(&out[start..start + 4], &out[start + 8..start + 16], payload);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// The payloads of several [`Record::Entries`] records (from [`super::wal::encode_payload`],
/// consecutive in the log) as the payload of one record of all their entries, or `None` if
/// one of them is not such a payload.
///
/// Postcard writes an enum as its variant's index and a list as its length, both varints,
/// then the elements: the merged payload is variant 0, the summed length, and each payload's
/// elements as they are, so no entry is decoded or encoded again.
pub(crate) fn merge_entries(payloads: &[Vec<u8>]) -> Option<Vec<u8>> {
    let mut count = 0u64;
    let mut bodies = Vec::with_capacity(payloads.len());
    for payload in payloads {
        let (variant, rest) = varint(payload)?;
        let (len, body) = varint(rest)?;
        if variant != 0 {
            return None;
        }
        count = count.checked_add(len)?;
        bodies.push(body);
    }
    let mut out = Vec::with_capacity(20 + bodies.iter().map(|b| b.len()).sum::<usize>());
    put_varint(0, &mut out);
    put_varint(count, &mut out);
    for body in bodies {
        out.extend_from_slice(body);
    }
    Some(out)
}

/// A postcard varint (LEB128, at most 10 bytes) at the start of `bytes`, and what follows it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

fn put_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn checksum(len: &[u8], rsn: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(len);
    h.update(rsn);
    h.update(payload);
    h.finalize()
}

/// What is at `offset` of a segment image.
#[derive(Debug, PartialEq, Eq)]
pub enum Slot {
    /// An intact record: its RSN, its payload's range, and where the next record starts.
    Record { rsn: u64, payload: std::ops::Range<usize>, next: usize },
    /// A zero header, or the end of the image on a record boundary: no more records.
    End,
    /// Anything else: a torn record, or damage. The reason is for the operator.
    Bad(&'static str),
}

/// Reads the record expected at `offset` with serial number `rsn`.
pub fn read_at(image: &[u8], offset: usize, rsn: u64) -> Slot {
    let rest = image.get(offset..).unwrap_or(&[]);
    if rest.is_empty() {
        return Slot::End;
    }
    if rest.len() < RECORD_HEADER {
        return if rest.iter().all(|b| *b == 0) { Slot::End } else { Slot::Bad("record header cut short") };
    }
    let len = u32::from_le_bytes(array(&rest[..4])) as usize;
    let stored_crc = u32::from_le_bytes(array(&rest[4..8]));
    let stored_rsn = u64::from_le_bytes(array(&rest[8..16]));
    if len == 0 {
        return if rest[..RECORD_HEADER].iter().all(|b| *b == 0) { Slot::End } else { Slot::Bad("bad record header") };
    }
    if len > MAX_PAYLOAD || RECORD_HEADER + len > rest.len() {
        return Slot::Bad("record extends past the end of the file");
    }
    let payload = &rest[RECORD_HEADER..RECORD_HEADER + len];
    if checksum(&rest[..4], &rest[8..16], payload) != stored_crc {
        return Slot::Bad("checksum mismatch");
    }
    // The padding is not checksummed but must be zero, so that no byte of a record can
    // change unnoticed.
    let end = record_size(len).min(rest.len());
    if rest[RECORD_HEADER + len..end].iter().any(|b| *b != 0) {
        return Slot::Bad("non-zero padding");
    }
    if stored_rsn != rsn {
        return Slot::Bad("record out of sequence");
    }
    let start = offset + RECORD_HEADER;
    Slot::Record { rsn, payload: start..start + len, next: offset + record_size(len) }
}

/// Whether an intact record with a serial number after `rsn` sits anywhere after `offset`:
/// then the bad bytes at `offset` are damage in the middle of the log, not a torn tail.
pub(crate) fn intact_record_after(image: &[u8], offset: usize, rsn: u64) -> Option<usize> {
    let mut at = offset + 8;
    while at + RECORD_HEADER <= image.len() {
        let h = &image[at..at + RECORD_HEADER];
        let candidate = u64::from_le_bytes(array(&h[8..16]));
        // The serial number filters out almost every offset before a checksum is computed.
        if candidate > rsn && candidate - rsn < 1 << 32 {
            if let Slot::Record { .. } = read_at(image, at, candidate) {
                return Some(at);
            }
        }
        at += 8;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header as format 1 wrote it: `WARDWAL1`, and zero where format 2 keeps the size.
    fn v1_header(number: u64, first_rsn: u64) -> [u8; SEGMENT_HEADER] {
        let mut h = [0; SEGMENT_HEADER];
        h[..8].copy_from_slice(b"WARDWAL1");
        h[8..16].copy_from_slice(&number.to_le_bytes());
        h[16..24].copy_from_slice(&first_rsn.to_le_bytes());
        let crc = crc32fast::hash(&h[..28]);
        h[28..].copy_from_slice(&crc.to_le_bytes());
        h
    }

    fn entries(from: u64, to: u64) -> Vec<Entry> {
        let leader = openraft::impls::leader_id_adv::LeaderId { term: 2, node_id: 1 };
        (from..to).map(|i| Entry { log_id: LogId::new(leader, i), payload: openraft::EntryPayload::Blank }).collect()
    }

    /// Appends queued together are written as one record of all their entries, in order,
    /// as if one append had carried them all.
    #[test]
    fn merged_entries_payloads_decode_as_one_record_of_all_their_entries() {
        // 200 entries: a length that takes two varint bytes, beside ones that take one.
        let parts = [entries(1, 3), entries(3, 203), entries(203, 204)];
        let payloads: Vec<Vec<u8>> =
            parts.iter().map(|p| postcard::to_allocvec(&RecordRef::Entries(p)).expect("encode")).collect();
        let merged = merge_entries(&payloads).expect("entries payloads merge");
        let Ok(Record::Entries(all)) = postcard::from_bytes::<Record>(&merged) else { panic!("not entries") };
        let indexes: Vec<u64> = all.iter().map(|e| e.log_id.index).collect();
        assert_eq!(indexes, (1..204).collect::<Vec<_>>());
        let purge = postcard::to_allocvec(&RecordRef::Purge { upto: LogId::new(parts[0][0].log_id.leader_id, 1) });
        assert_eq!(merge_entries(&[payloads[0].clone(), purge.expect("encode")]), None, "a purge never merges");
    }

    #[test]
    fn every_released_header_version_parses_and_a_newer_one_is_named() {
        let v1 = parse_segment_header(&v1_header(3, 40));
        assert_eq!(v1, Ok(SegmentHeader { version: 1, number: 3, first_rsn: 40, size: None }));
        let v2 = parse_segment_header(&segment_header(3, 40, 64 << 20));
        assert_eq!(v2, Ok(SegmentHeader { version: 2, number: 3, first_rsn: 40, size: Some(64 << 20) }));
        // A later version is named before its checksum is looked at: its layout may differ.
        let mut v3 = segment_header(3, 40, 4096);
        v3[7] = b'3';
        assert_eq!(parse_segment_header(&v3), Err(BadHeader::Newer(3)));
        for at in [0, 7, 8, 24, 31] {
            let mut damaged = segment_header(3, 40, 4096);
            damaged[at] ^= 0x40;
            assert_eq!(parse_segment_header(&damaged), Err(BadHeader::Damaged), "flip at {at}");
        }
    }
}
