//! Why the server refused a `lock` or `semaphore` for its permits or its lock-delay, in
//! words that name what the directory has. The server answers only "permits mismatch" or
//! "lock-delay mismatch" (a wire code, no detail); what the directory was fixed with is in
//! its data ([`DirHeader`]), read here after the refusal.

use std::fmt;
use std::time::Duration;
use ward_client::{Client, Error, LockKind};
use ward_proto::lock::{self, DirHeader};

/// What a directory has that the acquire did not ask for.
#[derive(Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// A lock (exclusive or shared) asked for in a semaphore's directory.
    SemaphoreNotLock { dir: String, permits: u32 },
    /// A semaphore asked for with another number of permits than its directory has.
    Permits { dir: String, has: u32, asked: u32 },
    /// A semaphore asked for in a directory a lock's contenders use.
    LockNotSemaphore { dir: String },
    /// A lock-delay other than the directory's.
    LockDelay { dir: String, has_ms: u64, asked_ms: u64 },
    /// The directory's data is the application's own, not a lock header.
    NotALockDirectory { dir: String },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |ms: u64| Duration::from_millis(ms);
        match self {
            Mismatch::SemaphoreNotLock { dir, permits } => write!(
                f,
                "{dir} is a semaphore of {permits} permits, not a lock (`ward semaphore --permits {permits} {dir}` takes one)"
            ),
            Mismatch::Permits { dir, has, asked } => {
                write!(f, "{dir} is a semaphore of {has} permits, not {asked} (every contender must ask for {has})")
            }
            Mismatch::LockNotSemaphore { dir } => {
                write!(f, "{dir} is in use as a lock, not a semaphore (the first contender of an empty queue decides)")
            }
            Mismatch::LockDelay { dir, has_ms: 0, asked_ms } => write!(
                f,
                "{dir} has no lock-delay, and contenders queue without one, so it cannot be {:?} (the first \
                 contender of an empty queue sets it)",
                secs(*asked_ms)
            ),
            Mismatch::LockDelay { dir, has_ms, asked_ms } => write!(
                f,
                "{dir} has a lock-delay of {:?}, not {:?} (ask for {:?} or for none)",
                secs(*has_ms),
                secs(*asked_ms),
                secs(*has_ms)
            ),
            Mismatch::NotALockDirectory { dir } => {
                write!(f, "{dir} holds data of its own, so it cannot record permits or a lock-delay")
            }
        }
    }
}

/// The refusal `error` of an acquire of `kind` over `dirs` (with `lock_delay_ms` asked for),
/// explained from the first directory whose data disagrees; `None` if the error is another
/// one, or if no directory disagrees any more (it changed since; the caller keeps the error).
pub async fn explain(
    client: &Client,
    dirs: &[&str],
    kind: LockKind,
    lock_delay_ms: Option<u64>,
    error: &Error,
) -> Option<Mismatch> {
    if !matches!(error, Error::PermitsMismatch | Error::LockDelayMismatch) {
        return None;
    }
    for dir in dirs {
        // A directory that cannot be read now tells nothing; the next one may.
        let Ok((data, _)) = client.get_data(dir).await else { continue };
        let in_use = match client.get_children(dir).await {
            Ok(children) => !lock::queue(children.iter().map(String::as_str)).is_empty(),
            Err(_) => continue,
        };
        if let Some(mismatch) = judge(dir, DirHeader::parse(&data), in_use, kind, lock_delay_ms) {
            return Some(mismatch);
        }
    }
    None
}

/// What the server's rule (server `lock::before_logging`, `check_header`) refuses in a
/// directory with `header` (`None`: data of its own) whose queue is `in_use`.
fn judge(
    dir: &str,
    header: Option<DirHeader>,
    in_use: bool,
    kind: LockKind,
    lock_delay_ms: Option<u64>,
) -> Option<Mismatch> {
    let dir = dir.to_owned();
    // Data of its own is refused only to an acquire that has something to record in it.
    let records = matches!(kind, LockKind::Semaphore { .. }) || lock_delay_ms.is_some();
    let Some(header) = header else { return records.then_some(Mismatch::NotALockDirectory { dir }) };
    match (kind, header.permits) {
        (LockKind::Exclusive | LockKind::Shared, Some(permits)) => {
            return Some(Mismatch::SemaphoreNotLock { dir, permits })
        }
        (LockKind::Semaphore { permits: asked }, Some(has)) if has != asked => {
            return Some(Mismatch::Permits { dir, has, asked })
        }
        (LockKind::Semaphore { .. }, None) if in_use => return Some(Mismatch::LockNotSemaphore { dir }),
        _ => {}
    }
    match lock_delay_ms {
        Some(asked_ms) if asked_ms != header.lock_delay_ms && (header.lock_delay_ms != 0 || in_use) => {
            Some(Mismatch::LockDelay { dir, has_ms: header.lock_delay_ms, asked_ms })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(permits: Option<u32>, lock_delay_ms: u64) -> Option<DirHeader> {
        Some(DirHeader { permits, lock_delay_ms })
    }

    #[test]
    fn names_what_the_directory_has() {
        let sem = header(Some(3), 0);
        assert_eq!(
            judge("/s", sem, true, LockKind::Exclusive, None).map(|m| m.to_string()).as_deref(),
            Some("/s is a semaphore of 3 permits, not a lock (`ward semaphore --permits 3 /s` takes one)")
        );
        assert_eq!(
            judge("/s", sem, true, LockKind::Semaphore { permits: 2 }, None),
            Some(Mismatch::Permits { dir: "/s".into(), has: 3, asked: 2 })
        );
        assert_eq!(judge("/s", sem, true, LockKind::Semaphore { permits: 3 }, None), None);
        assert_eq!(
            judge("/l", header(None, 0), true, LockKind::Semaphore { permits: 2 }, None),
            Some(Mismatch::LockNotSemaphore { dir: "/l".into() })
        );
        assert_eq!(
            judge("/l", header(None, 5_000), true, LockKind::Exclusive, Some(2_000)).map(|m| m.to_string()).as_deref(),
            Some("/l has a lock-delay of 5s, not 2s (ask for 5s or for none)")
        );
        assert_eq!(
            judge("/l", header(None, 0), true, LockKind::Exclusive, Some(2_000)),
            Some(Mismatch::LockDelay { dir: "/l".into(), has_ms: 0, asked_ms: 2_000 })
        );
        // An empty queue without a delay takes the one asked for: nothing to refuse.
        assert_eq!(judge("/l", header(None, 0), false, LockKind::Exclusive, Some(2_000)), None);
        assert_eq!(
            judge("/d", None, false, LockKind::Exclusive, Some(1)),
            Some(Mismatch::NotALockDirectory { dir: "/d".into() })
        );
        // A plain lock records nothing: data of its own does not refuse it.
        assert_eq!(judge("/d", None, true, LockKind::Exclusive, None), None);
    }
}
