//! The log against the snapshot, at startup: every entry after the snapshot must be in the
//! log, and the log must not be purged past the snapshot. A file deleted from the data
//! directory breaks one or the other, and openraft would start regardless: it rebuilds a
//! missing snapshot from an empty state, and purges a log that is gone up to the snapshot.
//! The log's own end is checked by the log itself ([`super::extent`]).

use super::error::OpenError;
use super::log_store::LogStore;
use super::segment;
use super::types::{shown, LogId};
use super::wal::OnLoss;
use openraft::storage::RaftLogStorage;
use std::path::Path;

/// Before the log opens: a snapshot with no log segment at all means the log was deleted.
pub(super) fn before_log_opens(data_dir: &Path, snapshot: Option<LogId>, on_loss: OnLoss) -> Result<(), OpenError> {
    let log_dir = data_dir.join("log");
    let Some(snapshot) = snapshot else { return Ok(()) };
    let segments = match log_dir.exists() {
        true => segment::list(&log_dir)?.0,
        false => Vec::new(),
    };
    if !segments.is_empty() {
        return Ok(());
    }
    let reason = format!(
        "holds no log segment, but the snapshot covers the log up to index {}: the log was deleted, and \
         the writes after the snapshot with it",
        snapshot.index
    );
    on_loss.handle(OpenError::DataLoss { path: log_dir, reason })
}

/// After the log opened: the purged part is behind the snapshot, and the entries after the
/// snapshot are all there. Segments that held only entries the snapshot covers are recorded
/// as purged (openraft reads the log from just after the last purge).
pub(super) async fn check(
    data_dir: &Path,
    store: &mut LogStore,
    snapshot: Option<LogId>,
    on_loss: OnLoss,
) -> Result<(), OpenError> {
    let (purged, first) = store.bounds();
    if let Some(purged) = purged.filter(|p| snapshot.is_none_or(|s| s.index < p.index)) {
        let found =
            snapshot.map_or_else(|| "missing".to_string(), |s| format!("covers the log up to index {}", s.index));
        let reason =
            format!("{found}, but the log was purged up to index {}: the entries in between are gone", purged.index);
        return Err(OpenError::Unservable { path: data_dir.join("snapshot"), reason });
    }
    let Some(gap) = store.missing_front() else { return Ok(()) };
    let store_error = |during| move |e| OpenError::raft(during)(Box::new(e));
    match snapshot {
        Some(s) if s.index + 1 >= gap.end => {
            tracing::warn!(
                entries = ?gap,
                snapshot = %shown(Some(s)),
                "the oldest log segments are gone, but held only entries the snapshot covers: recorded as purged"
            );
            store.purge(s).await.map_err(store_error("recording a purge"))
        }
        _ => {
            let oldest = store.oldest_segment();
            let reason = format!(
                "missing: log entries {} to {} are neither in the snapshot ({}) nor in any segment, and the \
                 oldest segment here is {}",
                gap.start,
                gap.end - 1,
                snapshot.map_or_else(|| "none".to_string(), |s| format!("up to index {}", s.index)),
                segment::file_name(oldest)
            );
            let path = data_dir.join("log").join(segment::file_name(oldest.saturating_sub(1).max(1)));
            if snapshot.is_none() {
                // Every entry after the gap depends on those in it.
                return Err(OpenError::Unservable { path, reason });
            }
            on_loss.handle(OpenError::DataLoss { path, reason })?;
            // What follows the gap cannot be applied without the entries before it.
            match first {
                Some(first) => {
                    store.truncate_since(first.index).await.map_err(store_error("dropping the log after a gap"))
                }
                None => Ok(()),
            }
        }
    }
}
