//! Frames: a 4-byte big-endian length, then a postcard body.
//!
//! ```text
//! +----------------+-----------------------------+
//! | len: u32 (BE)  | body: postcard, len bytes   |
//! +----------------+-----------------------------+
//! ```
//!
//! The length is checked against the limit as soon as its four bytes arrive, so a peer that
//! announces 2 GiB gets [`CodecError::FrameTooLarge`] and we never reserve the memory. The
//! framing is tokio-util's `Decoder`/`Encoder`; the length logic is ours so that the error
//! carries the announced length.

use bytes::{Buf, BufMut, BytesMut};
use serde::{de::DeserializeOwned, Serialize};
use std::marker::PhantomData;
use tokio_util::codec::{Decoder, Encoder};

const LEN_BYTES: usize = 4;

/// What can go wrong reading or writing frames.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    FrameTooLarge { len: usize, max: usize },
    /// The body did not decode. The frame is kept so the handshake can still read a newer
    /// client's version from it.
    #[error("malformed frame: {error}")]
    Malformed { error: postcard::Error, frame: BytesMut },
    /// The peer closed the connection in the middle of a frame.
    #[error("connection closed inside a frame ({have} bytes of it received)")]
    Truncated { have: usize },
    #[error("cannot encode message: {0}")]
    Encode(postcard::Error),
}

/// Reads frames of `In` and writes frames of `Out`.
pub struct FrameCodec<In, Out> {
    max_in: usize,
    _types: PhantomData<fn(Out) -> In>,
}

impl<In, Out> FrameCodec<In, Out> {
    /// A codec refusing incoming frames over `max_in` bytes. Outgoing frames are not
    /// limited here: what we send is bounded by what we store.
    pub fn new(max_in: usize) -> Self {
        FrameCodec { max_in, _types: PhantomData }
    }
}

impl<In: DeserializeOwned, Out> Decoder for FrameCodec<In, Out> {
    type Item = In;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<In>, CodecError> {
        // The length stays in the buffer until the whole frame has arrived, so every call
        // sees the frame from its first byte.
        let Some(prefix) = src.get(..LEN_BYTES) else { return Ok(None) };
        let len = (&prefix[..]).get_u32() as usize;
        if len > self.max_in {
            return Err(CodecError::FrameTooLarge { len, max: self.max_in });
        }
        if src.len() < LEN_BYTES + len {
            src.reserve(LEN_BYTES + len - src.len());
            return Ok(None);
        }
        src.advance(LEN_BYTES);
        let frame = src.split_to(len);
        match postcard::from_bytes::<In>(&frame) {
            Ok(msg) => Ok(Some(msg)),
            Err(error) => Err(CodecError::Malformed { error, frame }),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<In>, CodecError> {
        match self.decode(src)? {
            Some(msg) => Ok(Some(msg)),
            None if src.is_empty() => Ok(None),
            None => Err(CodecError::Truncated { have: src.len() }),
        }
    }
}

impl<In, Out: Serialize> Encoder<Out> for FrameCodec<In, Out> {
    type Error = CodecError;

    fn encode(&mut self, msg: Out, dst: &mut BytesMut) -> Result<(), CodecError> {
        // Encoded aside first, so a message that cannot be encoded leaves the frames
        // already buffered intact.
        let body = postcard::to_allocvec(&msg).map_err(CodecError::Encode)?;
        let len = body.len();
        let len = u32::try_from(len).map_err(|_| CodecError::FrameTooLarge { len, max: u32::MAX as usize })?;
        dst.reserve(LEN_BYTES + body.len());
        dst.put_u32(len);
        dst.extend_from_slice(&body);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientMessage, Hello, HelloPrefix, Request, MAGIC, PROTOCOL_VERSION};

    type Codec = FrameCodec<ClientMessage, ClientMessage>;

    #[test]
    fn round_trips_and_splits_frames() {
        let mut codec = Codec::new(1024);
        let mut buf = BytesMut::new();
        let a = ClientMessage::Request { xid: 1, request: Request::Ping };
        let b = ClientMessage::Hello(Hello::new(None, 5000, 0));
        codec.encode(a.clone(), &mut buf).unwrap();
        codec.encode(b.clone(), &mut buf).unwrap();
        let mut partial = buf.split_to(3);
        assert!(codec.decode(&mut partial).unwrap().is_none());
        partial.unsplit(buf);
        assert_eq!(codec.decode(&mut partial).unwrap(), Some(a));
        assert_eq!(codec.decode(&mut partial).unwrap(), Some(b));
        assert!(codec.decode(&mut partial).unwrap().is_none());
    }

    #[test]
    fn reassembles_a_frame_split_inside_its_body() {
        let mut codec = Codec::new(1 << 20);
        let msg = ClientMessage::Request {
            xid: 9,
            request: Request::Create { path: "/big".into(), data: vec![1; 4096], mode: crate::CreateMode::Persistent },
        };
        let mut all = BytesMut::new();
        codec.encode(msg.clone(), &mut all).unwrap();
        let mut buf = BytesMut::new();
        for chunk in all.chunks(7) {
            assert!(codec.decode(&mut buf).unwrap().is_none());
            buf.extend_from_slice(chunk);
        }
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(msg));
        assert!(buf.is_empty());
    }

    #[test]
    fn refuses_oversized_length_before_the_body_arrives() {
        let mut codec = Codec::new(1024);
        let mut buf = BytesMut::from(&[0x80, 0, 0, 0][..]);
        match codec.decode(&mut buf) {
            Err(CodecError::FrameTooLarge { len, max }) => assert_eq!((len, max), (1 << 31, 1024)),
            other => panic!("expected FrameTooLarge, got {other:?}"),
        }
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        let mut codec = Codec::new(1024);
        let mut buf = BytesMut::from(&[0, 0, 0, 3, 0xff, 0xff, 0xff][..]);
        assert!(matches!(codec.decode(&mut buf), Err(CodecError::Malformed { .. })));
    }

    #[test]
    fn hello_prefix_reads_the_version_of_any_hello() {
        let hello = ClientMessage::Hello(Hello::new(None, 5000, 7));
        let bytes = postcard::to_allocvec(&hello).unwrap();
        let prefix = HelloPrefix::peek(&bytes).unwrap();
        assert_eq!(prefix, HelloPrefix { tag: 0, magic: MAGIC, version: PROTOCOL_VERSION });
    }
}
