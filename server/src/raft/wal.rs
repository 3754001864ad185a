//! The write-ahead log: an ordered set of segment files holding [`Record`]s. Opening it
//! checks every record, cuts a torn tail and refuses damage anywhere else, and refuses a log
//! that has fewer segments or records than it had durably reached ([`extent`]).

use super::error::{FileError, OpenError};
use super::extent::{self, Extent};
use super::fsutil::sync_dir;
use super::marks::Place;
use super::record::{self, intact_record_after, parse_segment_header, read_at, BadHeader, Record, RecordRef};
use super::record::{SegmentHeader, Slot, PAGE};
use super::segment::{self, prepare_zeroed, Segment};
use crate::metrics::log::LogFigures;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A segment file's records after opening, oldest first.
pub struct Replayed {
    /// Where the record is (its segment, offset and sequence number).
    pub(crate) place: Place,
    /// Its payload's length.
    pub(crate) bytes: u64,
    pub record: Record,
}

pub struct Wal {
    dir: PathBuf,
    segment_bytes: u64,
    /// Full segments, oldest first.
    closed: Vec<(u64, PathBuf)>,
    active: Segment,
    next_rsn: u64,
    /// Set by a failed write or fsync: the kernel may have dropped the dirty pages, so
    /// nothing written after can be trusted to follow a durable prefix (fsyncgate).
    failed: bool,
    /// The next segment's zeroed body, being written by a helper thread so that rolling over
    /// does not stall appends for the time it takes to zero a segment.
    spare: Option<JoinHandle<Result<PathBuf, FileError>>>,
    buf: Vec<u8>,
    /// The bytes of the records found on opening.
    found_bytes: u64,
    /// Where each `fdatasync` is counted.
    figures: Arc<LogFigures>,
}

/// What opening does with a log that lost durable data (a deleted or cut segment file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnLoss {
    /// Refuse to open, naming the file ([`OpenError::DataLoss`]).
    #[default]
    Refuse,
    /// Open with what remains (the operator said so: `--accept-data-loss`).
    Accept,
}

impl OnLoss {
    /// `loss` as this policy has it: an error, or a warning and on.
    pub fn handle(self, loss: OpenError) -> Result<(), OpenError> {
        match self {
            OnLoss::Refuse => Err(loss),
            OnLoss::Accept => {
                tracing::warn!(%loss, "accepting the loss (accept-data-loss): serving what remains");
                Ok(())
            }
        }
    }
}

/// The newest segment found on opening, before it is reopened for appending.
struct Newest {
    number: u64,
    path: PathBuf,
    image: Vec<u8>,
    /// The end of its intact records.
    end: usize,
    header: SegmentHeader,
}

impl Wal {
    /// Opens (or creates) the log in `dir` and returns every intact record in order; refuses
    /// a log that lost durable data.
    pub fn open(dir: &Path, segment_bytes: u64) -> Result<(Wal, Vec<Replayed>), OpenError> {
        Wal::open_with(dir, segment_bytes, OnLoss::Refuse)
    }

