//! Distributed locks: `client.lock(dir).await` returns a guard that holds the lock until it
//! is unlocked or dropped.
//!
//! The server does the queue bookkeeping (see `ward_proto::lock`): the acquire answers in
//! one round trip, and a waiter is told when its predecessors are gone, so a release wakes
//! exactly one waiter. Every grant carries a fencing token (the contender's czxid), larger
//! for each later holder.
//!
//! What can go wrong is either impossible or visible here:
//! * a lost reply to the acquire leaves no orphan: the retry names the same attempt and the
//!   server finds the contender it created;
//! * cancelling `lock()` (dropping its future) removes the contender;
//! * dropping a guard releases it in the background, retried across reconnects, never a
//!   panic;
//! * [`LockGuard::lost`] completes once the lock can no longer be trusted (session expired,
//!   or disconnected so long that it may have), before the server can grant it to anyone else.

use crate::client::{checked, unexpected, Client};
use crate::conn::Cmd;
use crate::error::{Error, Result};
use crate::state::SessionState;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use ward_proto::{path, CreateMode, Op, Response};

/// A lock holder's credential: a write carrying it fails unless this holder still holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fence {
    /// The holder's contender node.
    pub path: String,
    /// The fencing token.
    pub token: u64,
}

impl Fence {
    /// The multi op that fails the multi with `StaleFence` unless the fence holds.
    pub fn op(&self) -> Op {
        Op::CheckFence { path: self.path.clone(), token: self.token }
    }
}

/// A held lock. Release it with [`unlock`](Self::unlock); dropping it releases it too.
#[must_use = "dropping the guard releases the lock"]
#[derive(Debug)]
pub struct LockGuard {
    client: Client,
    dir: String,
    tag: u64,
    fence: Fence,
    validity: Validity,
    released: bool,
}

impl LockGuard {
    /// The token to hand to resources this lock protects; they should refuse smaller ones.
    pub fn fencing_token(&self) -> u64 {
        self.fence.token
    }

    /// The contender node that holds the lock.
    pub fn path(&self) -> &str {
        &self.fence.path
    }

    pub fn fence(&self) -> Fence {
        self.fence.clone()
    }

    /// Completes when the lock can no longer be trusted: the session expired or was closed,
    /// or the connection has been gone so long that the session may have expired. Once it
    /// has completed it stays completed.
    pub async fn lost(&self) {
        self.validity.lost().await
    }

    pub fn is_lost(&self) -> bool {
        self.validity.is_lost()
    }

    /// Releases the lock and waits until the server has applied the release.
    pub async fn unlock(mut self) -> Result<()> {
        self.released = true;
        let (done, rx) = oneshot::channel();
        let cmd = Cmd::Release { dir: self.dir.clone(), tag: self.tag, done: Some(done) };
        self.client.inner.tx.send(cmd).map_err(|_| Error::Closed)?;
        rx.await.map_err(|_| Error::Closed)?
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.released {
            release_in_background(&self.client, &self.dir, self.tag);
        }
    }
}

fn release_in_background(client: &Client, dir: &str, tag: u64) {
    // If the client task is gone the session is ending, and its nodes with it.
    let _ = client.inner.tx.send(Cmd::Release { dir: dir.to_string(), tag, done: None });
}

/// Whether a grant is still trustworthy: the session is live and has not been in doubt
/// since the grant.
#[derive(Clone, Debug)]
pub(crate) struct Validity {
    state: watch::Receiver<SessionState>,
    epoch: watch::Receiver<u64>,
    since: u64,
}

impl Validity {
    pub(crate) fn now(client: &Client) -> Validity {
        let epoch = client.inner.epoch.clone();
        let since = *epoch.borrow();
        Validity { state: client.inner.state.clone(), epoch, since }
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.state.borrow().is_terminal() || *self.epoch.borrow() != self.since
    }

