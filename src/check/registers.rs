//! The registers workload: clients read (after `sync`), write and compare-and-set a few keys,
//! each value their own (`p3-17`), so that a read names the write it saw; a client on each
//! member only reads. Checked for
//! linearizability per key (G17) and, at the end, for durability.

use super::shared::{connect, recover, Shared, OP_LIMIT};
use super::CheckError;
use std::sync::Arc;
use tokio::time::{error::Elapsed, timeout};
use ward_client::{Client, Error, Stat};
use ward_linearizability::{History, Node, Op, Outcome};
use ward_procs::Rng;

/// What every key holds at the start (version 0).
pub const INITIAL: &[u8] = b"init";

/// One register operation as a client saw it; `outcome` is `None` when it is unknown.
#[derive(Clone, Debug)]
pub struct RegisterOp {
    pub process: u64,
    /// An index into the run's keys.
    pub key: usize,
    pub op: Op,
    pub invoked: u64,
    pub outcome: Option<(Outcome, u64)>,
}

/// What a write's result says about it.
enum Fate {
    Known(Outcome),
    /// Refused before it was logged (`Unavailable`): it never happened.
    NotApplied,
    /// Connection lost, session gone or no answer in time: it may take effect at any later
    /// moment, or never.
    Unknown,
}

fn fate(result: Result<Result<Stat, Error>, Elapsed>) -> Fate {
    match result {
        Ok(Ok(stat)) => Fate::Known(Outcome::Written { version: version(&stat) }),
        Ok(Err(Error::BadVersion)) => Fate::Known(Outcome::BadVersion),
        Ok(Err(Error::NoNode)) => Fate::Known(Outcome::NoNode),
        Ok(Err(Error::Unavailable)) => Fate::NotApplied,
        Ok(Err(_)) | Err(_) => Fate::Unknown,
    }
}

/// A ZooKeeper version as the checker counts it (the server never sends a negative one).
pub fn version(stat: &Stat) -> u64 {
    u64::try_from(stat.version).unwrap_or(0)
}

/// One client process: random synced reads, writes and compare-and-sets on the keys until
/// told to stop.
pub struct Worker {
    pub process: u64,
    addrs: String,
    client: Client,
    keys: Arc<[String]>,
    rng: Rng,
    /// The version this worker last saw of each key: what its next CAS expects.
    seen: Vec<u64>,
    writes: u64,
    pub done: Vec<RegisterOp>,
    /// Sessions this worker had to replace (expired or closed under it).
    pub sessions_lost: u32,
    /// Only reads: never held up behind a write of its own, so that whatever its server
    /// answers a `sync` with is seen at once (a member cut off from the leader, say).
    reader: bool,
}

impl Worker {
    pub async fn new(process: u64, addrs: &str, keys: Arc<[String]>, seed: u64) -> Result<Worker, CheckError> {
        let client = connect(addrs).await?;
        let seen = vec![0; keys.len()];
        let rng = Rng::new(seed);
        Ok(Worker {
            process,
            addrs: addrs.to_owned(),
            client,
            keys,
            rng,
            seen,
            writes: 0,
            done: Vec::new(),
            sessions_lost: 0,
            reader: false,
        })
    }

    /// A worker that only reads.
    pub fn reading_only(self) -> Worker {
        Worker { reader: true, ..self }
    }

