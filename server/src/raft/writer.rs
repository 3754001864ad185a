//! The log's I/O thread. Every write and `fdatasync` of the log's segments runs on one
//! dedicated OS thread, not on the runtime's workers: a sync that takes a millisecond then
//! holds up no connection, no apply and no reply, and the runtime stays free to assemble the
//! next batch ([`super::proposer`]) and to answer the last one while the disk works.
//!
//! Group commit at the disk: the thread takes every request queued while it was busy, writes
//! all their records, and makes them durable with one `fdatasync`. A request is completed
//! only after the sync that covers its record; [`Unsynced`] is that rule on its own, with no
//! I/O. openraft 0.9 awaits each append's completion before it runs its next command, so
//! from openraft there is one append here at a time; the queue matters for the requests that
//! follow one another without waiting (a purge's segment removal) and for any caller that
//! writes without waiting.
//!
//! Recovery relies on that pacing: a start treats an intact record after a bad one as damage
//! at rest, not a torn tail, which holds only while at most one record of the log's entries
//! is unsynced at a time (several records in one sync could lose an earlier one's sectors
//! and keep a later one's). A log store that sends appends without awaiting each must revisit
//! that rule (`wal.rs`, `record.rs`).

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
pub type Done = Box<dyn FnOnce(Result<u64, FileError>) + Send>;

/// At most this many requests share one `fdatasync`: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

enum Request {
    Record {
        payload: Vec<u8>,
        /// For a record of entries, the first and last ones' indexes (where readers may
        /// start; which segments a purge frees).
        indexes: Option<(u64, u64)>,
        done: Done,
    },
    RemovePurged {
        upto: u64,
    },
}

/// The handle on the I/O thread. Dropping it lets the thread finish what is queued, sync,
/// and close the log (recording its extent, see [`Wal`]'s `Drop`).
pub struct Writer {
    requests: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Moves `wal` to a new I/O thread. `segment_max`: the highest entry index each segment
    /// held when the log was opened; `marks`: where the records it writes from now on are.
    pub fn start(wal: Wal, segment_max: BTreeMap<u64, u64>, marks: Arc<Marks>) -> Result<Writer, FileError> {
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
    pub fn write(&self, payload: Vec<u8>, indexes: Option<(u64, u64)>, done: Done) {
        let request = Request::Record { payload, indexes, done };
        if let Err(mpsc::SendError(Request::Record { done, .. })) = self.send(request) {
            done(Err(FileError::Failed));
        }
    }

    /// Queues the removal of the full segments whose entries are all at or below `upto`.
    /// Send it only once the purge of `upto` is durable and no reader can ask for those
    /// entries any more.
    pub fn remove_purged(&self, upto: u64) {
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
            let mut next = Some(first);
            let mut taken = 0;
            while let Some(request) = next.take() {
                self.handle(request, &mut unsynced);
                taken += 1;
                if taken < MAX_GROUP {
                    next = queue.try_recv().ok();
                }
            }
            let sync = unsynced.sync_started();
            syncs += 1;
            let result = self.wal.sync();
            if let Err(e) = &result {
                tracing::error!(error = %e, "log fdatasync failed; the log stops accepting writes");
            }
            for done in unsynced.synced(sync) {
                done(result.as_ref().map(|()| syncs).map_err(|_| FileError::Failed));
            }
        }
    }

    fn handle(&mut self, request: Request, unsynced: &mut Unsynced<Done>) {
        match request {
            Request::Record { payload, indexes, done } => match self.wal.write_payload(&payload) {
                Ok(place) => {
                    if let Some((first, last)) = indexes {
                        self.segment_max.insert(place.segment, last);
                        self.marks.written(first, place, payload.len() as u64);
                    }
                    unsynced.written(done);
                }
                Err(e) => {
                    tracing::error!(error = %e, "log write failed; the log stops accepting writes");
                    done(Err(e));
                }
            },
            Request::RemovePurged { upto } => {
                // The purge is durable; failing to delete old files only wastes space.
                if let Err(e) = self.remove_purged(upto) {
                    tracing::warn!(error = %e, "cannot remove purged log segments");
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
pub struct Unsynced<D> {
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
pub struct SyncStarted(u64);

impl<D> Unsynced<D> {
    /// A record was written (not durable yet); `done` waits for a sync that covers it.
    pub fn written(&mut self, done: D) {
        self.writes += 1;
        self.waiting.push_back((self.writes, done));
    }

    /// A sync starts now: it covers every record written so far.
    pub fn sync_started(&self) -> SyncStarted {
        SyncStarted(self.writes)
    }

    /// `sync` returned: the completions of the records it covers, oldest first.
    pub fn synced(&mut self, sync: SyncStarted) -> Vec<D> {
        let covered = self.waiting.iter().take_while(|(n, _)| *n <= sync.0).count();
        self.waiting.drain(..covered).map(|(_, done)| done).collect()
    }

    /// Completions still waiting for a sync.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
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
            log_id: openraft::LogId::new(openraft::CommittedLeaderId::new(1, 1), index),
            payload: openraft::EntryPayload::Blank,
        }
    }

    /// Records queued while the thread is busy share one fdatasync, each completes only
    /// after the sync that covers it, and the order of the calls is the order in the log.
    #[test]
    fn queued_records_share_a_sync_and_complete_in_order() {
        let dir = std::env::temp_dir().join(format!("ward-writer-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (wal, _) = Wal::open(&dir, 1 << 20).expect("open");
        let writer = Writer::start(wal, BTreeMap::new(), Arc::default()).expect("start");
        let done = Arc::new(Mutex::new(Vec::new()));
        let record = |i: u64| crate::raft::wal::encode_payload(&RecordRef::Entries(&[entry(i)])).expect("encode");
        // The first completion says it has started, then holds the thread until the rest
        // are queued.
        let (started, is_started) = std::sync::mpsc::channel::<()>();
        let (queued, wait) = std::sync::mpsc::channel::<()>();
        let first = done.clone();
        writer.write(
            record(1),
            Some((1, 1)),
            Box::new(move |r| {
                let _ = started.send(());
                let _ = wait.recv();
                first.lock().expect("done").push((1, r.ok()));
            }),
        );
        is_started.recv().expect("the first record completes");
        let n = 100;
        for i in 2..=n {
            let done = done.clone();
            writer.write(record(i), Some((i, i)), Box::new(move |r| done.lock().expect("done").push((i, r.ok()))));
        }
        drop(queued);
        drop(writer);
        let done = done.lock().expect("done").clone();
        let expected: Vec<_> = (1..=n).map(|i| (i, Some(if i == 1 { 1 } else { 2 }))).collect();
        assert_eq!(done, expected, "in order; the 99 queued behind the first share the second sync");
        let (_, replayed) = Wal::open(&dir, 1 << 20).expect("reopen");
        assert_eq!(replayed.len() as u64, n);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
