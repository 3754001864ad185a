//! The same client for plain threads: every call blocks until it is answered.
//!
//! A [`Client`] owns a small tokio runtime (one worker thread) that keeps the session's
//! heartbeats going while the application's threads do other work. Guards release on drop,
//! also while a panic unwinds, without waiting for the server: the release goes on in the
//! background (see [`guard`]). Dropping a client's last handle (a guard or an election
//! counts as one) ends the session, waiting at most 5 s for the server. Do not call these
//! from inside async code; use the async client there.
//!
//! # Layout
//! * this module: [`Client`] and its [`ClientBuilder`], the operations as blocking calls.
//! * [`guard`]: [`LockGuard`] for every kind of lock, the reentrant [`Mutex`] and its
//!   [`MutexGuard`].
//! * [`election`]: [`Election`], [`Leadership`] and the [`Observer`] of who leads.
//! * `lost`: telling the caller that a guard was lost, by channel or callback, without a
//!   thread of its own waiting for it.

pub mod election;
pub mod guard;
mod lost;

pub use election::{Election, Leadership, Observer};
pub use guard::{LockGuard, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::{Acl, CreateMode, Fence, Op, OpResult, ServerStats, SessionId, SessionState, Stat};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Runtime;

/// What a client and every guard and election made from it share.
struct Shared {
    /// `None` only once `drop` has taken it.
    rt: Option<Runtime>,
    client: crate::Client,
}

/// How long dropping a client's last handle waits for the server to close the session.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

impl Shared {
    fn rt(&self) -> &Runtime {
        self.rt.as_ref().unwrap_or_else(|| unreachable!("the runtime is taken only by drop"))
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let Some(rt) = self.rt.take() else { return };
        let client = self.client.clone();
        // The last handle is gone: end the session now rather than leave its ephemerals to
        // the timeout. Then the runtime shuts down, waiting for its threads.
        let close = move || {
            let _ = rt.block_on(async move { tokio::time::timeout(CLOSE_WAIT, client.close()).await });
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Dropped on a runtime's thread: the last handle was in an `on_lost` callback (run
            // on, or dropped by, this very runtime). A runtime can neither block on itself nor
            // wait there for its own threads to finish, so another thread does both.
            std::thread::spawn(close);
        } else {
            close();
        }
    }
}

/// A blocking client. Clones share the session.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

/// Settings for a blocking client; see [`crate::ClientBuilder`].
pub struct ClientBuilder {
    inner: crate::ClientBuilder,
}

impl ClientBuilder {
    pub fn session_timeout(self, timeout: Duration) -> Self {
        ClientBuilder { inner: self.inner.session_timeout(timeout) }
    }

    pub fn connect_timeout(self, timeout: Duration) -> Self {
        ClientBuilder { inner: self.inner.connect_timeout(timeout) }
    }

    /// A stable name for this application instance: connecting ends the previous session
    /// of the same owner at once (see [`crate::ClientBuilder::owner`]).
    pub fn owner(self, name: &str) -> Self {
        ClientBuilder { inner: self.inner.owner(name) }
    }

    /// See [`crate::ClientBuilder::auth`].
    pub fn auth(self, scheme: &str, credentials: impl AsRef<[u8]>) -> Self {
        ClientBuilder { inner: self.inner.auth(scheme, credentials) }
    }

    pub fn connect(self) -> Result<Client> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ward-client")
            .enable_all()
            .build()
            .map_err(|e| Error::Connect(format!("cannot start the client runtime: {e}")))?;
        let client = rt.block_on(self.inner.connect())?;
        Ok(Client { shared: Arc::new(Shared { rt: Some(rt), client }) })
    }
}

impl Client {
    pub fn connect(addrs: &str) -> Result<Client> {
        Self::builder(addrs).connect()
    }

    pub fn builder(addrs: &str) -> ClientBuilder {
        ClientBuilder { inner: crate::Client::builder(addrs) }
    }

    /// The async client underneath, sharing this session.
    pub fn as_async(&self) -> &crate::Client {
        &self.shared.client
    }

