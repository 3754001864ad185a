//! SIGHUP: read the TLS files again. New connections (clients' and peers') get the new
//! certificates and CAs; open ones keep what they were set up with. A reload that fails
//! (a file missing, a key open to every user) is logged and keeps the certificates in
//! force, so a botched renewal never takes the server off the air.

use std::sync::Arc;
use ward_server::tls::{PeerTls, ServerTls};

/// Reloads on every SIGHUP for as long as the process runs. Registered only when TLS is
/// configured: without it, SIGHUP keeps its default (the process ends).
pub fn on_sighup(server: Option<Arc<ServerTls>>, peer: Option<Arc<PeerTls>>) {
    if server.is_none() && peer.is_none() {
        return;
    }
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(error) => return tracing::warn!(%error, "cannot handle SIGHUP: TLS certificates will not be reloaded"),
        };
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                reload("client", server.as_deref().map(|tls| tls.reload()));
                reload("peer", peer.as_deref().map(|tls| tls.reload()));
            }
        });
    }
}

fn reload(which: &'static str, outcome: Option<Result<(), ward_server::tls::TlsError>>) {
    match outcome {
        None => {}
        Some(Ok(())) => tracing::info!(listener = which, "TLS certificates reloaded: new connections use them"),
        Some(Err(error)) => {
            tracing::warn!(listener = which, %error, "TLS reload failed: keeping the certificates in force")
        }
    }
}
