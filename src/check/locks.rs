//! The locks workload: clients loop lock → synced read of a counter node → write of
//! counter + 1 fenced with the lock's token (docs/recipes.md "Fencing": the server refuses it
//! unless that grant still holds) → unlock. The write is unconditional on the version, so
//! that only the lock and the fence keep the counter right: checked for overlapping holds,
//! stale tokens accepted and lost increments (G12), and for durability at the end.

use super::registers::version;
use super::shared::{connect, recover, Shared, OP_LIMIT};
use super::CheckError;
use tokio::time::timeout;
use ward_client::{Client, Error};

/// What the fenced write came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Applied: the counter now has this version.
    Accepted { version: u64 },
    /// `StaleFence`: the server refused the token.
    Refused,
    /// No answer: it may have been applied, at any later moment.
    Unknown,
}

/// A fenced write of `value` to the counter.
#[derive(Clone, Debug)]
pub struct FencedWrite {
    pub value: u64,
    pub invoked: u64,
    pub outcome: WriteOutcome,
    pub completed: u64,
}

/// One grant as its holder saw it: from `lock()` returning to `unlock()` being sent.
#[derive(Clone, Debug)]
pub struct Hold {
    pub process: u64,
    pub token: u64,
    /// When `lock()` returned.
    pub acquired: u64,
    /// When the holder let go (sent the release).
    pub released: u64,
    /// The guard reported the lock lost before the holder let go: the holder could know it
    /// might no longer hold.
    pub lost: bool,
    /// The counter as read under the lock (value, version).
    pub read: Option<(u64, u64)>,
    pub write: Option<FencedWrite>,
}

pub struct Worker {
    pub process: u64,
    addrs: String,
    client: Client,
    dir: String,
    counter: String,
    pub holds: Vec<Hold>,
    /// `lock()` calls that failed or timed out (the attempt is cancelled and retried).
    pub failed_acquires: u64,
    pub sessions_lost: u32,
}

impl Worker {
    pub async fn new(process: u64, addrs: &str, dir: &str, counter: &str) -> Result<Worker, CheckError> {
        let client = connect(addrs).await?;
        Ok(Worker {
            process,
            addrs: addrs.to_owned(),
            client,
            dir: dir.to_owned(),
            counter: counter.to_owned(),
            holds: Vec::new(),
            failed_acquires: 0,
            sessions_lost: 0,
        })
    }

    pub async fn run(mut self, shared: Shared) -> Worker {
        while !shared.stopped() {
            let ok = self.cycle(&shared).await;
            if ok {
                shared.completed();
            } else if recover(&mut self.client, &self.addrs, &shared).await {
                self.sessions_lost += 1;
            }
        }
        let _ = timeout(OP_LIMIT, self.client.close()).await;
        self
    }

    /// One lock → read → fenced write → unlock; false if something failed on the way.
    async fn cycle(&mut self, shared: &Shared) -> bool {
        let guard = match timeout(OP_LIMIT, self.client.lock(&self.dir)).await {
            Ok(Ok(guard)) => guard,
            _ => {
                self.failed_acquires += 1;
                return false;
            }
        };
        let acquired = shared.clock.now();
        let fence = guard.fence();
        let mut hold = Hold {
            process: self.process,
            token: fence.token,
            acquired,
            released: acquired,
            lost: false,
            read: None,
            write: None,
        };
        let mut ok = false;
        if let Some((value, read_version)) = self.read_counter().await {
            hold.read = Some((value, read_version));
            let next = value + 1;
            let invoked = shared.clock.now();
            let written = timeout(
                OP_LIMIT,
                self.client.set_data_fenced(&fence, &self.counter, next.to_string().as_bytes(), None),
            )
            .await;
            let completed = shared.clock.now();
            let outcome = match written {
                Ok(Ok(stat)) => Some(WriteOutcome::Accepted { version: version(&stat) }),
                Ok(Err(Error::StaleFence)) => Some(WriteOutcome::Refused),
                // Refused before it was logged: it never happened.
                Ok(Err(Error::Unavailable)) => None,
                _ => Some(WriteOutcome::Unknown),
            };
            ok = matches!(outcome, Some(WriteOutcome::Accepted { .. } | WriteOutcome::Refused));
            hold.write = outcome.map(|outcome| FencedWrite { value: next, invoked, outcome, completed });
        }
        hold.released = shared.clock.now();
        hold.lost = guard.is_lost();
        // Dropping the guard on failure releases it in the background, across reconnects.
        if ok {
            ok = matches!(timeout(OP_LIMIT, guard.unlock()).await, Ok(Ok(())));
        }
        self.holds.push(hold);
        ok
    }

    /// The counter after `sync`: (value, version).
    async fn read_counter(&self) -> Option<(u64, u64)> {
        if !matches!(timeout(OP_LIMIT, self.client.sync(&self.counter)).await, Ok(Ok(()))) {
            return None;
        }
        let Ok(Ok((data, stat))) = timeout(OP_LIMIT, self.client.get_data(&self.counter)).await else { return None };
        Some((parse_counter(&data)?, version(&stat)))
    }
}

/// The counter's value, a decimal number.
pub fn parse_counter(data: &[u8]) -> Option<u64> {
    std::str::from_utf8(data).ok()?.parse().ok()
}

/// Figures of a run.
pub fn summary(holds: &[Hold], failed_acquires: u64, sessions_lost: u32) -> String {
    let writes = holds.iter().filter_map(|h| h.write.as_ref());
    let (mut accepted, mut refused, mut unknown) = (0, 0, 0);
    for w in writes {
        match w.outcome {
            WriteOutcome::Accepted { .. } => accepted += 1,
            WriteOutcome::Refused => refused += 1,
            WriteOutcome::Unknown => unknown += 1,
        }
    }
    let lost = holds.iter().filter(|h| h.lost).count();
    format!(
        "{} holds ({lost} reported lost), {accepted} fenced writes accepted, {refused} refused as stale, \
         {unknown} of unknown outcome, {failed_acquires} failed acquires, {sessions_lost} sessions replaced",
        holds.len()
    )
}
