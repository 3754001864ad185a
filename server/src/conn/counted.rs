//! A socket half that counts the bytes passing through it into its listener's figures, under
//! the framing codecs: every byte read or written counts, handshakes and ZooKeeper's
//! four-letter words included. One relaxed addition per read or write call, not per frame.
//!
//! The listener is a type parameter (the protocol's [`Wire`]); the figures are the server's
//! own, one pointer per half.

use super::writer::Wire;
use crate::metrics::{ListenerFigures, Metrics};
use std::io::IoSlice;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub(crate) struct Counted<T, W> {
    inner: T,
    metrics: Arc<Metrics>,
    wire: PhantomData<fn() -> W>,
}

impl<T, W: Wire> Counted<T, W> {
    pub(crate) fn new(inner: T, metrics: Arc<Metrics>) -> Self {
        Counted { inner, metrics, wire: PhantomData }
    }

    /// The socket half under the count.
    pub(crate) fn get_ref(&self) -> &T {
        &self.inner
    }

    fn figures(&self) -> &ListenerFigures {
        self.metrics.listener(W::LISTENER)
    }

    fn count_written(&self, written: Poll<std::io::Result<usize>>) -> Poll<std::io::Result<usize>> {
        if let Poll::Ready(Ok(n)) = written {
            self.figures().bytes_out.fetch_add(n as u64, Ordering::Relaxed);
        }
        written
    }
}

impl<T: AsyncRead + Unpin, W: Wire> AsyncRead for Counted<T, W> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            self.figures().bytes_in.fetch_add((buf.filled().len() - before) as u64, Ordering::Relaxed);
        }
        read
    }
}

impl<T: AsyncWrite + Unpin, W: Wire> AsyncWrite for Counted<T, W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.count_written(written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.count_written(written)
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
