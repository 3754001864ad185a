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
use crate::state::{SessionCell, SessionState};
use crate::sync::{oneshot, Arc};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;
use ward_proto::{path, Acl, CreateMode, LockKind, Op, Response, MAX_LOCK_DELAY_MS};

/// How a lock attempt asks for its lock, beyond its kind and data ([`Client::acquire_with`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockOptions {
    lock_delay: Option<Duration>,
    dir_acl: Option<Vec<Acl>>,
}

impl LockOptions {
    pub fn new() -> LockOptions {
        LockOptions::default()
    }

    /// Lock-delay, as Consul's: when a holder's session ends without releasing the lock (it
    /// expired, say because its process was killed or stalled, or the server ended it), the
    /// next contender is not granted the lock until `delay` after that end, so that a
    /// stalled ex-holder that cannot be fenced has time to notice it lost the lock. An
    /// orderly release (unlock, dropping the guard, closing the client) hands over at once.
    /// The delay belongs to the lock's directory: the first acquire asking for one while
    /// the queue is empty records it; later ones must ask for the same
    /// (`Error::LockDelayMismatch`) or for none. Rounded up to whole milliseconds; zero asks
    /// for nothing (docs/recipes.md, "Lock-delay").
    pub fn lock_delay(mut self, delay: Duration) -> LockOptions {
        self.lock_delay = Some(delay);
        self
    }

    /// The ACL given to the lock's directories (and the ancestors the acquire creates) if
    /// they are missing; without it they are open to all. The directory's ACL guards the
    /// lock: joining its queue needs CREATE on it, leaving DELETE, reading the queue READ
    /// (and writing the directory's header, a semaphore's permits or a lock-delay, WRITE).
    /// Directories that exist keep their ACL.
    pub fn dir_acl(mut self, acl: Vec<Acl>) -> LockOptions {
        self.dir_acl = Some(acl);
        self
    }

    /// The delay in whole milliseconds, if one is asked for.
    fn lock_delay_ms(&self) -> Result<Option<u64>> {
        let Some(delay) = self.lock_delay.filter(|d| !d.is_zero()) else { return Ok(None) };
        let ms = u64::try_from(delay.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        if ms > MAX_LOCK_DELAY_MS {
            return Err(Error::BadArguments(format!(
                "a lock-delay of {delay:?} is over the limit of {MAX_LOCK_DELAY_MS} ms"
            )));
        }
        Ok(Some(ms))
    }
}

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
    /// To the connection task, for the release.
    tx: mpsc::UnboundedSender<Cmd>,
    dirs: Vec<String>,
    tag: u64,
    /// One per directory, in the order asked for.
    fences: Vec<Fence>,
    validity: Validity,
    released: bool,
}

impl LockGuard {
    /// A guard for attempt `tag` over `dirs`, just granted; it owes `tx` one release.
    pub(crate) fn granted(
        tx: mpsc::UnboundedSender<Cmd>,
        dirs: Vec<String>,
        tag: u64,
        fences: Vec<Fence>,
        validity: Validity,
    ) -> LockGuard {
        LockGuard { tx, dirs, tag, fences, validity, released: false }
    }

    /// The token to hand to resources this lock protects; they should refuse smaller ones.
    /// For a multi-lock, the token of the first directory (see [`fences`](Self::fences)).
    pub fn fencing_token(&self) -> u64 {
        self.fences[0].token
    }

    /// The contender node that holds the lock (the first directory's, for a multi-lock).
    pub fn path(&self) -> &str {
        &self.fences[0].path
    }

    pub fn fence(&self) -> Fence {
        self.fences[0].clone()
    }