    pub(crate) async fn lost(&self) {
        let (mut state, mut epoch) = (self.state.clone(), self.epoch.clone());
        loop {
            if state.borrow_and_update().is_terminal() || *epoch.borrow_and_update() != self.since {
                return;
            }
            tokio::select! {
                r = state.changed() => if r.is_err() { return },
                r = epoch.changed() => if r.is_err() { return },
            }
        }
    }
}

/// Releases an attempt whose `lock()` future was dropped before it returned.
struct Attempt<'a> {
    client: &'a Client,
    dir: String,
    tag: u64,
    armed: bool,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if self.armed {
            release_in_background(self.client, &self.dir, self.tag);
        }
    }
}

impl Client {
    /// Waits for the lock on `dir` (created if missing) and holds it.
    pub async fn lock(&self, dir: &str) -> Result<LockGuard> {
        self.lock_with_data(dir, &[]).await
    }

    /// Like [`lock`](Self::lock), with `data` stored in the contender node for other
    /// contenders to read (who holds it, and why).
    pub async fn lock_with_data(&self, dir: &str, data: &[u8]) -> Result<LockGuard> {
        let dir = checked(dir)?;
        let tag = self.inner.next_tag.fetch_add(1, Ordering::Relaxed);
        let mut attempt = Attempt { client: self, dir: dir.clone(), tag, armed: true };
        let (path, token) = loop {
            let (reply, reply_rx) = oneshot::channel();
            let (granted, granted_rx) = oneshot::channel();
            let cmd = Cmd::Lock { dir: dir.clone(), tag, data: data.to_vec(), reply, granted };
            self.inner.tx.send(cmd).map_err(|_| Error::Closed)?;
            match reply_rx.await.map_err(|_| Error::Closed)? {
                Ok(Response::Lock(state)) => {
                    if !state.held {
                        granted_rx.await.map_err(|_| Error::Closed)??;
                    }
                    break (state.path, state.token);
                }
                Ok(other) => return Err(unexpected(other)),
                // The acquire may have been applied: retrying under the same tag finds it.
                Err(Error::ConnectionLoss) => self.wait_connected().await?,
                Err(Error::NoNode) => self.create_parents(&dir).await?,
                Err(e) => return Err(e),
            }
        };
        attempt.armed = false;
        let validity = Validity::now(self);
        Ok(LockGuard { client: self.clone(), dir, tag, fence: Fence { path, token }, validity, released: false })
    }

    /// Like [`lock`](Self::lock), but gives up after `timeout`, leaving nothing behind:
    /// `Ok(None)` if the lock was not granted in time.
    pub async fn try_lock(&self, dir: &str, timeout: Duration) -> Result<Option<LockGuard>> {
        match tokio::time::timeout(timeout, self.lock(dir)).await {
            Ok(guard) => guard.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Creates every missing ancestor of `path` and `path` itself, as persistent nodes.
    pub(crate) async fn create_parents(&self, path: &str) -> Result<()> {
        let ends = path.match_indices('/').map(|(i, _)| i).filter(|&i| i > 0).chain([path.len()]);
        for end in ends {
            match self.create(&path[..end], b"", CreateMode::Persistent).await {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Returns once the client is connected again, or fails if the session is over.
    pub(crate) async fn wait_connected(&self) -> Result<()> {
        let mut state = self.inner.state.clone();
        loop {
            match *state.borrow_and_update() {
                SessionState::Connected => return Ok(()),
                SessionState::Expired => return Err(Error::SessionExpired),
                SessionState::Closed => return Err(Error::Closed),
                SessionState::Disconnected => {}
            }
            state.changed().await.map_err(|_| Error::Closed)?;
        }
    }
}

/// The contender that holds `dir`'s lock, if any (lowest sequence suffix).
pub(crate) fn holder_of(dir: &str, children: &[String]) -> Option<String> {
    ward_proto::lock::queue(children.iter().map(String::as_str)).first().map(|name| path::join(dir, name))
}
