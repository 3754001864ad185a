//! i: what fencing costs a lock holder: its writes plain and fenced, and its check that it
//! still holds.

use super::DATA;
use crate::stats::{Figures, Samples};
use crate::sys::{Result, Session, System};
use std::time::{Duration, Instant};

/// What one step of the workload asks.
#[derive(Clone, Copy)]
enum Ask {
    /// A set of the resource's data.
    Plain,
    /// The same set, refused by the server unless the lock is still held.
    Fenced,
    /// Whether the lock is still held, linearizably, without writing.
    Check,
}

impl Ask {
    fn name(self) -> &'static str {
        match self {
            Ask::Plain => "plain set",
            Ask::Fenced => "fenced set",
            Ask::Check => "check held",
        }
    }
}

/// i. One session holds a lock and, one request at a time, sets a node's data plainly, then
/// fenced by the lock, then checks that it still holds: each for `duration`.
pub(super) async fn fencing<Y: System>(sys: &Y, dir: &str, duration: Duration) -> Result<Figures> {
    let s = sys.connect().await?;
    let (lock, node) = (format!("{dir}/lock"), format!("{dir}/resource"));
    s.ensure(&lock).await?;
    s.create(&node, &DATA, false).await?;
    let guard = s.lock(&lock).await?;
    let mut f = Figures::default();
    for ask in [Ask::Plain, Ask::Fenced, Ask::Check] {
        let mut samples = Samples::default();
        let start = Instant::now();
        while start.elapsed() < duration {
            let t0 = Instant::now();
            match ask {
                Ask::Plain => s.set_data(&node, &DATA).await?,
                Ask::Fenced => s.set_fenced(&guard, &node, &DATA).await?,
                Ask::Check => s.check_held(&guard).await?,
            }
            samples.push(t0.elapsed());
        }
        f.rate(&format!("{}/s", ask.name()), samples.len(), start.elapsed());
        f.latency(ask.name(), &mut samples);
    }
    s.unlock(guard).await?;
    s.close().await;
    Ok(f)
}
