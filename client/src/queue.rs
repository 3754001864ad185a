//! Reading a lock queue: who holds a lock, who waits, with what context, since when.

use crate::client::Client;
use crate::error::{Error, Result};
use ward_proto::{lock, path, SessionId};

/// One contender in a lock queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contender {
    pub path: String,
    /// The context the contender attached (`lock_with_data`, `campaign`).
    pub data: Vec<u8>,
    /// Its fencing token (the contender's mzxid: its czxid unless a local handoff rewrote it).
    pub token: u64,
    /// When it joined the queue (ms since the Unix epoch, the server's clock).
    pub since_ms: i64,
    /// The session that owns it, if it is ephemeral.
    pub session: Option<SessionId>,
    /// For a holder whose session ended without releasing, kept for the lock's lock-delay
    /// (see [`LockOptions::lock_delay`](crate::LockOptions::lock_delay)): when the delay
    /// ends and the next contender may be granted (ms since the Unix epoch, the server's
    /// clock: the session's end plus the delay).
    pub lock_delay_until_ms: Option<i64>,
}

impl Client {
    /// The queue of the lock in `dir`: the holder first, then the waiters in order. Empty if
    /// the directory does not exist.
    pub async fn lock_holders(&self, dir: &str) -> Result<Vec<Contender>> {
        let children = match self.get_children(dir).await {
            Ok(children) => children,
            Err(Error::NoNode) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut queue = Vec::new();
        let delay_ms = match self.get_data(dir).await {
            Ok((data, _)) => lock::DirHeader::parse(&data).map_or(0, |h| h.lock_delay_ms),
            Err(Error::NoNode) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        for name in lock::queue(children.iter().map(String::as_str)) {
            let path = path::join(dir, name);
            match self.get_data(&path).await {
                Ok((data, stat)) => queue.push(Contender {
                    path,
                    data,
                    token: stat.mzxid,
                    since_ms: stat.ctime,
                    session: stat.ephemeral_owner,
                    // A contender without a session in a lock with a delay is held over: its
                    // mtime is when its session ended.
                    lock_delay_until_ms: (stat.ephemeral_owner.is_none() && delay_ms > 0)
                        .then(|| stat.mtime.saturating_add(i64::try_from(delay_ms).unwrap_or(i64::MAX))),
                }),
                // Left the queue while we were reading it.
                Err(Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(queue)
    }
}
