//! The admin HTTP listener: what operators and orchestrators ask a running server.
//!
//! * `GET /metrics`: the server's figures in Prometheus text ([`exposition`]);
//! * `GET /healthz`: 200 while the process serves;
//! * `GET /readyz`: 200 while this server can serve clients (a member of an ensemble: while
//!   in contact with a leader), 503 otherwise;
//! * `GET /digest`: the zxid this server has applied to and a digest of its state there
//!   ([`crate::digest`]): members at the same zxid must report the same digest;
//! * `GET /api/backup`: a backup of this member's state, streamed, for the admin token only
//!   ([`backup`]);
//! * `GET /` and `/assets/...`: the web console; `/api/...`: its JSON API ([`console`]);
//! * anything else: 404 (405 for a method other than GET or HEAD, or POST for an action).
//!
//! Plain HTTP/1.1 on hyper's server, with no framework: a handful of fixed routes need no
//! router.
//! A connection gets [`HEADER_TIMEOUT`] to send its request line and headers, at most
//! [`MAX_BUF`] bytes of them, and [`CONNECTION_TIME`] in all (a backup being sent:
//! [`backup::SEND_TIME`]); at most [`MAX_CONNECTIONS`]
//! are served at once and the others are closed on accept, so a bad or slow client costs
//! bounded memory and time. A malformed request gets hyper's 400.
//!
//! # Layout
//! * [`routes`]: a request to its response.
//! * [`backup`]: the backup route, whose answer is streamed.
//! * [`exposition`]: the figures as Prometheus (OpenMetrics) text.
//! * [`locks`]: per-lock figures surveyed from the tree, bounded in number.
//! * [`traffic`]: requests, bytes, log fsyncs and lock handoffs from [`crate::metrics`].
//! * [`console`]: the web console at `/` and its JSON API under `/api/`.

pub(crate) mod backup;
pub mod console;
pub(crate) mod exposition;
pub(crate) mod locks;
pub(crate) mod routes;
pub(crate) mod traffic;

use crate::Server;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The default address of the admin listener.
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 7180));
/// Time to send a request's head.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time one connection may stay open, requests and keep-alive included.
pub(crate) const CONNECTION_TIME: Duration = Duration::from_secs(60);
/// Bytes of a request head buffered (hyper's minimum is 8 KiB).
pub(crate) const MAX_BUF: usize = 16 * 1024;
/// Admin connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 64;

/// A bound admin listener carried in [`crate::Config`].
pub(crate) type AdminListener = crate::net::listener::Prebound;

/// Serves admin requests until `cancel` fires. Admin connections are not tracked for
/// shutdown: an answer cut short costs a scraper one retry.
pub async fn serve(server: Arc<Server>, listener: TcpListener, cancel: CancellationToken) {
    let addr = listener.local_addr().ok();
    tracing::info!(?addr, "serving admin HTTP");
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let console = Arc::new(console::Console::default());
    tokio::spawn(console::sampler::run(server.clone(), console.clone(), cancel.clone()));
    crate::net::listener::accept_until(listener, cancel, "admin", |stream, peer, cancel| {
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "admin connections are all taken; closing");
            return;
        };
        let (server, console) = (server.clone(), console.clone());
        // Set once this connection sends a backup, which may take longer than other answers.
        let sending_backup = Arc::new(AtomicBool::new(false));
        let sending = sending_backup.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let (server, console, sending) = (server.clone(), console.clone(), sending.clone());
                async move {
                    let response = if request.uri().path() == "/api/backup" {
                        sending.store(true, Ordering::Relaxed);
                        backup::respond(&server, peer, &request).await
                    } else {
                        backup::whole(routes::respond(&server, &console, peer, &request).await)
                    };
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(MAX_BUF)
                .serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            let served = tokio::select! {
                _ = cancel.cancelled() => return drop(slot),
                served = tokio::time::timeout(CONNECTION_TIME, connection.as_mut()) => served,
            };
            let served = match served {
                Ok(served) => served,
                Err(_) => {
                    // The console polls over one kept-alive connection: let the request in
                    // hand finish, so that it is not cut off, then close.
                    tracing::debug!(%peer, "admin connection open too long; closing");
                    connection.as_mut().graceful_shutdown();
                    let finish = match sending_backup.load(Ordering::Relaxed) {
                        true => backup::SEND_TIME,
                        false => HEADER_TIMEOUT,
                    };
                    tokio::time::timeout(finish, connection).await.unwrap_or(Ok(()))
                }
            };
            if let Err(error) = served {
                tracing::debug!(%peer, %error, "admin connection failed");
            }
            drop(slot);
        });
    })
    .await
}
