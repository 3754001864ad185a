//! One writer with one write outstanding, on a session that lists every member it may use:
//! what a planned restart or a partition costs an ordinary client. It records when each
//! write was acknowledged, every failure, and every session it had to replace.

use crate::sys::{Error, Result, Session, System, ZkSession};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// After a failed write, before the next: short against any stall, enough not to spin.
const RETRY_PAUSE: Duration = Duration::from_millis(2);
/// How long the writer may take to see its stop flag (a write can hang on a dead member).
const STOP_PATIENCE: Duration = Duration::from_secs(60);

/// A session that can say whether it has ended for good (expired or closed): the writer then
/// opens another, and that counts as a session lost.
pub trait Tracked: Session {
    fn ended(&self) -> bool;
}

impl Tracked for ward_client::Client {
    fn ended(&self) -> bool {
        self.state().is_terminal()
    }
}

impl Tracked for ZkSession {
    fn ended(&self) -> bool {
        self.state().is_terminated()
    }
}

/// What the writer saw.
pub struct Record {
    /// When each write was acknowledged, in order.
    pub acks: Vec<Instant>,
    /// Failed writes by error (each tried again).
    pub failed: BTreeMap<String, u64>,
    /// Sessions that ended under the writer and were replaced.
    pub sessions_lost: u64,
}

impl Record {
    pub fn failures(&self) -> u64 {
        self.failed.values().sum()
    }
}

pub struct SteadyWriter {
    stop: Arc<AtomicBool>,
    task: JoinHandle<Result<Record>>,
}

impl SteadyWriter {
    /// Opens a session on `sys` and starts overwriting `path` (which must exist).
    pub async fn start<Y>(sys: Arc<Y>, path: String) -> Result<SteadyWriter>
    where
        Y: System,
        Y::S: Tracked,
    {
        let session = sys.connect().await?;
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(write_loop(sys, session, path, stop.clone()));
        Ok(SteadyWriter { stop, task })
    }

    /// Stops the writer after its outstanding write and returns what it saw.
    pub async fn stop(self) -> Result<Record> {
        self.stop.store(true, Ordering::Relaxed);
        tokio::time::timeout(STOP_PATIENCE, self.task)
            .await
            .map_err(|_| Error(format!("the writer did not stop within {STOP_PATIENCE:?}")))?
            .map_err(|e| Error(format!("writer task: {e}")))?
    }
}

async fn write_loop<Y>(sys: Arc<Y>, mut session: Y::S, path: String, stop: Arc<AtomicBool>) -> Result<Record>
where
    Y: System,
    Y::S: Tracked,
{
    let mut record = Record { acks: Vec::new(), failed: BTreeMap::new(), sessions_lost: 0 };
    while !stop.load(Ordering::Relaxed) {
        match session.set_data(&path, b"steady").await {
            Ok(()) => record.acks.push(Instant::now()),
            Err(e) => {
                *record.failed.entry(e.0.chars().take(80).collect()).or_default() += 1;
                if session.ended() {
                    record.sessions_lost += 1;
                    session = reconnect(&*sys, &stop).await?;
                } else {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }
    session.close().await;
    Ok(record)
}

/// A new session in place of one that ended; tries until it opens or the writer is stopped.
async fn reconnect<Y: System>(sys: &Y, stop: &AtomicBool) -> Result<Y::S> {
    loop {
        match sys.connect().await {
            Ok(s) => return Ok(s),
            Err(e) if stop.load(Ordering::Relaxed) => return Err(e),
            Err(_) => tokio::time::sleep(RETRY_PAUSE).await,
        }
    }
}
