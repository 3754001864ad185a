//! Recording a history: each operation's invocation, and its completion when one is seen.
//!
//! Times are nanoseconds on one monotonic clock (see [`Clock`]). Take the invocation time
//! before the request is sent and the completion time after the reply is received, so that
//! each recorded interval contains the moment the operation really took effect.
//!
//! An operation whose outcome is unknown (timeout, connection lost) is simply never
//! completed: it may have taken effect at any moment after its invocation, or never.
//! An operation known to have failed without reaching the service may be left out.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use crate::model::{fits, Node, Op, Outcome};

/// Which operation of a [`History`]: its position in the order of invocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId(usize);

impl OpId {
    pub fn index(self) -> usize {
        self.0
    }

    /// The id of the record at `index` of [`History::records`].
    pub fn at(index: usize) -> OpId {
        OpId(index)
    }
}

/// One recorded operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The caller's name for who ran it (a client, a thread); only shown in explanations.
    pub process: u64,
    pub key: String,
    pub op: Op,
    pub invoked: u64,
    /// `None` while (or if forever) the outcome is unknown.
    pub completion: Option<Completion>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub outcome: Outcome,
    pub at: u64,
}

/// The operations of a test run, across keys, in the order they were invoked.
#[derive(Clone, Debug, Default)]
pub struct History {
    records: Vec<Record>,
    initial: BTreeMap<String, Node>,
}

impl History {
    pub fn new() -> Self {
        Self::default()
    }

    /// What `key` held before the first recorded operation (absent unless said here).
    pub fn set_initial(&mut self, key: impl Into<String>, node: Option<Node>) {
        let key = key.into();
        match node {
            Some(node) => self.initial.insert(key, node),
            None => self.initial.remove(&key),
        };
    }

    /// Records that `process` sent `op` on `key` at time `at`.
    pub fn invoke(&mut self, process: u64, key: impl Into<String>, op: Op, at: u64) -> OpId {
        self.records.push(Record { process, key: key.into(), op, invoked: at, completion: None });
        OpId(self.records.len() - 1)
    }

    /// Records that operation `id` returned `outcome` at time `at`.
    pub fn complete(&mut self, id: OpId, outcome: Outcome, at: u64) -> Result<(), HistoryError> {
        let record = self.records.get_mut(id.0).ok_or(HistoryError::NoSuchOp(id))?;
        if record.completion.is_some() {
            return Err(HistoryError::AlreadyCompleted(id));
        }
        if at < record.invoked {
            return Err(HistoryError::CompletedBeforeInvoked { id, invoked: record.invoked, completed: at });
        }
        if !fits(&record.op, &outcome) {
            return Err(HistoryError::OutcomeDoesNotFit(id));
        }
        record.completion = Some(Completion { outcome, at });
        Ok(())
    }

    pub fn get(&self, id: OpId) -> Option<&Record> {
        self.records.get(id.0)
    }

    /// All records; a record's index is its [`OpId::index`].
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    pub fn initial(&self, key: &str) -> Option<&Node> {
        self.initial.get(key)
    }

    /// The operations of each key, in invocation order (linearizability is local: each key
    /// can be checked on its own).
    pub(crate) fn by_key(&self) -> BTreeMap<&str, Vec<OpId>> {
        let mut keys: BTreeMap<&str, Vec<OpId>> = BTreeMap::new();
        for (index, record) in self.records.iter().enumerate() {
            keys.entry(record.key.as_str()).or_default().push(OpId(index));
        }
        keys
    }
}

/// A caller mistake in recording a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryError {
    NoSuchOp(OpId),
    AlreadyCompleted(OpId),
    CompletedBeforeInvoked {
        id: OpId,
        invoked: u64,
        completed: u64,
    },
    /// An outcome that operation cannot have (a read that returned `Created`).
    OutcomeDoesNotFit(OpId),
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchOp(id) => write!(f, "no operation #{}", id.0),
            Self::AlreadyCompleted(id) => write!(f, "operation #{} completed twice", id.0),
            Self::CompletedBeforeInvoked { id, invoked, completed } => {
                write!(f, "operation #{} completed at {completed}, before its invocation at {invoked}", id.0)
            }
            Self::OutcomeDoesNotFit(id) => write!(f, "operation #{} cannot have that outcome", id.0),
        }
    }
}

impl std::error::Error for HistoryError {}

/// Nanoseconds since the clock started, on `Instant` (monotonic); share one per test run.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    pub fn start() -> Self {
        Self { start: Instant::now() }
    }

    pub fn now(&self) -> u64 {
        // u64 nanoseconds last 584 years.
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