    /// [`Wal::open`], with what to do about lost data.
    pub fn open_with(dir: &Path, segment_bytes: u64, on_loss: OnLoss) -> Result<(Wal, Vec<Replayed>), OpenError> {
        fs::create_dir_all(dir).map_err(|source| FileError::Io { path: dir.into(), op: "create", source })?;
        let (numbers, stale) = segment::list(dir)?;
        for path in stale {
            let _ = fs::remove_file(path);
        }
        let segment_bytes = segment_bytes.max(PAGE).next_multiple_of(PAGE);
        let recorded = extent::read(dir)?;
        let mut replayed = Vec::new();
        let mut closed = Vec::new();
        let mut next_rsn = 1;
        let mut newest = None;
        let mut keeps_extent = false;
        let mut prev: Option<(PathBuf, u64)> = None;
        let mut found_bytes = 0;
        for (i, &number) in numbers.iter().enumerate() {
            let path = dir.join(segment::file_name(number));
            let image = segment::read_image(&path)?;
            let last = i + 1 == numbers.len();
            let damaged = |offset: u64, reason: String| FileError::Damaged { path: path.clone(), offset, reason };
            let header = match parse_segment_header(&image) {
                Ok(header) => header,
                Err(BadHeader::Newer(found)) => {
                    return Err(OpenError::NewerFormat { path, found, supported: record::VERSION })
                }
                Err(BadHeader::Damaged) => return Err(damaged(0, "bad segment header".into()).into()),
            };
            keeps_extent |= header.version >= 2;
            if header.number != number {
                return Err(damaged(8, format!("header says segment {}", header.number)).into());
            }
            if let Some((prev_path, prev_end)) = &prev {
                if header.first_rsn != next_rsn {
                    return Err(FileError::Damaged {
                        path: prev_path.clone(),
                        offset: *prev_end,
                        reason: format!(
                            "the records end here before #{next_rsn}, but the next file {} starts at #{}",
                            path.display(),
                            header.first_rsn
                        ),
                    }
                    .into());
                }
            }
            let (end, rsn) = scan(&image, header.first_rsn, last, &path, number, &mut replayed)?;
            found_bytes += end.saturating_sub(record::SEGMENT_HEADER) as u64;
            next_rsn = rsn;
            prev = Some((path.clone(), end as u64));
            match last {
                true => newest = Some(Newest { number, path, image, end, header }),
                false => closed.push((number, path)),
            }
        }
        let found = extent::Found {
            newest: newest.as_ref().map(|n| n.number),
            next_rsn,
            keeps_extent,
            cut: newest.as_ref().and_then(|n| {
                let len = n.image.len() as u64;
                n.header.size.filter(|size| len < *size).map(|size| (len, size))
            }),
        };
        if let Some(loss) = extent::missing(dir, recorded, &found) {
            on_loss.handle(loss)?;
        }
        let active = match newest {
            Some(n) => {
                let size = n.header.size.unwrap_or(segment_bytes);
                Segment::reopen(&n.path, n.number, &n.image, n.end as u64, size)?
            }
            None => {
                let tmp = dir.join("first.wal.tmp");
                prepare_zeroed(&tmp, segment_bytes)?;
                Segment::install(&tmp, dir, 1, next_rsn)?
            }
        };
        let wal = Wal {
            dir: dir.to_path_buf(),
            segment_bytes,
            closed,
            active,
            next_rsn,
            failed: false,
            spare: None,
            buf: Vec::new(),
            found_bytes,
            figures: Arc::default(),
        };
        // From here on, what was found is what the next start must find at least.
        extent::record(dir, wal.extent())?;
        Ok((wal, replayed))
    }

    /// How far the log has reached: every record so far is durable.
    fn extent(&self) -> Extent {
        Extent { segment: self.active.number, next_rsn: self.next_rsn }
    }

    /// Appends one record and returns once it is on disk, with the segment that holds it.
    pub fn append(&mut self, record: &RecordRef<'_>) -> Result<u64, FileError> {
        let segment = self.write(record)?;
        self.sync()?;
        Ok(segment)
    }

    /// Writes one record, not yet durable ([`Wal::sync`]), and returns the segment that
    /// holds it.
    pub fn write(&mut self, record: &RecordRef<'_>) -> Result<u64, FileError> {
        self.write_payload(&encode_payload(record)?).map(|place| place.segment)
    }

