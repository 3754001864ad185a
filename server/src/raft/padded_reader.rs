//! The reader a snapshot is decoded from: a large buffer in front of the file, then a run of
//! zero bytes (the empty maps an older body lacks, `snapshot_format.rs`).
//!
//! postcard's reader flavor asks for every varint byte and every short string with a
//! `read_exact` of its own: a million nodes make tens of millions of them. `std`'s
//! `BufReader` behind `Read::chain` serves each through the chain's generic loop; here a read
//! the buffer holds is one bounds check and a copy.

use std::io::{self, Read};

/// How much of the file is read at a time.
const BUFFER: usize = 1 << 20;

pub(super) struct PaddedReader<R> {
    inner: R,
    buf: Box<[u8]>,
    /// The unread bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    /// The inner reader has ended; `zeros` more bytes follow.
    ended: bool,
    zeros: u64,
}

impl<R: Read> PaddedReader<R> {
    /// `inner`'s bytes, then `zeros` zero bytes.
    pub(super) fn new(inner: R, zeros: u64) -> PaddedReader<R> {
        PaddedReader { inner, buf: vec![0; BUFFER].into_boxed_slice(), pos: 0, end: 0, ended: false, zeros }
    }

    /// Refills an empty buffer; false at the very end.
    fn fill(&mut self) -> io::Result<bool> {
        debug_assert!(self.pos == self.end);
        self.pos = 0;
        self.end = 0;
        if !self.ended {
            loop {
                match self.inner.read(&mut self.buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        self.end = n;
                        return Ok(true);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            self.ended = true;
        }
        let n = self.zeros.min(self.buf.len() as u64) as usize;
        self.buf[..n].fill(0);
        self.zeros -= n as u64;
        self.end = n;
        Ok(n > 0)
    }
}

impl<R: Read> Read for PaddedReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.end && !self.fill()? {
            return Ok(0);
        }
        let n = out.len().min(self.end - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }

    #[inline]
    fn read_exact(&mut self, out: &mut [u8]) -> io::Result<()> {
        if out.len() <= self.end - self.pos {
            out.copy_from_slice(&self.buf[self.pos..self.pos + out.len()]);
            self.pos += out.len();
            return Ok(());
        }
        let mut done = 0;
        while done < out.len() {
            match self.read(&mut out[done..])? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes a call, as a file near its end may.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = out.len().min(self.1).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn gives_the_inner_bytes_then_the_zeros_then_the_end_in_reads_of_any_size() {
        let bytes: Vec<u8> = (0..(3 * BUFFER + 17)).map(|i| (i % 251) as u8 + 1).collect();
        let zeros = BUFFER as u64 + 5;
        let mut expected = bytes.clone();
        expected.resize(bytes.len() + zeros as usize, 0);
        for (step, want) in [(BUFFER, 1), (7, 3), (BUFFER / 2 + 1, BUFFER + 3), (1, 64 << 10)] {
            let mut reader = PaddedReader::new(Trickle(&bytes, step), zeros);
            let mut got = Vec::new();
            let mut chunk = vec![0; want];
            loop {
                let left = expected.len() - got.len();
                if left < want {
                    let mut rest = Vec::new();
                    reader.read_to_end(&mut rest).expect("read the rest");
                    got.extend(rest);
                    break;
                }
                reader.read_exact(&mut chunk).expect("read_exact");
                got.extend_from_slice(&chunk);
            }
            assert!(got == expected, "step {step}, reads of {want}");
            assert!(reader.read_exact(&mut [0]).is_err(), "past the end");
        }
    }
}
