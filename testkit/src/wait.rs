//! Bounds on whole test bodies, and running test bodies one at a time; with the bounded
//! waiting tests poll with ([`ward_procs::wait`]), re-exported here.

use std::future::Future;
use std::time::Duration;

pub use ward_procs::wait::{wait_for, wait_until, within, DEADLINE};

/// The bound on one whole test, so a hang fails with a message instead of stalling CI.
pub const TEST_DEADLINE: Duration = Duration::from_secs(180);

/// Runs a whole test body under [`TEST_DEADLINE`].
pub async fn bounded<T>(fut: impl Future<Output = T>) -> T {
    within("the test", TEST_DEADLINE, fut).await
}

/// Test bodies that share this process's CPU badly (a kill loop, a throughput figure) hold
/// this to run one at a time.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}