    /// [`Wal::write`] of a record already encoded by [`encode_payload`]: the encoding can be
    /// done by the caller, off the thread that does the log's I/O. Returns where the record
    /// was written.
    pub(crate) fn write_payload(&mut self, payload: &[u8]) -> Result<Place, FileError> {
        if self.failed {
            return Err(FileError::Failed);
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        record::encode(self.next_rsn, payload, &mut buf);
        let result = self.write_bytes(&buf);
        self.buf = buf;
        if result.is_err() {
            self.failed = true;
        }
        let offset = result?;
        let place = Place { segment: self.active.number, offset, rsn: self.next_rsn };
        self.next_rsn += 1;
        if self.spare.is_none() && self.active.write_pos > self.active.size / 2 {
            self.start_spare();
        }
        Ok(place)
    }

    /// Makes every record written so far durable: one `fdatasync` of the segment being
    /// written (a full segment was synced when the log rolled over from it). A failure is
    /// final (see `failed`).
    pub fn sync(&mut self) -> Result<(), FileError> {
        if self.failed {
            return Err(FileError::Failed);
        }
        let synced = self.active.sync().inspect_err(|_| self.failed = true);
        self.count(synced)
    }

    /// Counts the `fdatasync` a segment's sync did, if any.
    fn count(&self, synced: Result<Option<std::time::Duration>, FileError>) -> Result<(), FileError> {
        if let Some(took) = synced? {
            self.figures.fsynced(took);
        }
        Ok(())
    }

    /// From now on, each `fdatasync` is counted in `figures`.
    pub(crate) fn report_to(&mut self, figures: Arc<LogFigures>) {
        self.figures = figures;
    }

    /// Writes `bytes` to the active segment, rolling over first if they do not fit, and
    /// returns where in it they went.
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<u64, FileError> {
        if !self.active.fits(bytes.len()) {
            self.roll(bytes.len())?;
        }
        let offset = self.active.write_pos;
        self.active.write(bytes)?;
        Ok(offset)
    }

    fn roll(&mut self, len: usize) -> Result<(), FileError> {
        // The records written to the full segment become durable before any in the next
        // one, so that one sync of the active segment covers every record written before
        // it, and the extent recorded below counts only durable records.
        let synced = self.active.sync();
        self.count(synced)?;
        let number = self.active.number + 1;
        let size = self.segment_bytes.max(((record::SEGMENT_HEADER + len) as u64).next_multiple_of(PAGE));
        // An oversized segment leaves the spare for the next roll.
        let spare = match size == self.segment_bytes {
            true => self.spare.take().and_then(|handle| handle.join().ok()).and_then(Result::ok),
            false => None,
        };
        let zeroed = match spare {
            Some(path) => path,
            None => {
                let path = self.dir.join(format!("{number}.wal.tmp"));
                prepare_zeroed(&path, size)?;
                path
            }
        };
        let next = Segment::install(&zeroed, &self.dir, number, self.next_rsn)?;
        let full = std::mem::replace(&mut self.active, next);
        self.closed.push((full.number, full.path));
        // Once per segment, not per append: from now on a start without this segment
        // is refused.
        extent::record(&self.dir, self.extent())
    }

    fn start_spare(&mut self) {
        // A name of its own, random: a thread left over from an earlier `Wal` on the same
        // directory (reopened in the same process) must never write into this one's segment.
        // Without one, no spare: rolling over zeroes the segment inline.
        let mut nonce = [0u8; 8];
        if getrandom::getrandom(&mut nonce).is_err() {
            self.spare = None;
            return;
        }
        let path = self.dir.join(format!("spare-{}-{:016x}.wal.tmp", std::process::id(), u64::from_le_bytes(nonce)));
        let size = self.segment_bytes;
        let spawned = std::thread::Builder::new()
            .name("ward-wal-spare".into())
            .spawn(move || prepare_zeroed(&path, size).map(|()| path));
        // Without the thread, rolling over zeroes the segment inline instead.
        self.spare = spawned.ok();
    }

    /// The bytes of the records found when the log was opened.
    pub(crate) fn found_bytes(&self) -> u64 {
        self.found_bytes
    }

    /// Full segments, oldest first.
    pub(crate) fn closed_segments(&self) -> impl Iterator<Item = u64> + '_ {
        self.closed.iter().map(|(n, _)| *n)
    }

