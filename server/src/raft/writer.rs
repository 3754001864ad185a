//! The log's I/O thread. Every write and `fdatasync` of the log's segments runs on one
//! dedicated OS thread, not on the runtime's workers: a sync that takes a millisecond then
//! holds up no connection, no apply and no reply, and the runtime stays free to assemble the
//! next batch ([`super::proposer`]) and to answer the last one while the disk works.
//!
//! Group commit at the disk: the thread takes every request queued while it was busy and
//! makes them durable with as few `fdatasync`s as it may. openraft keeps several appends in
//! flight, so a group is mostly appends: they are written as *one* record of all their
//! entries ([`super::record::merge_entries`]) and synced once. A request is completed only
//! after the sync that covers its record; [`Unsynced`] is that rule on its own, with no I/O.
//!
//! Recovery relies on at most one record being unsynced at a time: a start treats an intact
//! record after a bad one as damage at rest, not a torn tail, which holds only then (several
//! records in one sync could lose an earlier one's sectors and keep a later one's). So a
//! truncation or purge queued among appends is written only after what came before it is
//! synced, and is synced before what comes after it is written.

use super::error::FileError;
use super::marks::Marks;
use super::wal::Wal;
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Called once its record is durable, with the number of the `fdatasync` that made it so
/// (counted from 1 by each writer), or with why it is not. Runs on the I/O thread: it must be
/// short and never block (sending on a channel is the usual body).
pub(crate) type Done = Box<dyn FnOnce(Result<u64, FileError>) + Send>;

/// At most this many requests share one `fdatasync`: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

/// Appends merged into one record carry at most about this many bytes (a record must fit
/// a segment, and a large one delays its first append's reply).
const MAX_MERGED: usize = 16 << 20;

/// Appends queued together, to be written as one record.
#[derive(Default)]
struct Appends {
    payloads: Vec<Vec<u8>>,
    bytes: usize,
    first: Option<u64>,
    last: Option<u64>,
    dones: Vec<Done>,
}

impl Appends {
    fn push(&mut self, payload: Vec<u8>, (first, last): (u64, u64), done: Done) {
        self.bytes += payload.len();
        self.payloads.push(payload);
        self.first.get_or_insert(first);
        self.last = Some(last);
        self.dones.push(done);
    }

    fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }
}

/// What a record holds, as far as readers of the segments need to know (`marks.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holds {
    /// Entries, with the first and last ones' indexes (where readers may start; which
    /// segments a purge frees).
    Entries(u64, u64),
    /// A truncation of the entries from this index on.
    Truncation(u64),
    /// Anything else (a purge).
    Other,
}

enum Request {
    Record { payload: Vec<u8>, holds: Holds, done: Done },
    RemovePurged { upto: u64 },
}

/// The handle on the I/O thread. Dropping it lets the thread finish what is queued, sync,
/// and close the log (recording its extent, see [`Wal`]'s `Drop`).
pub(crate) struct Writer {
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Moves `wal` to a new I/O thread. `segment_max`: the highest entry index each segment
    /// held when the log was opened; `marks`: where the records it writes from now on are.
    pub(crate) fn start(wal: Wal, segment_max: BTreeMap<u64, u64>, marks: Arc<Marks>) -> Result<Writer, FileError> {
        let (requests, queue) = mpsc::channel();
        let io = Io { wal, segment_max, marks };
        let thread = std::thread::Builder::new()
            .name("ward-log-io".into())
            .spawn(move || io.run(queue))
            .map_err(|source| FileError::Io { path: "ward-log-io".into(), op: "start a thread for", source })?;
        Ok(Writer { requests: Some(requests), thread: Some(thread) })
    }

    /// Queues a record (a payload from [`super::wal::encode_payload`]); `done` runs once it
    /// is durable. Records reach the log in the order of these calls.
    pub(crate) fn write(&self, payload: Vec<u8>, holds: Holds, done: Done) {
        let request = Request::Record { payload, holds, done };
        if let Err(mpsc::SendError(Request::Record { done, .. })) = self.send(request) {
            done(Err(FileError::Failed));
        }
    }

