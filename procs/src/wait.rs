//! Bounded waiting. Tests (and [`Ensemble::wait_all_have`](crate::Ensemble::wait_all_have))
//! synchronise by polling for the state they need, never by sleeping a fixed time; the
//! bounds are generous so a loaded machine does not fail them. Each form panics naming what
//! it waited for when its bound passes.

use std::future::Future;
use std::time::{Duration, Instant};

/// The default bound for anything that should happen "soon".
pub const DEADLINE: Duration = Duration::from_secs(30);

const POLL: Duration = Duration::from_millis(20);

/// Polls `check` until it returns true; panics naming `what` if `limit` passes first.
pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_for(what, limit, || {
        let fut = check();
        async move { fut.await.then_some(()) }
    })
    .await
}

/// Polls `check` until it returns `Some`, and returns what it held.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        let remaining = limit.saturating_sub(start.elapsed());
        // A check that itself hangs counts against the same bound.
        match tokio::time::timeout(remaining, check()).await {
            Ok(Some(value)) => return value,
            Ok(None) if start.elapsed() < limit => tokio::time::sleep(POLL).await,
            _ => panic!("timed out after {limit:?} waiting until {what}"),
        }
    }
}

/// Runs `fut`, panicking naming `what` if it takes longer than `limit`.
pub async fn within<T>(what: &str, limit: Duration, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not finish within {limit:?}"),
    }
}
