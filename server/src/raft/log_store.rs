//! openraft's log store over the [`Wal`]: every append, truncate and purge goes to the log's
//! I/O thread ([`Writer`]), which writes appends queued together as one record and makes
//! it durable; the vote is a small file replaced atomically. An append returns once its
//! entries are readable and queued for the disk; openraft hears that they are flushed
//! (`IOFlushed`) only once the `fdatasync` that covers them has returned, and meanwhile
//! hands the store the next ones.
//!
//! Entries not yet applied are also kept in memory: openraft reads every committed entry
//! back to apply it, and a store that went to disk for that would pay for the write twice.
//! Once the state machine has applied an entry it tells the store ([`Evictor`]), and the
//! entry leaves memory: keeping every entry until the next snapshot's purge held a copy of
//! each recent write's data (about as much again as the tree itself). A reader that asks for
//! an applied entry after that (a lagging follower) gets it from the segment files
//! (`raft/readback.rs`).

use super::activity::{Activity, Watch};
use super::error::{FileError, OpenError};
use super::fsutil::{magic, read_versioned, remove_stale_tmp, write_checked};
use super::late::Late;
use super::marks::Marks;
use super::readback;
use super::record::{Record, RecordRef};
use super::snapshot_file::InPlace;
use super::snapshot_trigger::SnapshotTrigger;
use super::types::{Entry, LogId, LogState, NodeId, TypeConfig, Vote};
use super::wal::{encode_payload, OnLoss, Replayed, Wal};
use super::writer::{Holds, Writer};
use crate::metrics::log::LogFigures;
use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::RaftLogReader;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::{Bound, Range, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// The vote file's magic is `WARDVOT` and its format version.
const VOTE_KIND: &[u8; 7] = b"WARDVOT";
const VOTE_VERSION: u8 = 1;

/// What readers share with the writer.
#[derive(Default)]
struct Cache {
    entries: BTreeMap<u64, Entry>,
    last_purged: Option<LogId>,
    /// The newest entry dropped from memory because it was applied; it and older entries
    /// since `last_purged` are on disk only.
    last_evicted: Option<LogId>,
    /// Where reading those back may start (the I/O thread adds to them).
    marks: Arc<Marks>,
    /// The vote as saved: replication reads it beside the entries, to stop sending a
    /// leader's entries once its vote is no longer the one saved here.
    vote: Option<Vote>,
}

/// The log store handed to openraft. Only openraft's core writes through it, one call at a
/// time, which is what keeps appends, truncations, purges and votes in order.
pub struct LogStore {
    writer: Writer,
    log_dir: PathBuf,
    cache: Arc<RwLock<Cache>>,
    vote_path: PathBuf,
    /// The oldest segment's number when the log was opened.
    oldest_segment: u64,
    /// The bytes of the records found when the log was opened.
    found_bytes: u64,
    activity: Arc<Activity>,
    /// Counts the bytes appended, to decide when a snapshot is due.
    trigger: Option<Arc<SnapshotTrigger>>,
    /// Where durable appends are counted.
    figures: Arc<LogFigures>,
    /// Appends acknowledged before they are written: only under `--unsafe-break
    /// ack-before-fsync` (`raft/late.rs`); `None` always otherwise.
    late: Option<Late>,
    /// The snapshot file in place, once the state machine is open: no purge reaches the
    /// disk beyond what it covers (see `purge`), and how long a purge waits for it.
    snapshot: Option<(InPlace, Duration)>,
}

/// A reader of the log for openraft's apply and replication tasks: unapplied entries from
/// memory, applied ones from the segment files.
#[derive(Clone)]
pub struct LogReader {
    cache: Arc<RwLock<Cache>>,
    log_dir: PathBuf,
}

/// The state machine's handle on the store: entries it has applied leave memory.
#[derive(Clone)]
pub struct Evictor {
    cache: Arc<RwLock<Cache>>,
    /// Applied entries kept in memory behind the newest applied one. 0 on a single server;
    /// an ensemble's leader sends recently applied entries to followers that are a little
    /// behind, and reading those back from the segment files cost the leader most of its CPU.
    keep: u64,
}

impl Evictor {
    /// Keeps the last `keep` applied entries in memory (see the field).
    pub fn keeping(self, keep: u64) -> Evictor {
        Evictor { keep, ..self }
    }

    /// Entries up to `index` are applied: drop them from memory, but for the last `keep`.
    pub fn applied(&self, index: u64) {
        let index = index.saturating_sub(self.keep);
        let mut cache = write(&self.cache);
        while let Some(entry) = cache.entries.first_entry() {
            if *entry.key() > index {
                break;
            }
            let log_id = entry.remove().log_id;
            cache.last_evicted = Some(log_id);
        }
    }
}

impl LogStore {
    /// Opens the log in `dir/log` and the vote in `dir/vote`; refuses a log that lost
    /// durable data.
    pub fn open(dir: &Path, segment_bytes: u64) -> Result<LogStore, OpenError> {
        LogStore::open_with(dir, segment_bytes, OnLoss::Refuse, Arc::default())
    }

    /// [`LogStore::open`], with what to do about lost data, counting its syncs and appends
    /// in `figures`.
    pub fn open_with(
        dir: &Path,
        segment_bytes: u64,
        on_loss: OnLoss,
        figures: Arc<LogFigures>,
    ) -> Result<LogStore, OpenError> {
        let vote_path = dir.join("vote");
        remove_stale_tmp(&vote_path)?;
        let vote = match read_versioned(&vote_path, VOTE_KIND, VOTE_VERSION)? {
            Some((_, bytes)) => Some(
                postcard::from_bytes(&bytes)
                    .map_err(|source| OpenError::Decode { what: vote_path.display().to_string(), source })?,
            ),
            None => None,
        };
        let log_dir = dir.join("log");
        let began = std::time::Instant::now();
        let (mut wal, replayed) = Wal::open_with(&log_dir, segment_bytes, on_loss)?;
        wal.report_to(figures.clone());
        let mut cache = Cache { vote, ..Cache::default() };
        let mut segment_max = BTreeMap::new();
        for Replayed { place, bytes, record } in replayed {
            match record {
                Record::Entries(entries) => {
                    if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
                        segment_max.insert(place.segment, last.log_id.index);
                        cache.marks.written(first.log_id.index, place, bytes);
                    }
                    cache.entries.extend(entries.into_iter().map(|e| (e.log_id.index, e)));
                }
                Record::Truncate { since } => {
                    cache.marks.truncated(since, place);
                    drop(cache.entries.split_off(&since));
                }
                Record::Purge { upto } => cache.purge(upto),
            }
        }
        tracing::info!(
            entries = cache.entries.len(),
            purged = %super::types::shown(cache.last_purged),
            last = %cache.entries.last_key_value().map_or_else(|| "none".to_string(), |(i, _)| i.to_string()),
            bytes = wal.found_bytes(),
            took = ?began.elapsed(),
            "log opened"
        );
        let (oldest_segment, found_bytes) = (wal.oldest_segment(), wal.found_bytes());
        let writer = Writer::start(wal, segment_max, cache.marks.clone())?;
        let cache = Arc::new(RwLock::new(cache));
        let activity = Arc::default();
        Ok(LogStore {
            writer,
            log_dir,
            cache,
            vote_path,
            oldest_segment,
            found_bytes,
            activity,
            trigger: None,
            late: None,
            snapshot: None,
            figures,
        })
    }

    /// For an ensemble member: a vote of its own that a quorum had granted is read back as
    /// not yet granted, so that a member restarted while it led campaigns for a new term
    /// rather than leading again at once. openraft would resume such leadership without an
    /// election (0.10 does not for an ensemble, `enable_leader_restore` off, and this keeps
    /// it so whatever the setting), and its read index is then the first entry of the old term or the last one
    /// the snapshot applied, whichever is later (the commit index is not stored): it misses
    /// writes this member acknowledged before it stopped, and a follower that had not yet
    /// heard they were committed would answer a `sync` without them (G17). The vote still
    /// promises what matters, no second vote in its term; a new term's first entry follows
    /// every write committed before.
    pub(crate) fn forget_leadership(&mut self, me: NodeId) {
        if let Some(vote) = write(&self.cache).vote.as_mut().filter(|v| v.committed && v.leader_id.node_id == me) {
            tracing::info!(term = vote.leader_id.term, "led before this start: leads again only if elected");
            vote.committed = false;
        }
    }

    /// The entries missing at the front of the log, if any: those after the last purge (or
    /// from index 0) and before the first entry there is. Only lost segment files leave
    /// such a gap.
    pub(crate) fn missing_front(&self) -> Option<Range<u64>> {
        let cache = read(&self.cache);
        let from = cache.last_purged.map_or(0, |p| p.index + 1);
        let to = *cache.entries.first_key_value()?.0;
        (from < to).then_some(from..to)
    }

    /// The last log id purged, and the first one there is.
    pub(crate) fn bounds(&self) -> (Option<LogId>, Option<LogId>) {
        let cache = read(&self.cache);
        (cache.last_purged, cache.entries.first_key_value().map(|(_, e)| e.log_id))
    }

    /// The oldest segment's number when the log was opened.
    pub(crate) fn oldest_segment(&self) -> u64 {
        self.oldest_segment
    }

    /// The bytes of the records found when the log was opened.
    pub(crate) fn found_bytes(&self) -> u64 {
        self.found_bytes
    }

    /// From now on, no purge goes further on disk than the snapshot file `in_place` covers.
    /// A purge waits up to `wait` for it to cover the purge ([`PURGE_WAIT`] in the server).
    pub fn purge_behind(&mut self, in_place: InPlace, wait: Duration) {
        self.snapshot = Some((in_place, wait));
    }

    /// From now on, the bytes of every append count towards the next snapshot.
    pub(crate) fn count_towards(&mut self, trigger: Arc<SnapshotTrigger>) {
        self.trigger = Some(trigger);
    }

    /// What the disk is doing (appends started and flushed), for the proposer.
    pub(crate) fn activity(&self) -> Watch {
        self.activity.watch()
    }

    /// Breaks durability on purpose: appends are acknowledged before they are written
    /// (`--unsafe-break ack-before-fsync`, for the tests that show `ward check` catching it).
    pub(crate) fn acknowledge_before_writing(&mut self) {
        tracing::warn!("unsafe break ack-before-fsync: log appends are acknowledged before they are written");
        self.late = Some(Late::default());
    }

    /// Writes what `--unsafe-break ack-before-fsync` has held back, before a record that
    /// must follow it.
    async fn write_late(&mut self) -> Result<(), FileError> {
        match self.late.as_mut().map(Late::take) {
            Some(entries) => self.write_entries(&entries).await,
            None => Ok(()),
        }
    }

    /// One record of `entries`, durable when this returns (the break's late writes only).
    async fn write_entries(&mut self, entries: &[Entry]) -> Result<(), FileError> {
        let Some(indexes) = index_range(entries) else { return Ok(()) };
        let payload = encode_payload(&RecordRef::Entries(entries))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.write(payload, Holds::Entries(indexes.0, indexes.1), Box::new(move |result| drop(tx.send(result))));
        rx.await.unwrap_or(Err(FileError::Failed))?;
        self.figures.appended(entries.len(), commands(entries));
        Ok(())
    }

    /// Removes the entries from index `since` on, durably.
    pub(crate) async fn truncate_since(&mut self, since: u64) -> Result<(), io::Error> {
        self.write_late().await.map_err(|e| write_failed(&e))?;
        let record = RecordRef::Truncate { since };
        self.write_durably(&record, Holds::Truncation(since)).await.map_err(|e| write_failed(&e))?;
        drop(write(&self.cache).entries.split_off(&since));
        Ok(())
    }

    /// The handle through which the state machine drops applied entries from memory.
    pub fn evictor(&self) -> Evictor {
        Evictor { cache: self.cache.clone(), keep: 0 }
    }

    /// True when nothing was ever logged: the group needs initializing.
    pub(crate) fn is_new(&self) -> bool {
        let cache = read(&self.cache);
        cache.entries.is_empty() && cache.last_purged.is_none() && cache.last_evicted.is_none()
    }

    /// Writes `record` and returns once it is durable.
    async fn write_durably(&self, record: &RecordRef<'_>, holds: Holds) -> Result<(), FileError> {
        let payload = encode_payload(record)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.writer.write(payload, holds, Box::new(move |result| drop(tx.send(result))));
        rx.await.unwrap_or(Err(FileError::Failed)).map(|_sync| ())
    }
}