    /// Queues the removal of the full segments whose entries are all at or below `upto`.
    /// Send it only once the purge of `upto` is durable and no reader can ask for those
    /// entries any more.
    pub(crate) fn remove_purged(&self, upto: u64) {
        // Without the thread, the files stay until a later start removes them.
        let _ = self.send(Request::RemovePurged { upto });
    }

    fn send(&self, request: Request) -> Result<(), mpsc::SendError<Request>> {
        match &self.requests {
            Some(requests) => requests.send(request),
            None => Err(mpsc::SendError(request)),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.requests.take());
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the log's I/O thread panicked");
            }
        }
    }
}

/// What the I/O thread owns.
struct Io {
    wal: Wal,
    segment_max: BTreeMap<u64, u64>,
    marks: Arc<Marks>,
}

impl Io {
    fn run(mut self, queue: mpsc::Receiver<Request>) {
        let mut unsynced = Unsynced::default();
        let mut syncs = 0;
        while let Ok(first) = queue.recv() {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match queue.try_recv() {
                    Ok(request) => group.push(request),
                    Err(_) => break,
                }
            }
            let mut appends = Appends::default();
            for request in group {
                match request {
                    Request::Record { payload, holds: Holds::Entries(first, last), done } => {
                        if appends.bytes + payload.len() > MAX_MERGED && !appends.is_empty() {
                            self.write_appends(&mut appends, &mut unsynced);
                            self.sync(&mut unsynced, &mut syncs);
                        }
                        appends.push(payload, (first, last), done);
                    }
                    Request::Record { payload, holds, done } => {
                        self.write_appends(&mut appends, &mut unsynced);
                        self.sync(&mut unsynced, &mut syncs);
                        self.write(&payload, holds, vec![done], &mut unsynced);
                        self.sync(&mut unsynced, &mut syncs);
                    }
                    Request::RemovePurged { upto } => {
                        self.write_appends(&mut appends, &mut unsynced);
                        self.sync(&mut unsynced, &mut syncs);
                        // The purge is durable; failing to delete old files only wastes space.
                        if let Err(e) = self.remove_purged(upto) {
                            tracing::warn!(error = %e, "cannot remove purged log segments");
                        }
                    }
                }
            }
            self.write_appends(&mut appends, &mut unsynced);
            self.sync(&mut unsynced, &mut syncs);
        }
    }

    /// Makes what is written durable, then completes what that covers; nothing to do if
    /// nothing waits. Only one record is unsynced at a time (see the module's doc), so a
    /// second record is written only after this.
    fn sync(&mut self, unsynced: &mut Unsynced<Done>, syncs: &mut u64) {
        if unsynced.is_empty() {
            return;
        }
        let sync = unsynced.sync_started();
        *syncs += 1;
        let result = self.wal.sync();
        if let Err(e) = &result {
            tracing::error!(error = %e, "log fdatasync failed; the log stops accepting writes");
        }
        for done in unsynced.synced(sync) {
            done(result.as_ref().map(|()| *syncs).map_err(|_| FileError::Failed));
        }
    }

    /// Writes the appends gathered so far as one record, unsynced.
    fn write_appends(&mut self, appends: &mut Appends, unsynced: &mut Unsynced<Done>) {
        let Appends { payloads, first, last, dones, .. } = std::mem::take(appends);
        let (Some(first), Some(last)) = (first, last) else { return };
        let merged = match payloads.len() {
            1 => payloads.into_iter().next(),
            _ => super::record::merge_entries(&payloads),
        };
        match merged {
            Some(payload) => self.write(&payload, Holds::Entries(first, last), dones, unsynced),
            None => {
                tracing::error!("appends queued together do not merge into one record; the log stops accepting writes");
                for done in dones {
                    done(Err(FileError::Failed));
                }
            }
        }
    }

    /// Writes one record whose completions are `dones`.
    fn write(&mut self, payload: &[u8], holds: Holds, dones: Vec<Done>, unsynced: &mut Unsynced<Done>) {
        match self.wal.write_payload(payload) {
            Ok(place) => {
                match holds {
                    Holds::Entries(first, last) => {
                        self.segment_max.insert(place.segment, last);
                        self.marks.written(first, place, payload.len() as u64);
                    }
                    Holds::Truncation(since) => self.marks.truncated(since, place),
                    Holds::Other => {}
                }
                for done in dones {
                    unsynced.written(done);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "log write failed; the log stops accepting writes");
                let mut error = Some(e);
                for done in dones {
                    done(Err(error.take().unwrap_or(FileError::Failed)));
                }
            }
        }
    }

    /// Deletes the oldest full segments whose entries are all purged. Only a prefix goes, so
    /// a truncation record can never outlive the entries it voids.
    fn remove_purged(&mut self, upto: u64) -> Result<(), FileError> {
        let mut last = None;
        for n in self.wal.closed_segments() {
            match self.segment_max.get(&n) {
                Some(max) if *max > upto => break,
                _ => last = Some(n),
            }
        }
        if let Some(last) = last {
            self.wal.remove_through(last)?;
            self.segment_max.retain(|n, _| *n > last);
            self.marks.removed_through(last);
        }
        Ok(())
    }
}

