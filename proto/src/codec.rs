//! Frames: a 4-byte big-endian length, then a postcard body.
//!
//! ```text
//! +----------------+-----------------------------+
//! | len: u32 (BE)  | body: postcard, len bytes   |
//! +----------------+-----------------------------+
//! ```
//!
//! The length is checked against the limit as soon as its four bytes arrive, so a peer that
//! announces 2 GiB gets [`CodecError::FrameTooLarge`] and we never reserve the memory.

use bytes::{Buf, BufMut, BytesMut};
use serde::{de::DeserializeOwned, Serialize};
use std::marker::PhantomData;
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

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
    #[error("cannot encode message: {0}")]
    Encode(postcard::Error),
}

/// Reads frames of `In` and writes frames of `Out`.
pub struct FrameCodec<In, Out> {
    frames: LengthDelimitedCodec,
    max_in: usize,
    _types: PhantomData<fn(Out) -> In>,
}

impl<In, Out> FrameCodec<In, Out> {
    /// A codec refusing incoming frames over `max_in` bytes. Outgoing frames are not
    /// limited here: what we send is bounded by what we store.
    pub fn new(max_in: usize) -> Self {
        let frames =
            LengthDelimitedCodec::builder().length_field_length(LEN_BYTES).max_frame_length(max_in).new_codec();
        FrameCodec { frames, max_in, _types: PhantomData }
    }

    /// The same buffers with other message types, for the switch after the handshake.
    pub fn retype<In2, Out2>(self) -> FrameCodec<In2, Out2> {
        FrameCodec { frames: self.frames, max_in: self.max_in, _types: PhantomData }
    }
}

impl<In: DeserializeOwned, Out> Decoder for FrameCodec<In, Out> {
    type Item = In;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<In>, CodecError> {
        if src.len() >= LEN_BYTES {
            let len = (&src[..LEN_BYTES]).get_u32() as usize;
            if len > self.max_in {
                return Err(CodecError::FrameTooLarge { len, max: self.max_in });
            }
        }
        match self.frames.decode(src)? {
            None => Ok(None),
            Some(frame) => match postcard::from_bytes::<In>(&frame) {
                Ok(msg) => Ok(Some(msg)),
                Err(error) => Err(CodecError::Malformed { error, frame }),
            },
        }
    }
}

impl<In, Out: Serialize> Encoder<Out> for FrameCodec<In, Out> {
    type Error = CodecError;

    fn encode(&mut self, msg: Out, dst: &mut BytesMut) -> Result<(), CodecError> {
        let start = dst.len();
        dst.put_u32(0);
        let mut body = postcard::to_extend(&msg, std::mem::take(dst)).map_err(CodecError::Encode)?;
        let len = body.len() - start - LEN_BYTES;
        let len = u32::try_from(len).map_err(|_| CodecError::FrameTooLarge { len, max: u32::MAX as usize })?;
        body[start..start + LEN_BYTES].copy_from_slice(&len.to_be_bytes());
        *dst = body;
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
