//! The watches workload (G6): a writer sets a few keys; watchers arm a data watch on one
//! (`get_data_watch`), then read it without a watch until the watch fires. What each
//! watcher saw is recorded as it saw it: the zxid the watch was armed at, the event, and any
//! read that showed a later change while the event had not arrived (the client has every
//! event before the reply that follows it on the connection, so after such a read the event
//! must be there).

use super::shared::{recover, Shared, OP_LIMIT};
use super::CheckError;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::timeout;
use ward_client::{Client, Error, EventKind, Watch};
use ward_procs::Rng;
use ward_proto::Zxid;

/// Reads a watcher makes before it gives a quiet watch up.
const READS: u32 = 50;
/// Between two of a watcher's reads, and after each write: the writer must not outrun the
/// watchers by so much that every read shows a change.
const PACE: Duration = Duration::from_millis(4);

/// A write to a watched key.
#[derive(Clone, Debug)]
pub struct WatchWrite {
    pub process: u64,
    pub key: usize,
    pub invoked: u64,
    /// When it was acknowledged and the zxid of the change (`None`: outcome unknown).
    pub done: Option<(u64, Zxid)>,
}

/// The event a watch delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fired {
    pub kind: EventKind,
    pub zxid: Zxid,
    /// When the watcher had it.
    pub at: u64,
}

/// One armed watch, from `get_data_watch` to its event (or until given up).
#[derive(Clone, Debug)]
pub struct Armed {
    pub process: u64,
    pub key: usize,
    /// The node's `mzxid` in the reply that armed the watch.
    pub zxid: Zxid,
    pub invoked: u64,
    pub completed: u64,
    pub event: Option<Fired>,
    /// A later read showed this `mzxid` (past `zxid`) at this time while the event had not
    /// arrived.
    pub early: Option<(Zxid, u64)>,
    /// The client lost its connection meanwhile (the watch was re-armed with `SetWatches`,
    /// which reports the latest change rather than the first).
    pub reconnected: bool,
}

pub struct Writer {
    pub process: u64,
    addrs: String,
    client: Client,
    keys: Arc<[String]>,
    rng: Rng,
    pub writes: Vec<WatchWrite>,
}

impl Writer {
    pub async fn new(process: u64, addrs: &str, keys: Arc<[String]>, seed: u64) -> Result<Writer, CheckError> {
        let client = super::connect(addrs).await?;
        Ok(Writer { process, addrs: addrs.to_owned(), client, keys, rng: Rng::new(seed), writes: Vec::new() })
    }

    pub async fn run(mut self, shared: Shared) -> Writer {
        let mut n = 0u64;
        while !shared.stopped() {
            n += 1;
            let key = self.rng.below(self.keys.len() as u64) as usize;
            let invoked = shared.clock.now();
            let value = format!("p{}-{n}", self.process);
            let written = timeout(OP_LIMIT, self.client.set_data(&self.keys[key], value.as_bytes(), None)).await;
            let done = match written {
                Ok(Ok(stat)) => Some((shared.clock.now(), stat.mzxid)),
                // Refused before it was logged.
                Ok(Err(Error::Unavailable)) => {
                    recover(&mut self.client, &self.addrs, &shared).await;
                    continue;
                }
                _ => None,
            };
            self.writes.push(WatchWrite { process: self.process, key, invoked, done });
            match done {
                Some(_) => shared.completed(),
                None => {
                    recover(&mut self.client, &self.addrs, &shared).await;
                }
            }
            tokio::time::sleep(PACE).await;
        }
        let _ = timeout(OP_LIMIT, self.client.close()).await;
        self
    }
}

pub struct Watcher {
    pub process: u64,
    addrs: String,
    client: Client,
    keys: Arc<[String]>,
    rng: Rng,
    pub armed: Vec<Armed>,
    pub sessions_lost: u32,
}

impl Watcher {
    pub async fn new(process: u64, addrs: &str, keys: Arc<[String]>, seed: u64) -> Result<Watcher, CheckError> {
        let client = super::connect(addrs).await?;
        let rng = Rng::new(seed);
        Ok(Watcher { process, addrs: addrs.to_owned(), client, keys, rng, armed: Vec::new(), sessions_lost: 0 })
    }

    pub async fn run(mut self, shared: Shared) -> Watcher {
        while !shared.stopped() {
            let key = self.rng.below(self.keys.len() as u64) as usize;
            match self.watch(key, &shared).await {
                Some(armed) => {
                    self.armed.push(armed);
                    shared.completed();
                }
                None => {
                    if recover(&mut self.client, &self.addrs, &shared).await {
                        self.sessions_lost += 1;
                    }
                }
            }
        }
        let _ = timeout(OP_LIMIT, self.client.close()).await;
        self
    }

    /// Arms a watch on key `key` and reads until it fires. `None` if a call failed before
    /// anything was learnt.
    async fn watch(&mut self, key: usize, shared: &Shared) -> Option<Armed> {
        let path = &self.keys[key];
        let mut states = self.client.state_changes();
        states.borrow_and_update();
        let invoked = shared.clock.now();
        let (_, stat, mut watch) = timeout(OP_LIMIT, self.client.get_data_watch(path)).await.ok()?.ok()?;
        let completed = shared.clock.now();
        let mut armed = Armed {
            process: self.process,
            key,
            zxid: stat.mzxid,
            invoked,
            completed,
            event: None,
            early: None,
            reconnected: false,
        };
        for _ in 0..READS {
            if let Some(fired) = fired(&mut watch, shared) {
                armed.event = fired;
                break;
            }
            tokio::time::sleep(PACE).await;
            let Ok(Ok((_, stat))) = timeout(OP_LIMIT, self.client.get_data(path)).await else { break };
            let at = shared.clock.now();
            // The event, if one was sent before the reply, is there by now.
            if let Some(fired) = fired(&mut watch, shared) {
                armed.event = fired;
                break;
            }
            if stat.mzxid > armed.zxid {
                armed.early = Some((stat.mzxid, at));
                // Still wanted: which change it reports, when it comes.
                if let Ok(Ok(event)) = timeout(OP_LIMIT, &mut watch).await {
                    armed.event = Some(Fired { kind: event.kind, zxid: event.zxid, at: shared.clock.now() });
                }
                break;
            }
        }
        armed.reconnected = states.has_changed().unwrap_or(true);
        Some(armed)
    }
}

/// The watch's event if it has come: `Some(None)` if the watch ended without one (the
/// session is over), `None` while it has not.
fn fired(watch: &mut Watch, shared: &Shared) -> Option<Option<Fired>> {
    match watch.try_recv()? {
        Ok(event) => Some(Some(Fired { kind: event.kind, zxid: event.zxid, at: shared.clock.now() })),
        Err(_) => Some(None),
    }
}

/// Figures of a run.
pub fn summary(writes: &[WatchWrite], armed: &[Armed], sessions_lost: u32) -> String {
    let acked = writes.iter().filter(|w| w.done.is_some()).count();
    let fired = armed.iter().filter(|a| a.event.is_some()).count();
    let reconnected = armed.iter().filter(|a| a.reconnected).count();
    format!(
        "{acked} writes to watched keys acknowledged, {} watches armed, {fired} fired ({reconnected} across a \
         reconnect), {sessions_lost} watcher sessions replaced",
        armed.len()
    )
}