/// Completions waiting for the `fdatasync` that covers their records: the rule that nothing
/// is acknowledged before it is durable, kept apart from the I/O so that it can be tested.
///
/// A sync covers exactly the records written before it started: a completion registered with
/// [`Unsynced::written`] after [`Unsynced::sync_started`] waits for the next sync, even if
/// the one in progress happens to flush its bytes too.
pub(crate) struct Unsynced<D> {
    /// Oldest first, with the number of writes before each.
    waiting: std::collections::VecDeque<(u64, D)>,
    writes: u64,
}

impl<D> Default for Unsynced<D> {
    fn default() -> Self {
        Unsynced { waiting: Default::default(), writes: 0 }
    }
}

/// A sync in progress: it covers the writes counted before it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SyncStarted(u64);

impl<D> Unsynced<D> {
    /// A record was written (not durable yet); `done` waits for a sync that covers it.
    pub(crate) fn written(&mut self, done: D) {
        self.writes += 1;
        self.waiting.push_back((self.writes, done));
    }

    /// A sync starts now: it covers every record written so far.
    pub(crate) fn sync_started(&self) -> SyncStarted {
        SyncStarted(self.writes)
    }

    /// `sync` returned: the completions of the records it covers, oldest first.
    pub(crate) fn synced(&mut self, sync: SyncStarted) -> Vec<D> {
        let covered = self.waiting.iter().take_while(|(n, _)| *n <= sync.0).count();
        self.waiting.drain(..covered).map(|(_, done)| done).collect()
    }

    /// Completions still waiting for a sync.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::record::RecordRef;
    use std::sync::{Arc, Mutex};

    /// A write is acknowledged only by a sync that started after it (docs/storage.md,
    /// "Group commit"): one sync releases everything written before it and nothing after.
    #[test]
    fn a_completion_waits_for_a_sync_that_started_after_its_write() {
        let mut u = Unsynced::default();
        u.written("a");
        u.written("b");
        let first = u.sync_started();
        u.written("c");
        assert_eq!(u.synced(first), ["a", "b"], "c was written after the sync started");
        assert_eq!(u.len(), 1);
        assert!(u.synced(first).is_empty(), "the same sync releases nothing more");
        let second = u.sync_started();
        assert_eq!(u.synced(second), ["c"]);
        assert!(u.is_empty());
        assert!(u.synced(u.sync_started()).is_empty(), "a sync with nothing written releases nothing");
    }

    fn entry(index: u64) -> crate::raft::types::Entry {
        openraft::Entry {
            log_id: openraft::LogId::new(openraft::impls::leader_id_adv::LeaderId { term: 1, node_id: 1 }, index),
            payload: openraft::EntryPayload::Blank,
        }
    }

    /// Completions as they ran: what each record was, and the sync that covered it.
    type Done = Arc<Mutex<Vec<(String, Option<u64>)>>>;

