//! What the workload clients share with the run: the clock, when to stop, how many
//! operations completed (the nemesis waits for that to grow), and bounded connecting.

use super::CheckError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use ward_client::{Client, CreateMode, SessionState};
use ward_linearizability::Clock;

/// One call's bound: past it the outcome is unknown. Generous, because a write forwarded to
/// a leader that has just been cut off waits out the member's commit timeout (10 s).
pub const OP_LIMIT: Duration = Duration::from_secs(15);
/// How long a client may take to connect, or a cluster to answer again after a fault.
pub const SETTLE: Duration = Duration::from_secs(30);
/// The session timeout the workload clients ask for: long enough to ride out a leader
/// change, short enough that a lost session is replaced within a run.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct Shared {
    pub clock: Clock,
    pub stop: Arc<AtomicBool>,
    /// Operations with a known outcome so far, over all workers.
    pub known: Arc<AtomicU64>,
}

impl Shared {
    pub fn new() -> Shared {
        Shared { clock: Clock::start(), stop: Arc::default(), known: Arc::default() }
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn completed(&self) {
        self.known.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits (up to `limit`) until `n` more operations have completed: the cluster serves.
    /// False if it did not.
    pub async fn progressed(&self, n: u64, limit: Duration) -> bool {
        let from = self.known.load(Ordering::Relaxed);
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.known.load(Ordering::Relaxed) >= from + n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }
}

impl Default for Shared {
    fn default() -> Self {
        Shared::new()
    }
}

/// A client of `addrs`, bounded by [`SETTLE`].
pub async fn connect(addrs: &str) -> Result<Client, CheckError> {
    connect_with(addrs, SESSION_TIMEOUT).await
}

/// [`connect`], asking for `session_timeout`.
pub async fn connect_with(addrs: &str, session_timeout: Duration) -> Result<Client, CheckError> {
    let connecting =
        Client::builder(addrs).connect_timeout(Duration::from_secs(10)).session_timeout(session_timeout).connect();
    match timeout(SETTLE, connecting).await {
        Ok(outcome) => outcome.map_err(CheckError::client(format!("connect to {addrs}"))),
        Err(_) => Err(CheckError::Timeout(format!("connecting to {addrs} took over {SETTLE:?}"))),
    }
}

/// After a failed call: wait (bounded) for the client to be connected again rather than spin
/// on requests that fail at once while it reconnects; replace a session that ended, or a
/// client that did not reconnect in time. Returns whether the session was replaced.
pub async fn recover(client: &mut Client, addrs: &str, shared: &Shared) -> bool {
    let mut states = client.state_changes();
    if *states.borrow_and_update() == SessionState::Connected {
        // Refused by a member without a leader yet: give the election a moment.
        tokio::time::sleep(Duration::from_millis(50)).await;
        return false;
    }
    let connected = timeout(SETTLE, async {
        loop {
            let now = *states.borrow_and_update();
            if now == SessionState::Connected || now.is_terminal() || states.changed().await.is_err() {
                return now;
            }
        }
    })
    .await;
    if connected == Ok(SessionState::Connected) {
        return false;
    }
    // Ended, or not back in time: a new session, tried until the run stops.
    while !shared.stopped() {
        match connect(addrs).await {
            Ok(fresh) => {
                let _ = timeout(Duration::from_secs(1), client.close()).await;
                *client = fresh;
                return true;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    false
}

/// Creates the persistent node `path` holding `data`, bounded by [`OP_LIMIT`]: a node a
/// workload starts from.
pub async fn create(client: &Client, path: &str, data: &[u8]) -> Result<(), CheckError> {
    match timeout(OP_LIMIT, client.create(path, data, CreateMode::Persistent)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(CheckError::Client { what: format!("create {path}"), source: e }),
        Err(_) => Err(CheckError::Timeout(format!("create {path} took over {OP_LIMIT:?}"))),
    }
}