    fn block<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.shared.rt().block_on(f)
    }

    pub fn session_id(&self) -> SessionId {
        self.shared.client.session_id()
    }

    pub fn session_timeout(&self) -> Duration {
        self.shared.client.session_timeout()
    }

    pub fn state(&self) -> SessionState {
        self.shared.client.state()
    }

    pub fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        self.block(self.shared.client.create(path, data, mode))
    }

    pub fn create_with_stat(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat)> {
        self.block(self.shared.client.create_with_stat(path, data, mode))
    }

    pub fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.block(self.shared.client.delete(path, version))
    }

    /// See [`crate::Client::add_auth`].
    pub fn add_auth(&self, scheme: &str, credentials: impl AsRef<[u8]>) -> Result<()> {
        self.block(self.shared.client.add_auth(scheme, credentials))
    }

    pub fn create_with_acl(&self, path: &str, data: &[u8], mode: CreateMode, acl: &[Acl]) -> Result<String> {
        self.block(self.shared.client.create_with_acl(path, data, mode, acl))
    }

    pub fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        self.block(self.shared.client.get_acl(path))
    }

    pub fn set_acl(&self, path: &str, acl: &[Acl], version: Option<i32>) -> Result<Stat> {
        self.block(self.shared.client.set_acl(path, acl, version))
    }

    pub fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.block(self.shared.client.set_data(path, data, version))
    }

    pub fn set_data_fenced(&self, fence: &Fence, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        self.block(self.shared.client.set_data_fenced(fence, path, data, version))
    }

    pub fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.block(self.shared.client.get_data(path))
    }

    pub fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.block(self.shared.client.exists(path))
    }

    pub fn get_children(&self, path: &str) -> Result<Vec<String>> {
        self.block(self.shared.client.get_children(path))
    }

    pub fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        self.block(self.shared.client.multi(ops))
    }

    pub fn sync(&self, path: &str) -> Result<()> {
        self.block(self.shared.client.sync(path))
    }

    pub fn check_fence(&self, path: &str, token: u64) -> Result<()> {
        self.block(self.shared.client.check_fence(path, token))
    }

    pub fn server_stats(&self) -> Result<ServerStats> {
        self.block(self.shared.client.server_stats())
    }

    /// Ends the session now (see [`crate::Client::close`]).
    pub fn close(&self) -> Result<()> {
        self.block(self.shared.client.close())
    }

    /// Blocks until the lock on `dir` is held.
    pub fn lock(&self, dir: &str) -> Result<LockGuard> {
        self.lock_with_data(dir, &[])
    }

    pub fn lock_with_data(&self, dir: &str, data: &[u8]) -> Result<LockGuard> {
        let guard = self.block(self.shared.client.lock_with_data(dir, data))?;
        Ok(self.guard(guard))
    }

    /// [`lock`](Self::lock) with `options`, a lock-delay (see [`crate::LockOptions`]).
    pub fn lock_with(&self, dir: &str, options: &crate::LockOptions) -> Result<LockGuard> {
        let guard = self.block(self.shared.client.lock_with(dir, options))?;
        Ok(self.guard(guard))
    }

    /// Blocks at most `timeout` for the lock; `Ok(None)` if it was not granted in time (and
    /// nothing is left behind).
    pub fn try_lock(&self, dir: &str, timeout: Duration) -> Result<Option<LockGuard>> {
        let guard = self.block(self.shared.client.try_lock(dir, timeout))?;
        Ok(guard.map(|guard| self.guard(guard)))
    }

    /// The read side of the read/write lock on `dir` (see [`crate::Client::read_lock`]).
    pub fn read_lock(&self, dir: &str) -> Result<LockGuard> {
        let guard = self.block(self.shared.client.read_lock(dir))?;
        Ok(self.guard(guard))
    }

    /// Every directory's lock, all or none (see [`crate::Client::lock_all`]).
    pub fn lock_all(&self, dirs: &[&str]) -> Result<LockGuard> {
        let guard = self.block(self.shared.client.lock_all(dirs))?;
        Ok(self.guard(guard))
    }

    /// One of `permits` permits of the semaphore `dir` (see [`crate::Client::acquire_permit`]).
    pub fn acquire_permit(&self, dir: &str, permits: u32) -> Result<LockGuard> {
        let guard = self.block(self.shared.client.acquire_permit(dir, permits))?;
        Ok(self.guard(guard))
    }

    /// The general acquire with a deadline (see [`crate::Client::try_acquire`]).
    pub fn try_acquire(
        &self,
        dirs: &[&str],
        kind: crate::LockKind,
        data: &[u8],
        timeout: Duration,
    ) -> Result<Option<LockGuard>> {
        let guard = self.block(self.shared.client.try_acquire(dirs, kind, data, timeout))?;
        Ok(guard.map(|g| self.guard(g)))
    }

    /// A reentrant handle on `dir` (see [`crate::Client::mutex`]).
    pub fn mutex(&self, dir: &str) -> Mutex {
        Mutex::new(self.shared.clone(), self.shared.client.mutex(dir))
    }

    fn guard(&self, guard: crate::LockGuard) -> LockGuard {
        LockGuard::new(self.shared.clone(), guard)
    }

    pub fn lock_holders(&self, dir: &str) -> Result<Vec<crate::Contender>> {
        self.block(self.shared.client.lock_holders(dir))
    }

    pub fn election(&self, dir: &str) -> Election {
        Election::new(self.shared.clone(), self.shared.client.election(dir))
    }
}