    /// A writer over a fresh log in `dir` whose first record (entry 1) holds the I/O thread
    /// in its completion until the returned sender is dropped, so that every record written
    /// meanwhile queues behind it.
    fn held_writer(dir: &std::path::Path) -> (Writer, std::sync::mpsc::Sender<()>, Done) {
        let _ = std::fs::remove_dir_all(dir);
        let (wal, _) = Wal::open(dir, 1 << 20).expect("open");
        let writer = Writer::start(wal, BTreeMap::new(), Arc::default()).expect("start");
        let done = Done::default();
        let (started, is_started) = std::sync::mpsc::channel::<()>();
        let (queued, wait) = std::sync::mpsc::channel::<()>();
        let first = done.clone();
        let complete = move |r: Result<u64, FileError>| {
            let _ = started.send(());
            let _ = wait.recv();
            first.lock().expect("done").push(("append 1".into(), r.ok()));
        };
        writer.write(record(1), Holds::Entries(1, 1), Box::new(complete));
        is_started.recv().expect("the first record completes");
        (writer, queued, done)
    }

    fn record(i: u64) -> Vec<u8> {
        crate::raft::wal::encode_payload(&RecordRef::Entries(&[entry(i)])).expect("encode")
    }

    fn append(writer: &Writer, done: &Done, i: u64) {
        let done = done.clone();
        let complete =
            move |r: Result<u64, FileError>| done.lock().expect("done").push((format!("append {i}"), r.ok()));
        writer.write(record(i), Holds::Entries(i, i), Box::new(complete));
    }

    /// Records queued while the thread is busy share one fdatasync, each completes only
    /// after the sync that covers it, and the order of the calls is the order in the log.
    #[test]
    fn queued_records_share_a_sync_and_complete_in_order() {
        let dir = std::env::temp_dir().join(format!("ward-writer-test-{}", std::process::id()));
        let (writer, queued, done) = held_writer(&dir);
        let n = 100;
        for i in 2..=n {
            append(&writer, &done, i);
        }
        drop(queued);
        drop(writer);
        let done = done.lock().expect("done").clone();
        let expected: Vec<_> = (1..=n).map(|i| (format!("append {i}"), Some(if i == 1 { 1 } else { 2 }))).collect();
        assert_eq!(done, expected, "in order; the 99 queued behind the first share the second sync");
        let (_, replayed) = Wal::open(&dir, 1 << 20).expect("reopen");
        // The first record alone, then the 99 appends queued behind it as one record.
        let records: Vec<Vec<u64>> = replayed
            .into_iter()
            .map(|r| match r.record {
                crate::raft::record::Record::Entries(entries) => entries.iter().map(|e| e.log_id.index).collect(),
                other => panic!("not entries: {other:?}"),
            })
            .collect();
        assert_eq!(records, [vec![1], (2..=n).collect::<Vec<_>>()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// At most one record is ever unsynced (the torn-tail rule of `record.rs`): a purge
    /// queued between appends is written after the appends before it are synced, and synced
    /// before the appends after it are written.
    #[test]
    fn a_purge_among_queued_appends_gets_a_sync_of_its_own() {
        let dir = std::env::temp_dir().join(format!("ward-writer-purge-test-{}", std::process::id()));
        let (writer, queued, done) = held_writer(&dir);
        append(&writer, &done, 2);
        append(&writer, &done, 3);
        let purge = crate::raft::wal::encode_payload(&RecordRef::Purge { upto: entry(1).log_id }).expect("encode");
        let purged = done.clone();
        writer.write(
            purge,
            Holds::Other,
            Box::new(move |r| purged.lock().expect("done").push(("purge".into(), r.ok()))),
        );
        append(&writer, &done, 4);
        drop(queued);
        drop(writer);
        let done = done.lock().expect("done").clone();
        let expected = [("append 1", 1), ("append 2", 2), ("append 3", 2), ("purge", 3), ("append 4", 4)]
            .map(|(what, sync)| (what.to_string(), Some(sync)));
        assert_eq!(done, expected, "appends 2 and 3 share a record and a sync; the purge and append 4 each get one");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
