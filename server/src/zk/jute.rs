//! Jute, ZooKeeper's serialization: big-endian ints and longs, one-byte bools,
//! length-prefixed buffers, strings and vectors (length -1 meaning null).
//!
//! Decoding is bounded by the frame it reads from: a length larger than what is left is an
//! error before anything is allocated, so a hostile length cannot make us reserve memory.

/// Why a record did not decode.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JuteError {
    #[error("record ends early")]
    Eof,
    #[error("length {0} is negative or beyond the end of the record")]
    BadLength(i32),
    #[error("string is not UTF-8")]
    Utf8,
}

/// Reads one record out of a frame body.
pub(crate) struct In<'a> {
    buf: &'a [u8],
}

impl<'a> In<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        In { buf }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], JuteError> {
        if n > self.buf.len() {
            return Err(JuteError::Eof);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], JuteError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn int(&mut self) -> Result<i32, JuteError> {
        self.array().map(i32::from_be_bytes)
    }

    pub(crate) fn long(&mut self) -> Result<i64, JuteError> {
        self.array().map(i64::from_be_bytes)
    }

    pub(crate) fn bool(&mut self) -> Result<bool, JuteError> {
        self.array::<1>().map(|[b]| b != 0)
    }

    /// A length for something of at least one byte per element: -1 is null (`None`).
    fn len(&mut self) -> Result<Option<usize>, JuteError> {
        let len = self.int()?;
        match usize::try_from(len) {
            Ok(n) if n <= self.buf.len() => Ok(Some(n)),
            _ if len == -1 => Ok(None),
            _ => Err(JuteError::BadLength(len)),
        }
    }

    /// A buffer; null reads as empty.
    pub(crate) fn buffer(&mut self) -> Result<Vec<u8>, JuteError> {
        Ok(self.nullable_buffer()?.unwrap_or_default())
    }

    /// A buffer, or `None` for null: node data, where ZooKeeper keeps the two apart.
    pub(crate) fn nullable_buffer(&mut self) -> Result<Option<Vec<u8>>, JuteError> {
        match self.len()? {
            Some(n) => Ok(Some(self.take(n)?.to_vec())),
            None => Ok(None),
        }
    }

    /// A string; null reads as empty, which no path check accepts.
    pub(crate) fn string(&mut self) -> Result<String, JuteError> {
        match self.len()? {
            Some(n) => String::from_utf8(self.take(n)?.to_vec()).map_err(|_| JuteError::Utf8),
            None => Ok(String::new()),
        }
    }

    /// A vector; null reads as empty.
    pub(crate) fn vector<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, JuteError>,
    ) -> Result<Vec<T>, JuteError> {
        let n = self.len()?.unwrap_or(0);
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(item(self)?);
        }
        Ok(out)
    }
}

/// Writes records into a frame body.
#[derive(Default)]
pub(crate) struct Out {
    pub buf: Vec<u8>,
}

impl Out {
    pub(crate) fn int(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub(crate) fn long(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub(crate) fn bool(&mut self, v: bool) -> &mut Self {
        self.buf.push(u8::from(v));
        self
    }

    fn len(&mut self, n: usize) -> &mut Self {
        // Everything we send is bounded by what we store (1 MiB nodes), far below i32::MAX.
        self.int(i32::try_from(n).unwrap_or(i32::MAX))
    }

    pub(crate) fn buffer(&mut self, v: &[u8]) -> &mut Self {
        self.len(v.len());
        self.buf.extend_from_slice(v);
        self
    }

    /// A buffer, or null (length -1) for `None`.
    pub(crate) fn nullable_buffer(&mut self, v: Option<&[u8]>) -> &mut Self {
        match v {
            Some(v) => self.buffer(v),
            None => self.int(-1),
        }
    }

    pub(crate) fn string(&mut self, v: &str) -> &mut Self {
        self.buffer(v.as_bytes())
    }

    pub(crate) fn strings<S: AsRef<str>>(&mut self, v: &[S]) -> &mut Self {
        self.len(v.len());
        for s in v {
            self.string(s.as_ref());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_lengths_beyond_the_record() {
        let mut out = Out::default();
        out.int(-7).long(1 << 40).bool(true).buffer(b"ab").string("/p").strings(&["x", "yz"]);
        let mut r = In::new(&out.buf);
        assert_eq!(r.int(), Ok(-7));
        assert_eq!(r.long(), Ok(1 << 40));
        assert_eq!(r.bool(), Ok(true));
        assert_eq!(r.buffer(), Ok(b"ab".to_vec()));
        assert_eq!(r.string(), Ok("/p".to_string()));
        assert_eq!(r.vector(In::string), Ok(vec!["x".to_string(), "yz".to_string()]));
        assert_eq!(r.remaining(), 0);
        assert_eq!(r.int(), Err(JuteError::Eof));

        let huge = i32::MAX.to_be_bytes();
        assert_eq!(In::new(&huge).buffer(), Err(JuteError::BadLength(i32::MAX)));
        assert_eq!(In::new(&(-2i32).to_be_bytes()).string(), Err(JuteError::BadLength(-2)));
        assert_eq!(In::new(&(-1i32).to_be_bytes()).buffer(), Ok(Vec::new()));
        assert_eq!(In::new(&(-1i32).to_be_bytes()).nullable_buffer(), Ok(None));
        assert_eq!(In::new(&0i32.to_be_bytes()).nullable_buffer(), Ok(Some(Vec::new())));
        let mut out = Out::default();
        out.nullable_buffer(None).nullable_buffer(Some(b""));
        assert_eq!(out.buf, [255, 255, 255, 255, 0, 0, 0, 0]);
        assert_eq!(In::new(&[0, 0, 0, 1, 0xff]).string(), Err(JuteError::Utf8));
    }
}
