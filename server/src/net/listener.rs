//! The accept loop.

use super::connection;
use crate::conn::ConnId;
use crate::tls::stream::Incoming;
use crate::tls::ServerTls;
use crate::Server;
use futures_util::FutureExt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A listener bound before serving and carried in [`crate::Config`] (the ZooKeeper and admin
/// listeners): the caller learns its address (port 0) and reports a taken port before the
/// server starts.
#[derive(Clone, Debug)]
pub struct Prebound(Arc<std::net::TcpListener>);

impl Prebound {
    pub fn bind(addr: SocketAddr) -> std::io::Result<Self> {
        Prebound::from_std(std::net::TcpListener::bind(addr)?)
    }

    /// A listener the caller bound (say, the first of a host name's addresses that binds).
    pub fn from_std(listener: std::net::TcpListener) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        Ok(Prebound(Arc::new(listener)))
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }

    /// The listener for tokio (needs a runtime).
    pub(crate) fn to_tokio(&self) -> std::io::Result<TcpListener> {
        TcpListener::from_std(self.0.try_clone()?)
    }
}

/// Accepts Ward clients until `cancel` fires (over TLS when the server has a certificate).
pub(crate) async fn accept_loop(
    server: Arc<Server>,
    listener: TcpListener,
    tasks: TaskTracker,
    cancel: CancellationToken,
) {
    let tls = server.config.tls.clone();
    accept_each(&server, listener, tls, tasks, cancel, "Ward", |incoming, peer, conn, cancel| {
        connection::serve(server.clone(), incoming, peer, conn, cancel)
    })
    .await
}

/// The accept loop every client listener shares: accepts until `cancel` fires and runs
/// `serve` for each connection the connection limits admit (`limits.rs`) as a tracked
/// task, so shutdown can wait for them all. With `tls`, each connection gets the
/// configuration in force when it is accepted, for its handshake (`Incoming::open`).
pub(crate) async fn accept_each<F, Fut>(
    server: &Server,
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    tasks: TaskTracker,
    cancel: CancellationToken,
    protocol: &'static str,
    serve: F,
) where
    F: Fn(Incoming, SocketAddr, ConnId, CancellationToken) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    accept_until(listener, cancel, protocol, |stream, peer, cancel| {
        let admitted = match server.limits.admit(peer.ip()) {
            Ok(admitted) => admitted,
            Err(why) => {
                // Counted first, so that whoever sees the refusal finds it counted; closed
                // before anything is read from it; other clients are not touched.
                server.limits.refused(peer, protocol, why);
                drop(stream);
                return;
            }
        };
        let conn = server.next_conn.fetch_add(1, Ordering::Relaxed);
        let open = server.connections.open(protocol, conn, peer);
        let incoming = Incoming::new(stream, tls.as_ref().map(|tls| tls.current()));
        let served = serve(incoming, peer, conn, cancel);
        // The task's future is most of what an idle connection costs (docs/benchmarks.md).
        tracing::debug!(%peer, conn, protocol, future_bytes = std::mem::size_of_val(&served), "accepted");
        // `map`, not `async move { served.await; .. }`: an async block keeps its captured
        // future and the one it awaits in separate slots, doubling every connection's task.
        tasks.spawn(served.map(move |()| drop((open, admitted))));
    })
    .await
}

/// Accepts until `cancel` fires, handing each connection and a child token of `cancel` to
/// `each`. Shared by the client listeners and the peer listener.
pub(crate) async fn accept_until(
    listener: TcpListener,
    cancel: CancellationToken,
    protocol: &'static str,
    mut each: impl FnMut(TcpStream, SocketAddr, CancellationToken),
) {
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => each(stream, peer, cancel.child_token()),
            Err(error) => {
                // Usually out of file descriptors: back off instead of spinning, and let
                // existing connections keep working.
                tracing::warn!(%error, protocol, "accept failed; backing off");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
