//! Clients of an ensemble while members come and go, and members' own figures.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use ward_client::{Client, Error, LockGuard};
use ward_testkit::{wait_for, wait_until, Ensemble, DEADLINE};

/// Connects through `addrs` only, with a short bound, for polling whether they serve.
pub async fn try_connect(addrs: &str, session_timeout: Duration) -> Option<Client> {
    Client::builder(addrs).connect_timeout(Duration::from_secs(2)).session_timeout(session_timeout).connect().await.ok()
}

/// A client of `addrs` once one of them takes clients: a member takes none until a leader
/// has acknowledged it, which can take longer than one connect's timeout.
pub async fn connect_serving(addrs: &str, session_timeout: Duration) -> Client {
    wait_for(&format!("one of {addrs} takes clients"), DEADLINE, || try_connect(addrs, session_timeout)).await
}

/// Runs `op` until it gives an answer other than "connection lost" or "unavailable" (for
/// at most [`DEADLINE`]): after a kill or a heal the ensemble may still be electing. Only
/// for operations that may safely be repeated.
pub async fn answered<T, F, Fut>(what: &str, mut op: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    wait_for(what, DEADLINE, || {
        let attempt = op();
        async move {
            match attempt.await {
                Err(Error::ConnectionLoss | Error::Unavailable) => None,
                outcome => Some(outcome),
            }
        }
    })
    .await
}

/// Queues `waiter` for the lock on `dir` behind its one holder; the task ends with when the
/// waiter was granted the lock, and its guard.
pub async fn queue_waiter(waiter: &Client, dir: &'static str) -> JoinHandle<(Instant, LockGuard)> {
    let granted = {
        let waiter = waiter.clone();
        tokio::spawn(async move {
            let guard = waiter.lock(dir).await.expect("waiter lock");
            (Instant::now(), guard)
        })
    };
    wait_until("the waiter is queued", DEADLINE, || async { waiter.get_children(dir).await.expect("ls").len() == 2 })
        .await;
    granted
}

/// A figure of member `admin`'s `/metrics`, by its name's end (`raft_term`).
fn figure(admin: SocketAddr, name: &str) -> Option<u64> {
    let (status, body) = ward_testkit::http::get(admin, "/metrics");
    if status != 200 {
        return None;
    }
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.split_once(' ').filter(|(n, _)| n.ends_with(name)).and_then(|(_, v)| v.trim().parse().ok()))
}

pub async fn figure_of(ensemble: &Ensemble, id: u64, name: &str) -> Option<u64> {
    let admin = ensemble.admin_addr(id);
    let name = name.to_string();
    tokio::task::spawn_blocking(move || figure(admin, &name)).await.ok().flatten()
}
