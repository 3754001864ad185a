//! What every test needs: server processes, CLI processes, contender processes, a cutting
//! proxy, raw sockets, outside records of lock holders and bounded waiting.

mod cli;
mod procs;
mod proxy;
mod raw;
mod record;
mod server;
mod wait;

pub use cli::{run_cli, run_cli_env, ClientProcess};
pub use procs::Contender;
pub use proxy::Proxy;
pub use raw::{call, expect_dropped, frame, raw_connect, raw_session, recv, send, RawConn};
pub use record::{check_at_most, check_exclusive, check_read_write, RecordFile};
pub use server::ServerProcess;
pub use wait::{bounded, wait_for, wait_until, within, DEADLINE};

use std::time::Duration;
use ward_client::{Client, Error, Watch, WatchEvent};

/// Generous: connecting includes the server's first accept on a loaded machine.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// A client with the default session timeout.
pub async fn connect(addrs: &str) -> Client {
    within("connect", DEADLINE, Client::builder(addrs).connect_timeout(CONNECT_TIMEOUT).connect())
        .await
        .unwrap_or_else(|e| panic!("connect to {addrs}: {e:?}"))
}

/// A client asking for `session_timeout`.
pub async fn connect_with(addrs: &str, session_timeout: Duration) -> Client {
    within(
        "connect",
        DEADLINE,
        Client::builder(addrs).connect_timeout(CONNECT_TIMEOUT).session_timeout(session_timeout).connect(),
    )
    .await
    .unwrap_or_else(|e| panic!("connect to {addrs}: {e:?}"))
}

/// The event of a watch that must fire; panics if it does not within [`DEADLINE`].
pub async fn fired(watch: Watch) -> WatchEvent {
    match within("the watch to fire", DEADLINE, watch).await {
        Ok(event) => event,
        Err(e) => panic!("watch failed instead of firing: {e:?}"),
    }
}

/// True when `result` is an `Err(Error::BadArguments(_))`.
pub fn is_bad_arguments<T>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(Error::BadArguments(_)))
}
