//! A socket half that counts the bytes passing through it into its listener's figures, under
//! the framing codecs: every byte read or written counts, handshakes and ZooKeeper's
//! four-letter words included. One relaxed addition per read or write call, not per frame.
//!
//! The listener is a type parameter (the protocol's [`Wire`]), not a field: the wrapper
//! adds nothing to a connection's memory.

use super::writer::Wire;
use crate::metrics::ListenerFigures;
use std::io::IoSlice;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct Counted<T, W> {
    inner: T,
    wire: PhantomData<fn() -> W>,
}

impl<T, W: Wire> Counted<T, W> {
    pub fn new(inner: T) -> Self {
        Counted { inner, wire: PhantomData }
    }

    /// The socket half under the count.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    fn figures() -> &'static ListenerFigures {
        W::LISTENER.figures()
    }

    fn count_written(written: Poll<std::io::Result<usize>>) -> Poll<std::io::Result<usize>> {
        if let Poll::Ready(Ok(n)) = written {
            Self::figures().bytes_out.fetch_add(n as u64, Ordering::Relaxed);
        }
        written
    }
}

impl<T: AsyncRead + Unpin, W: Wire> AsyncRead for Counted<T, W> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            Self::figures().bytes_in.fetch_add((buf.filled().len() - before) as u64, Ordering::Relaxed);
        }
        read
    }
}

impl<T: AsyncWrite + Unpin, W: Wire> AsyncWrite for Counted<T, W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Self::count_written(Pin::new(&mut self.inner).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Self::count_written(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::connection::WardWire;
    use crate::zk::reply::ZkWire;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // The figures are process-wide and other tests move them too: only growth is checked.
    #[tokio::test]
    async fn counts_what_is_read_and_written() {
        let (zk, ward) = (crate::metrics::Listener::ZooKeeper.figures(), crate::metrics::Listener::Ward.figures());
        let (zk_out, ward_in) = (zk.bytes_out.load(Ordering::Relaxed), ward.bytes_in.load(Ordering::Relaxed));
        let (a, b) = tokio::io::duplex(64);
        let mut a = Counted::<_, ZkWire>::new(a);
        let mut b = Counted::<_, WardWire>::new(b);
        a.write_all(b"hello").await.expect("write");
        let mut got = [0u8; 5];
        b.read_exact(&mut got).await.expect("read");
        assert!(zk.bytes_out.load(Ordering::Relaxed) >= zk_out + 5);
        assert!(ward.bytes_in.load(Ordering::Relaxed) >= ward_in + 5);
        assert_eq!(std::mem::size_of::<Counted<u64, WardWire>>(), std::mem::size_of::<u64>(), "no field added");
    }
}