impl Cache {
    fn purge(&mut self, upto: LogId) {
        if self.last_purged.is_none_or(|p| p.index < upto.index) {
            self.last_purged = Some(upto);
        }
        if self.last_evicted.is_some_and(|e| e.index <= upto.index) {
            self.last_evicted = None;
        }
        self.entries = self.entries.split_off(&(upto.index + 1));
    }

    fn last_log_id(&self) -> Option<LogId> {
        self.entries.last_key_value().map(|(_, e)| e.log_id).or(self.last_evicted).or(self.last_purged)
    }

    /// The entries in `range`: applied ones from the segment files in `log_dir`, the rest
    /// from memory.
    fn range<RB: RangeBounds<u64>>(&self, range: RB, log_dir: &Path) -> Result<Vec<Entry>, FileError> {
        let from = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let to = match range.end_bound() {
            Bound::Included(&i) => i.saturating_add(1),
            Bound::Excluded(&i) => i,
            Bound::Unbounded => u64::MAX,
        };
        let mut out = Vec::new();
        // Purged entries are gone for good; openraft never asks for them, but a range may
        // start below them (an unbounded start).
        let first = self.last_purged.map_or(0, |p| p.index + 1);
        if let Some(evicted) = self.last_evicted.filter(|e| from.max(first) <= e.index && from < to) {
            let disk_from = from.max(first);
            let disk_to = to.min(evicted.index + 1);
            let plan = self.marks.plan_for(disk_from);
            out = readback::read_entries(log_dir, disk_from, disk_to, &plan)?;
            tracing::debug!(from, to = disk_to, found = out.len(), "applied log entries read back from disk");
        }
        if from < to {
            out.extend(self.entries.range(from..to).map(|(_, e)| e.clone()));
        }
        Ok(out)
    }
}

