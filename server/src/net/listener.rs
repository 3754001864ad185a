//! The accept loop.

use super::connection;
use crate::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Accepts until `cancel` fires; every connection task is tracked so shutdown can wait.
pub async fn accept_loop(server: Arc<Server>, listener: TcpListener, tasks: TaskTracker, cancel: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let conn = server.next_conn.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(%peer, conn, "accepted");
                tasks.spawn(connection::serve(server.clone(), stream, peer, conn, cancel.child_token()));
            }
            Err(error) => {
                // Usually out of file descriptors: back off instead of spinning, and let
                // existing connections keep working.
                tracing::warn!(%error, "accept failed; backing off");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
