//! The same client for plain threads: every call blocks until it is answered.
//!
//! A [`Client`] owns a small tokio runtime (one worker thread) that keeps the session's
//! heartbeats going while the application's threads do other work. Guards release on drop,
//! also while a panic unwinds. Do not call these from inside async code; use the async
//! client there.

use crate::error::{Error, Result};
use crate::{Acl, CreateMode, Fence, Leader, Op, OpResult, ServerStats, SessionId, SessionState, Stat};
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Runtime;

struct Shared {
    rt: Runtime,
    client: crate::Client,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The last handle is gone: end the session now rather than leave its ephemerals to
        // the timeout.
        let client = self.client.clone();
        let _ = self.rt.block_on(async move { tokio::time::timeout(Duration::from_secs(5), client.close()).await });
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
        Ok(Client { shared: Arc::new(Shared { rt, client }) })
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
        self.shared.rt.block_on(f)
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
        Ok(LockGuard { shared: self.shared.clone(), guard: Some(guard) })
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
        Ok(guard.map(|guard| LockGuard { shared: self.shared.clone(), guard: Some(guard) }))
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
        Mutex { shared: self.shared.clone(), inner: self.shared.client.mutex(dir) }
    }

    fn guard(&self, guard: crate::LockGuard) -> LockGuard {
        LockGuard { shared: self.shared.clone(), guard: Some(guard) }
    }

    pub fn lock_holders(&self, dir: &str) -> Result<Vec<crate::Contender>> {
        self.block(self.shared.client.lock_holders(dir))
    }

    pub fn election(&self, dir: &str) -> Election {
        Election { shared: self.shared.clone(), inner: self.shared.client.election(dir) }
    }
}

/// A held lock; dropping it releases the lock before `drop` returns.
#[must_use = "dropping the guard releases the lock"]
pub struct LockGuard {
    shared: Arc<Shared>,
    guard: Option<crate::LockGuard>,
}

impl LockGuard {
    fn inner(&self) -> &crate::LockGuard {
        // Only `unlock` and `drop` take the guard, and both consume `self`.
        self.guard.as_ref().unwrap_or_else(|| unreachable!("guard taken before drop"))
    }

    pub fn fencing_token(&self) -> u64 {
        self.inner().fencing_token()
    }

    pub fn path(&self) -> &str {
        self.inner().path()
    }

    pub fn fence(&self) -> Fence {
        self.inner().fence()
    }

    /// True once the lock can no longer be trusted (see [`crate::LockGuard::lost`]).
    pub fn is_lost(&self) -> bool {
        self.inner().is_lost()
    }

    /// Blocks until the lock is lost.
    pub fn wait_lost(&self) {
        self.shared.rt.block_on(self.inner().lost())
    }

    /// Releases the lock and waits until the server has applied the release.
    pub fn unlock(mut self) -> Result<()> {
        match self.guard.take() {
            Some(guard) => self.shared.rt.block_on(guard.unlock()),
            None => Ok(()),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            let limit = self.shared.client.session_timeout();
            // Bounded: if the server cannot be reached the release is still queued in the
            // client, and the session's expiry removes the node in the worst case.
            let _ = self.shared.rt.block_on(async { tokio::time::timeout(limit, guard.unlock()).await });
        }
    }
}

/// A blocking view of an [`crate::Election`].
pub struct Election {
    shared: Arc<Shared>,
    inner: crate::Election,
}

impl Election {
    /// See [`crate::Election::with_acl`].
    pub fn with_acl(self, acl: Vec<Acl>) -> Election {
        Election { shared: self.shared, inner: self.inner.with_acl(acl) }
    }

    /// Blocks until this candidate leads.
    pub fn campaign(&self, data: &[u8]) -> Result<Leadership> {
        let inner = self.shared.rt.block_on(self.inner.campaign(data))?;
        Ok(Leadership { shared: self.shared.clone(), inner: Some(inner) })
    }

    pub fn leader(&self) -> Result<Option<Leader>> {
        self.shared.rt.block_on(self.inner.leader())
    }
}

/// Being the leader; dropping it resigns before `drop` returns.
#[must_use = "dropping the leadership resigns"]
pub struct Leadership {
    shared: Arc<Shared>,
    inner: Option<crate::Leadership>,
}

impl Leadership {
    fn inner(&self) -> &crate::Leadership {
        self.inner.as_ref().unwrap_or_else(|| unreachable!("leadership taken before drop"))
    }

    pub fn fencing_token(&self) -> u64 {
        self.inner().fencing_token()
    }

    pub fn is_lost(&self) -> bool {
        self.inner().is_lost()
    }

    pub fn wait_lost(&self) {
        self.shared.rt.block_on(self.inner().lost())
    }

    pub fn resign(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.shared.rt.block_on(inner.resign()),
            None => Ok(()),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let limit = self.shared.client.session_timeout();
            let _ = self.shared.rt.block_on(async { tokio::time::timeout(limit, inner.resign()).await });
        }
    }
}

/// A blocking reentrant handle (see [`crate::Mutex`]).
pub struct Mutex {
    shared: Arc<Shared>,
    inner: crate::Mutex,
}

impl Mutex {
    /// Blocks until this handle holds the lock (at once, if it already does).
    pub fn lock(&self) -> Result<MutexGuard> {
        let inner = self.shared.rt.block_on(self.inner.lock())?;
        Ok(MutexGuard { shared: self.shared.clone(), inner: Some(inner) })
    }
}

/// A held blocking [`Mutex`]; dropping it leaves the lock before `drop` returns.
#[must_use = "dropping the guard leaves the lock"]
pub struct MutexGuard {
    shared: Arc<Shared>,
    inner: Option<crate::MutexGuard>,
}

impl MutexGuard {
    pub fn fencing_token(&self) -> u64 {
        self.inner.as_ref().map_or(0, crate::MutexGuard::fencing_token)
    }

    pub fn is_lost(&self) -> bool {
        self.inner.as_ref().is_none_or(crate::MutexGuard::is_lost)
    }

    pub fn unlock(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.shared.rt.block_on(inner.unlock()),
            None => Ok(()),
        }
    }
}

impl Drop for MutexGuard {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let limit = self.shared.client.session_timeout();
            let _ = self.shared.rt.block_on(async { tokio::time::timeout(limit, inner.unlock()).await });
        }
    }
}