    pub async fn run(mut self, shared: Shared) -> Worker {
        while !shared.stopped() {
            let k = self.rng.below(self.keys.len() as u64) as usize;
            let known = match self.rng.below(10) {
                _ if self.reader => self.read(k, &shared).await,
                0..=3 => self.read(k, &shared).await,
                4..=6 => self.write(k, None, &shared).await,
                _ => self.write(k, Some(self.seen[k]), &shared).await,
            };
            if known {
                shared.completed();
                if self.reader {
                    // Many reads, not all of them: the writers' operations must be most of a key's
                    // history, which the checker searches.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            } else if recover(&mut self.client, &self.addrs, &shared).await {
                self.sessions_lost += 1;
            }
        }
        let _ = timeout(OP_LIMIT, self.client.close()).await;
        self
    }

    /// A read preceded by `sync`, timed from before the sync: the read must see every write
    /// completed before that moment. A read that fails tells nothing and is left out.
    async fn read(&mut self, k: usize, shared: &Shared) -> bool {
        let key = &self.keys[k];
        let invoked = shared.clock.now();
        if !matches!(timeout(OP_LIMIT, self.client.sync(key)).await, Ok(Ok(()))) {
            return false;
        }
        let Ok(Ok((value, stat))) = timeout(OP_LIMIT, self.client.get_data(key)).await else { return false };
        let at = shared.clock.now();
        self.seen[k] = version(&stat);
        let outcome = Outcome::Value(Node { value, version: version(&stat) });
        let process = self.process;
        self.done.push(RegisterOp { process, key: k, op: Op::Read, invoked, outcome: Some((outcome, at)) });
        true
    }

    /// An unconditional write, or a compare-and-set expecting version `expected`.
    async fn write(&mut self, k: usize, expected: Option<u64>, shared: &Shared) -> bool {
        self.writes += 1;
        let value = format!("p{}-{}", self.process, self.writes).into_bytes();
        let op = match expected {
            None => Op::Write { value: value.clone() },
            Some(expected_version) => Op::Cas { expected_version, value: value.clone() },
        };
        // A version past ZooKeeper's i32 cannot be reached in a run; saturate rather than fail.
        let expected = expected.map(|v| i32::try_from(v).unwrap_or(i32::MAX));
        let invoked = shared.clock.now();
        let result = timeout(OP_LIMIT, self.client.set_data(&self.keys[k], &value, expected)).await;
        let at = shared.clock.now();
        let process = self.process;
        match fate(result) {
            Fate::Known(outcome) => {
                if let Outcome::Written { version } = outcome {
                    self.seen[k] = version;
                }
                self.done.push(RegisterOp { process, key: k, op, invoked, outcome: Some((outcome, at)) });
                true
            }
            Fate::NotApplied => false,
            Fate::Unknown => {
                self.done.push(RegisterOp { process, key: k, op, invoked, outcome: None });
                false
            }
        }
    }
}

/// Creates `keys` holding [`INITIAL`] (version 0) and returns a history that starts there.
pub async fn prepare_keys(client: &Client, keys: &[String]) -> Result<History, CheckError> {
    let mut history = History::new();
    for key in keys {
        super::shared::create(client, key, INITIAL).await?;
        history.set_initial(key.as_str(), Some(Node { value: INITIAL.to_vec(), version: 0 }));
    }
    Ok(history)
}

/// Adds the workers' operations to `history` (which [`prepare_keys`] started).
pub fn record(history: &mut History, keys: &[String], ops: &[RegisterOp]) {
    for d in ops {
        let id = history.invoke(d.process, keys[d.key].as_str(), d.op.clone(), d.invoked);
        if let Some((outcome, at)) = &d.outcome {
            // The workers record only outcomes their operation can have, after its start.
            let _ = history.complete(id, outcome.clone(), *at);
        }
    }
}

/// Figures of a run: synced reads, writes acknowledged, CAS refused, unknown outcomes.
pub fn summary(ops: &[RegisterOp], sessions_lost: u32) -> String {
    let (mut reads, mut written, mut bad_version, mut unknown) = (0, 0, 0, 0);
    for d in ops {
        match &d.outcome {
            None => unknown += 1,
            Some((Outcome::Value(_), _)) => reads += 1,
            Some((Outcome::Written { .. }, _)) => written += 1,
            Some((Outcome::BadVersion, _)) => bad_version += 1,
            Some(_) => {}
        }
    }
    format!(
        "{reads} synced reads, {written} writes acknowledged, {bad_version} CAS refused (bad version), \
         {unknown} writes of unknown outcome, {sessions_lost} sessions replaced"
    )
}