/// Reading applied entries back from the segment files failed (damage found, or I/O).
fn read_failed(e: &FileError) -> io::Error {
    tracing::error!(error = %e, "reading log entries back from disk failed");
    io::Error::other(format!("reading log entries: {e}"))
}

/// openraft stops on a storage error: nothing is acknowledged after a failed write or fsync.
fn write_failed(e: &FileError) -> io::Error {
    io::Error::other(format!("writing the log: {e}"))
}

fn read(cache: &RwLock<Cache>) -> RwLockReadGuard<'_, Cache> {
    cache.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(cache: &RwLock<Cache>) -> RwLockWriteGuard<'_, Cache> {
    cache.write().unwrap_or_else(PoisonError::into_inner)
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        read(&self.cache).range(range, &self.log_dir).map_err(|e| read_failed(&e))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(read(&self.cache).vote)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        read(&self.cache).range(range, &self.log_dir).map_err(|e| read_failed(&e))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(read(&self.cache).vote)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState, io::Error> {
        let cache = read(&self.cache);
        let last_purged_log_id = cache.last_purged;
        let last_log_id = cache.last_log_id();
        Ok(LogState { last_purged_log_id, last_log_id })
    }

    async fn get_log_reader(&mut self) -> LogReader {
        LogReader { cache: self.cache.clone(), log_dir: self.log_dir.clone() }
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        let bytes = postcard::to_allocvec(vote).map_err(|e| io::Error::other(format!("encoding the vote: {e}")))?;
        write_checked(&self.vote_path, &magic(VOTE_KIND, VOTE_VERSION), &bytes).map_err(|e| {
            tracing::error!(error = %e, "saving the vote failed");
            io::Error::other(format!("saving the vote: {e}"))
        })?;
        write(&self.cache).vote = Some(*vote);
        Ok(())
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<TypeConfig>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        for entry in &entries {
            if let openraft::EntryPayload::Normal(batch) = &entry.payload {
                batch.mark_logged();
            }
        }
        let Some(indexes) = index_range(&entries) else {
            callback.io_completed(Ok(()));
            return Ok(());
        };
        if let Some(late) = self.late.as_mut() {
            // Broken on purpose (`late.rs`): acknowledged first, written later.
            write(&self.cache).entries.extend(entries.iter().map(|e| (e.log_id.index, e.clone())));
            callback.io_completed(Ok(()));
            let due = late.hold(entries);
            return self.write_entries(&due).await.map_err(|e| write_failed(&e));
        }
        let payload = match encode_payload(&RecordRef::Entries(&entries)) {
            Ok(payload) => payload,
            Err(e) => {
                tracing::error!(error = %e, "log entries cannot be encoded");
                callback.io_completed(Err(std::io::Error::other(e.to_string())));
                return Err(write_failed(&e));
            }
        };
        let figures = (entries.len(), commands(&entries));
        if let Some(trigger) = &self.trigger {
            trigger.logged(payload.len() as u64);
        }
        // Readable from now on (openraft's contract for `append`), but not durable: openraft
        // counts them as flushed, and so commits and applies them, only once the callback ran.
        write(&self.cache).entries.extend(entries.into_iter().map(|e| (e.log_id.index, e)));
        self.activity.started();
        let activity = self.activity.clone();
        let counted = self.figures.clone();
        self.writer.write(
            payload,
            Holds::Entries(indexes.0, indexes.1),
            Box::new(move |result| {
                // The proposer first: its next batch is then in openraft's queue by the time
                // openraft's core, woken next, has taken this flush in.
                activity.flushed();
                match result {
                    Ok(_sync) => {
                        counted.appended(figures.0, figures.1);
                        callback.io_completed(Ok(()));
                    }
                    Err(e) => callback.io_completed(Err(std::io::Error::other(e.to_string()))),
                }
            }),
        );
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        self.truncate_since(last_log_id.map_or(0, |id| id.index + 1)).await
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        self.write_late().await.map_err(|e| write_failed(&e))?;
        // Not past the snapshot file in place: a follower's openraft purges behind a snapshot
        // received from the leader as soon as it hands it to the state machine, which may
        // still be writing it, and a log purged on disk past the only snapshot there is
        // unservable after a crash. So wait for that snapshot to be in place (openraft's core
        // waits here; the state machine's worker does not need it). Only if it never comes
        // is the purge cut short on disk.
        let durable = match &self.snapshot {
            None => Some(log_id),
            Some((in_place, wait)) => {
                let covers = in_place.wait_for(log_id, *wait).await;
                let durable = covers.map(|c| if c.index < log_id.index { c } else { log_id });
                if durable != Some(log_id) {
                    tracing::warn!(
                        purge = %log_id,
                        snapshot = %super::types::shown(covers),
                        "no snapshot in place covers the purge: the log is purged on disk only as far as the one there"
                    );
                }
                durable
            }
        };
        if let Some(upto) = durable {
            self.write_durably(&RecordRef::Purge { upto }, Holds::Other).await.map_err(|e| write_failed(&e))?;
        }
        write(&self.cache).purge(log_id);
        // Only now: a reader holding the cache's lock reads no segment this removes, and a
        // later reader asks for no entry the purge covers.
        if let Some(upto) = durable {
            self.writer.remove_purged(upto.index);
        }
        Ok(())
    }
}

/// How long a purge waits for the snapshot it follows to be in place (a large received one
/// takes seconds to check and load).
pub const PURGE_WAIT: Duration = Duration::from_secs(60);

/// The first and last indexes of `entries`, if any.
fn index_range(entries: &[Entry]) -> Option<(u64, u64)> {
    Some((entries.first()?.log_id.index, entries.last()?.log_id.index))
}

/// The commands in `entries` (a normal entry carries a batch of them).
fn commands(entries: &[Entry]) -> usize {
    entries.iter().map(|e| if let openraft::EntryPayload::Normal(batch) = &e.payload { batch.len() } else { 0 }).sum()
}
