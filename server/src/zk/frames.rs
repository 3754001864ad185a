//! ZooKeeper's framing: a 4-byte big-endian length, then that many bytes.
//!
//! tokio-util's `LengthDelimitedCodec` frames the same way, but every connection would keep
//! a whole builder's worth of its fields, twice (reading and writing), for as long as it
//! lives, idle or not (ward-bench f); this keeps the limit and a frame's length.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::io;
use tokio_util::codec::{Decoder, Encoder};

/// The length prefix.
const HEAD: usize = 4;

/// Frames of at most `max` bytes (the prefix not counted). The prefix stays in the buffer
/// until the whole frame has arrived, so an empty buffer means "between frames", which is
/// when a connection may park (`conn/park.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frames {
    max: u32,
}

impl Frames {
    pub(crate) fn new(max: usize) -> Self {
        Frames { max: u32::try_from(max).unwrap_or(u32::MAX) }
    }

    fn too_large(&self, len: usize) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes, over the limit of {}", self.max))
    }
}

impl Decoder for Frames {
    type Item = BytesMut;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<BytesMut>> {
        let Some(head) = src.get(..HEAD) else { return Ok(None) };
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        if len > self.max {
            return Err(self.too_large(len as usize));
        }
        let whole = HEAD + len as usize;
        if src.len() < whole {
            // Room for the rest of the frame at once, not by doublings.
            src.reserve(whole - src.len());
            return Ok(None);
        }
        src.advance(HEAD);
        Ok(Some(src.split_to(len as usize)))
    }
}

impl Encoder<Bytes> for Frames {
    type Error = io::Error;

    fn encode(&mut self, frame: Bytes, dst: &mut BytesMut) -> io::Result<()> {
        let len = u32::try_from(frame.len()).ok().filter(|&len| len <= self.max);
        let Some(len) = len else { return Err(self.too_large(frame.len())) };
        dst.reserve(HEAD + frame.len());
        dst.put_u32(len);
        dst.extend_from_slice(&frame);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_out_whole_however_the_bytes_arrive() {
        let mut out = BytesMut::new();
        let mut codec = Frames::new(16);
        codec.encode(Bytes::from_static(b"hello"), &mut out).expect("fits");
        codec.encode(Bytes::new(), &mut out).expect("an empty frame");
        codec.encode(Bytes::from_static(b"world!"), &mut out).expect("fits");
        let wire = out.freeze();
        // Fed one byte at a time, and all at once: the same frames.
        for step in [1, wire.len()] {
            let (mut codec, mut src, mut got) = (Frames::new(16), BytesMut::new(), Vec::new());
            for chunk in wire.chunks(step) {
                src.extend_from_slice(chunk);
                while let Some(frame) = codec.decode(&mut src).expect("valid") {
                    got.push(frame.to_vec());
                }
            }
            assert_eq!(got, [b"hello".to_vec(), Vec::new(), b"world!".to_vec()]);
            assert!(src.is_empty());
        }
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_both_ways() {
        let mut codec = Frames::new(4);
        let mut src = BytesMut::from(&[0, 0, 0, 5, 1][..]);
        let error = codec.decode(&mut src).expect_err("5 > 4");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(codec.encode(Bytes::from_static(b"12345"), &mut BytesMut::new()).is_err());
        let mut src = BytesMut::from(&[0xff, 0xff, 0xff, 0xff][..]);
        assert!(Frames::new(usize::MAX).decode(&mut src).expect("within u32").is_none());
    }
}
