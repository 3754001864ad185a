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
        for name in lock::queue(children.iter().map(String::as_str)) {
            let path = path::join(dir, name);
            match self.get_data(&path).await {
                Ok((data, stat)) => queue.push(Contender {
                    path,
                    data,
                    token: stat.mzxid,
                    since_ms: stat.ctime,
                    session: stat.ephemeral_owner,
                }),
                // Left the queue while we were reading it.
                Err(Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(queue)
    }
}