    /// One fence per directory, in the order the directories were given.
    pub fn fences(&self) -> &[Fence] {
        &self.fences
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

    /// What [`lost`](Self::lost) waits on, for watchers that outlive a borrow of the guard.
    pub(crate) fn validity(&self) -> &Validity {
        &self.validity
    }

    /// Releases the lock and waits until the server has applied the release.
    pub async fn unlock(mut self) -> Result<()> {
        self.released = true;
        let (done, rx) = oneshot::channel();
        let cmd = Cmd::Release { dirs: self.dirs.clone(), tag: self.tag, done: Some(done) };
        self.tx.send(cmd).map_err(|_| Error::Closed)?;
        rx.await.map_err(|_| Error::Closed)?
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.released {
            release_in_background(&self.tx, &self.dirs, self.tag);
        }
    }
}

fn release_in_background(tx: &mpsc::UnboundedSender<Cmd>, dirs: &[String], tag: u64) {
    // If the client task is gone the session is ending, and its nodes with it.
    let _ = tx.send(Cmd::Release { dirs: dirs.to_vec(), tag, done: None });
}

/// Whether a grant is still trustworthy: the session is live and has not been in doubt
/// since the grant (see [`SessionCell`]). Once lost, lost for good.
#[derive(Clone)]
pub(crate) struct Validity {
    session: Arc<SessionCell>,
    until: u64,
}

impl Validity {
    /// For a grant the caller has just been handed.
    pub(crate) fn now(session: &Arc<SessionCell>) -> Validity {
        Validity { session: session.clone(), until: session.trust_until() }
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.session.is_lost(self.until)
    }

    pub(crate) async fn lost(&self) {
        self.session.lost(self.until).await
    }
}

impl std::fmt::Debug for Validity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validity").field("lost", &self.is_lost()).finish()
    }
}

/// Releases an attempt whose future was dropped before it returned.
struct Attempt<'a> {
    client: &'a Client,
    dirs: Vec<String>,
    tag: u64,
    armed: bool,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if self.armed {
            release_in_background(&self.client.inner.tx, &self.dirs, self.tag);
        }
    }
}

impl Client {
    /// Waits for the lock on `dir` (created if missing) and holds it. This is also the write
    /// side of the read/write lock on `dir` (see [`read_lock`](Self::read_lock)).
    pub async fn lock(&self, dir: &str) -> Result<LockGuard> {
        self.acquire(&[dir], LockKind::Exclusive, &[]).await
    }

    /// Like [`lock`](Self::lock), with `options` (a lock-delay).
    pub async fn lock_with(&self, dir: &str, options: &LockOptions) -> Result<LockGuard> {
        self.acquire_with(&[dir], LockKind::Exclusive, &[], options).await
    }

    /// Like [`lock`](Self::lock), with `data` stored in the contender node for other
    /// contenders to read (who holds it, and why; see [`lock_holders`](Self::lock_holders)).
    pub async fn lock_with_data(&self, dir: &str, data: &[u8]) -> Result<LockGuard> {
        self.acquire(&[dir], LockKind::Exclusive, data).await
    }

    /// Like [`lock`](Self::lock), but gives up after `timeout`, leaving nothing behind:
    /// `Ok(None)` if the lock was not granted in time.
    pub async fn try_lock(&self, dir: &str, timeout: Duration) -> Result<Option<LockGuard>> {
        self.try_acquire(&[dir], LockKind::Exclusive, &[], timeout).await
    }

    /// The read side of the read/write lock on `dir`: readers share it; a writer
    /// ([`lock`](Self::lock)) excludes everyone. First come, first served: a reader waits
    /// only for the writers queued before it.
    pub async fn read_lock(&self, dir: &str) -> Result<LockGuard> {
        self.acquire(&[dir], LockKind::Shared, &[]).await
    }

    /// Takes the exclusive locks of every directory in `dirs`, all or none, queued and free
    /// of deadlock whatever order other callers list the same directories in.
    pub async fn lock_all(&self, dirs: &[&str]) -> Result<LockGuard> {
        self.acquire(dirs, LockKind::Exclusive, &[]).await
    }

    /// Takes one of the `permits` permits of the semaphore `dir`. The first acquire fixes the
    /// number; asking with another one fails with `Error::PermitsMismatch`.
    pub async fn acquire_permit(&self, dir: &str, permits: u32) -> Result<LockGuard> {
        self.acquire(&[dir], LockKind::Semaphore { permits }, &[]).await
    }

