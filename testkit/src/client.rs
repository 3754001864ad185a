//! Clients for tests: connected with generous bounds, and watched into a session state;
//! and the questions put to a member with short bounds ([`ward_procs::member`]), re-exported
//! here.

use crate::wait::{within, DEADLINE};
use std::time::Duration;
use ward_client::{Client, SessionState};

pub use ward_procs::member::{member_has, synced};

/// Generous: connecting includes the server's first accept on a loaded machine.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// A client of `addrs` with the default session timeout.
pub async fn connect(addrs: &str) -> Client {
    within("connect", DEADLINE, Client::builder(addrs).connect_timeout(CONNECT_TIMEOUT).connect())
        .await
        .unwrap_or_else(|e| panic!("connect to {addrs}: {e:?}"))
}

/// A client of `addrs` asking for `session_timeout`.
pub async fn connect_with(addrs: &str, session_timeout: Duration) -> Client {
    within(
        "connect",
        DEADLINE,
        Client::builder(addrs).connect_timeout(CONNECT_TIMEOUT).session_timeout(session_timeout).connect(),
    )
    .await
    .unwrap_or_else(|e| panic!("connect to {addrs}: {e:?}"))
}

/// A client of `addrs` that authenticates with each `(scheme, credentials)` of `auth` as it
/// connects (and again on every reconnect).
pub async fn connect_as(addrs: &str, auth: &[(&str, &str)]) -> Client {
    let mut builder = Client::builder(addrs).connect_timeout(CONNECT_TIMEOUT);
    for (scheme, credentials) in auth {
        builder = builder.auth(scheme, credentials);
    }
    within("connect", DEADLINE, builder.connect()).await.unwrap_or_else(|e| panic!("connect to {addrs}: {e:?}"))
}

/// Waits until the client's session state is `want`, remembering every state seen on the
/// way for the panic message.
pub async fn wait_state(client: &Client, want: SessionState, limit: Duration) {
    let mut states = client.state_changes();
    let mut seen = vec![*states.borrow_and_update()];
    let reached = tokio::time::timeout(limit, async {
        loop {
            let now = seen[seen.len() - 1];
            // A terminal state never changes again: waiting on would only time out.
            if now == want || (now.is_terminal() && !want.is_terminal()) {
                return;
            }
            if states.changed().await.is_err() {
                // The client task is gone: the state is final.
                std::future::pending::<()>().await;
            }
            seen.push(*states.borrow_and_update());
        }
    })
    .await;
    let last = seen[seen.len() - 1];
    if reached.is_err() || last != want {
        panic!("session {:?} did not reach {want:?} within {limit:?}; states seen: {seen:?}", client.session_id());
    }
}
