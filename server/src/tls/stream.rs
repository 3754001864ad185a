//! A connection in two halves, read and written at once by different parts of its task:
//! a plain TCP stream splits without a lock; a TLS stream (one rustls state for both
//! directions) through tokio's `split`.

use std::sync::Arc;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::TlsStream;
use tokio_util::either::Either;

pub(crate) type ReadHalf = Either<OwnedReadHalf, tokio::io::ReadHalf<TlsStream<TcpStream>>>;
pub(crate) type WriteHalf = Either<OwnedWriteHalf, tokio::io::WriteHalf<TlsStream<TcpStream>>>;

/// The halves of a plain connection.
pub(crate) fn plain(stream: TcpStream) -> (ReadHalf, WriteHalf) {
    let (r, w) = stream.into_split();
    (Either::Left(r), Either::Left(w))
}

/// The halves of a TLS connection (either end).
pub(crate) fn tls(stream: impl Into<TlsStream<TcpStream>>) -> (ReadHalf, WriteHalf) {
    let (r, w) = tokio::io::split(stream.into());
    (Either::Right(r), Either::Right(w))
}

/// A client's connection, after the TLS handshake if its listener has TLS.
pub(crate) struct ClientStream {
    pub read: ReadHalf,
    pub write: WriteHalf,
    cert_subject: Option<String>,
}

impl ClientStream {
    /// `stream` as it is (a listener without TLS).
    pub(crate) fn plain(stream: TcpStream) -> Self {
        let (read, write) = plain(stream);
        ClientStream { read, write, cert_subject: None }
    }

    /// Runs the server's side of the TLS handshake on `stream` with `config` (taken when
    /// the connection was accepted: a reload changes only later connections). Fails when
    /// the client speaks no TLS, does not trust this server's certificate, or shows a
    /// certificate that is not valid (or none where one is required).
    pub(crate) async fn tls(stream: TcpStream, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let stream = tokio_rustls::TlsAcceptor::from(config).accept(stream).await?;
        let cert_subject = stream.get_ref().1.peer_certificates().and_then(|chain| chain.first()).and_then(|leaf| {
            let subject = super::subject::rfc4514(leaf);
            if subject.is_none() {
                tracing::debug!("a verified client certificate whose subject cannot be read");
            }
            subject
        });
        let (read, write) = tls(stream);
        Ok(ClientStream { read, write, cert_subject })
    }

    #[cfg(test)]
    pub(crate) fn cert_subject(&self) -> Option<&str> {
        self.cert_subject.as_deref()
    }

    /// The halves, for the connection's reader and writer, and the subject of the
    /// certificate the client showed in the TLS handshake, verified against the listener's
    /// client CA, as an RFC 4514 string (`CN=alice,O=Example`); `None` without TLS or
    /// without a client certificate. The identity the `x509` authentication scheme gives the
    /// connection.
    pub(crate) fn into_parts(self) -> (ReadHalf, WriteHalf, Option<String>) {
        (self.read, self.write, self.cert_subject)
    }
}

/// A client connection just accepted, before its TLS handshake (if its listener has TLS).
pub(crate) struct Incoming {
    stream: TcpStream,
    /// The listener's TLS configuration when the connection was accepted.
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl Incoming {
    pub(crate) fn new(stream: TcpStream, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        Incoming { stream, tls }
    }

    /// Completes the TLS handshake, if any, by `deadline`; `None` (logged) when it fails,
    /// takes too long or `cancel` fires first: the connection is then closed and nothing
    /// else is touched.
    pub(crate) async fn open(
        self,
        peer: std::net::SocketAddr,
        deadline: tokio::time::Instant,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<ClientStream> {
        if let Err(error) = self.stream.set_nodelay(true) {
            tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
        }
        let Some(config) = self.tls else { return Some(ClientStream::plain(self.stream)) };
        let handshake = tokio::time::timeout_at(deadline, ClientStream::tls(self.stream, config));
        let outcome = tokio::select! {
            _ = cancel.cancelled() => return None,
            outcome = handshake => outcome,
        };
        match outcome {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(error)) => {
                tracing::info!(%peer, %error, "closing connection: TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::info!(%peer, "closing connection: no TLS handshake in time");
                None
            }
        }
    }
}