    /// [`acquire`](Self::acquire) with a deadline: `Ok(None)` if not granted in time.
    pub async fn try_acquire(
        &self,
        dirs: &[&str],
        kind: LockKind,
        data: &[u8],
        timeout: Duration,
    ) -> Result<Option<LockGuard>> {
        match tokio::time::timeout(timeout, self.acquire(dirs, kind, data)).await {
            Ok(guard) => guard.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// The general form: one attempt of `kind` over `dirs` (created if missing), with `data`
    /// in each contender node. Cancelling the future removes the attempt's contenders.
    pub async fn acquire(&self, dirs: &[&str], kind: LockKind, data: &[u8]) -> Result<LockGuard> {
        self.acquire_with(dirs, kind, data, &LockOptions::default()).await
    }

    /// [`acquire`](Self::acquire), giving the directories `dir_acl` if they are missing
    /// ([`LockOptions::dir_acl`]; `None`: open to all).
    pub async fn acquire_with_acl(
        &self,
        dirs: &[&str],
        kind: LockKind,
        data: &[u8],
        dir_acl: Option<&[Acl]>,
    ) -> Result<LockGuard> {
        let options = LockOptions { dir_acl: dir_acl.map(<[Acl]>::to_vec), ..LockOptions::default() };
        self.acquire_with(dirs, kind, data, &options).await
    }

    /// [`acquire`](Self::acquire) with `options`: a lock-delay, the directories' ACL.
    pub async fn acquire_with(
        &self,
        dirs: &[&str],
        kind: LockKind,
        data: &[u8],
        options: &LockOptions,
    ) -> Result<LockGuard> {
        let lock_delay_ms = options.lock_delay_ms()?;
        let dir_acl = options.dir_acl.as_deref();
        let dirs = dirs.iter().map(|d| checked(d)).collect::<Result<Vec<_>>>()?;
        if matches!(kind, LockKind::Semaphore { permits: 0 }) {
            return Err(Error::BadArguments("a semaphore needs at least one permit".into()));
        }
        let tag = self.inner.next_tag.fetch_add(1, Ordering::Relaxed);
        let mut attempt = Attempt { client: self, dirs: dirs.clone(), tag, armed: true };
        let nodes = loop {
            let (reply, reply_rx) = oneshot::channel();
            let (granted, granted_rx) = oneshot::channel();
            let cmd = Cmd::Lock { dirs: dirs.clone(), tag, kind, data: data.to_vec(), lock_delay_ms, reply, granted };
            self.inner.tx.send(cmd).map_err(|_| Error::Closed)?;
            match reply_rx.await.map_err(|_| Error::Closed)? {
                Ok(Response::Lock(state)) if state.nodes.len() == dirs.len() => {
                    if !state.held {
                        granted_rx.await.map_err(|_| Error::Closed)??;
                    }
                    break state.nodes;
                }
                Ok(other) => return Err(unexpected(other)),
                // The acquire may have been applied: retrying under the same tag finds it.
                Err(Error::ConnectionLoss) => self.wait_connected().await?,
                Err(Error::NoNode) => {
                    for dir in &dirs {
                        self.create_parents(dir, dir_acl).await?;
                    }
                }
                Err(e) => return Err(e),
            }
        };
        attempt.armed = false;
        let fences = nodes.into_iter().map(|n| Fence { path: n.path, token: n.token }).collect();
        Ok(LockGuard::granted(self.inner.tx.clone(), dirs, tag, fences, Validity::now(&self.inner.session)))
    }

    /// Creates every missing ancestor of `path` and `path` itself, as containers (as
    /// Curator's recipes do): the server deletes a lock directory once its last contender
    /// has left, and then the ancestors this made, as each loses its last child. An acquire
    /// that finds its directory deleted meanwhile gets `NoNode` and comes back here. Each
    /// node made gets `acl` (`None`: the open ACL).
    pub(crate) async fn create_parents(&self, path: &str, acl: Option<&[Acl]>) -> Result<()> {
        // An empty ancestor can be deleted between two of the creates: start again then.
        const TRIES: usize = 10;
        let ends: Vec<usize> = path.match_indices('/').map(|(i, _)| i).filter(|&i| i > 0).chain([path.len()]).collect();
        'again: for _ in 0..TRIES {
            for &end in &ends {
                let created = match acl {
                    Some(acl) => self.create_with_acl(&path[..end], b"", CreateMode::Container, acl).await,
                    None => self.create(&path[..end], b"", CreateMode::Container).await,
                };
                match created {
                    Ok(_) | Err(Error::NodeExists) => {}
                    Err(Error::NoNode) => continue 'again,
                    Err(e) => return Err(e),
                }
            }
            return Ok(());
        }
        Err(Error::NoNode)
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