    /// The oldest segment's number.
    pub(crate) fn oldest_segment(&self) -> u64 {
        self.closed.first().map_or(self.active.number, |(n, _)| *n)
    }

    /// Deletes the full segments numbered up to `last`.
    pub(crate) fn remove_through(&mut self, last: u64) -> Result<(), FileError> {
        let (gone, keep): (Vec<_>, Vec<_>) = self.closed.drain(..).partition(|(n, _)| *n <= last);
        self.closed = keep;
        if gone.is_empty() {
            return Ok(());
        }
        for (_, path) in &gone {
            fs::remove_file(path).map_err(|source| FileError::Io { path: path.clone(), op: "remove", source })?;
            tracing::debug!(path = %path.display(), "removed a log segment behind a snapshot");
        }
        sync_dir(&self.dir)
    }
}

impl Drop for Wal {
    /// A clean close records that every record written is durable, so that the next start
    /// notices the loss of any of them (after a crash, only of those written before the
    /// last open or new segment).
    fn drop(&mut self) {
        // Records written and not yet synced were never acknowledged; syncing them first
        // keeps the extent to durable records (a no-op when nothing is unsynced).
        if self.sync().is_err() {
            return;
        }
        if let Err(error) = extent::record(&self.dir, self.extent()) {
            tracing::warn!(%error, "cannot record the log's extent at close");
        }
    }
}

/// A record's payload, as [`Wal::write_payload`] takes it.
pub(crate) fn encode_payload(record: &RecordRef<'_>) -> Result<Vec<u8>, FileError> {
    let payload = postcard::to_allocvec(record).map_err(|_| FileError::TooLarge(0))?;
    if payload.len() > record::MAX_PAYLOAD {
        return Err(FileError::TooLarge(payload.len()));
    }
    Ok(payload)
}

/// Checks and decodes the records of one segment image. Returns where the intact records
/// end and the serial number the next record takes.
fn scan(
    image: &[u8],
    first_rsn: u64,
    last: bool,
    path: &Path,
    number: u64,
    out: &mut Vec<Replayed>,
) -> Result<(usize, u64), FileError> {
    let damaged =
        |offset: usize, reason: String| FileError::Damaged { path: path.into(), offset: offset as u64, reason };
    let mut pos = record::SEGMENT_HEADER;
    let mut rsn = first_rsn;
    let stop = loop {
        match read_at(image, pos, rsn) {
            Slot::Record { payload, next, .. } => {
                let bytes = payload.len() as u64;
                let record: Record = postcard::from_bytes(&image[payload])
                    .map_err(|e| damaged(pos, format!("record #{rsn} passes its checksum but does not decode: {e}")))?;
                let place = Place { segment: number, offset: pos as u64, rsn };
                out.push(Replayed { place, bytes, record });
                pos = next;
                rsn += 1;
            }
            Slot::End => break None,
            Slot::Bad(reason) => break Some(reason),
        }
    };
    // Past the end of the image only when the file was cut inside the last record's padding:
    // the next record still starts at the aligned offset (reopening zeroes the gap).
    let end = pos;
    // Only the record written last can be torn. An intact record after the bad bytes (or
    // after an early end) means they are damage to acknowledged data. (In a full segment an
    // early end is caught by the next segment's first serial number instead.)
    let later = if last { intact_record_after(image, end, rsn) } else { None };
    if let Some(later) = later {
        let why = stop.unwrap_or("record header zeroed");
        return Err(damaged(
            end,
            format!("{why} at record #{rsn}, yet an intact later record follows at offset {later}"),
        ));
    }
    match stop {
        Some(reason) if !last => Err(damaged(end, format!("{reason} at record #{rsn} in a full segment"))),
        Some(reason) => {
            tracing::warn!(path = %path.display(), offset = end, reason, "dropping a torn last record (crash mid-write)");
            Ok((end, rsn))
        }
        None => Ok((end, rsn)),
    }
}
