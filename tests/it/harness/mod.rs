//! What every test needs. Server processes, the cutting proxy, clients and bounded waiting
//! come from `ward-testkit`; here are the pieces that need this package's binaries (the
//! `ward` CLI, `ward-contender`) or its wire types: CLI and contender processes, raw
//! sockets, and outside records of lock holders.

mod cli;
mod console;
mod ensemble;
mod procs;
mod raw;
mod record;

pub use cli::{example, run_cli, run_cli_env, run_cli_stdin, run_command, run_sh, stderr_says, ClientProcess};
pub use console::ensemble_view;
pub use ensemble::{answered, connect_serving, figure_of, queue_waiter, try_connect};
pub use procs::Contender;
pub use raw::{call, expect_dropped, frame, raw_connect, raw_session, recv, send, RawConn};
pub use record::{check_at_most, check_exclusive, check_read_write, RecordFile};
pub use ward_testkit::offline::{list_tree, refused_start, start_bare};
pub use ward_testkit::{bounded, connect, connect_with, wait_for, wait_until, within, Proxy, ServerProcess, DEADLINE};

use ward_client::{Error, Watch, WatchEvent};

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
