//! Reentrant lock handles with a local queue in front of the distributed lock.
//!
//! `client.mutex(dir)` returns a handle. Locking a handle that already holds re-enters (a
//! depth count, the same fencing token). Handles of one client on the same directory queue
//! locally first, so the client keeps at most one contender in the server's queue; when a
//! holder leaves and another local handle waits, the lock passes to it without leaving the
//! server's queue: the server only records the handoff (the contender's data is rewritten,
//! which gives the new holder a new, larger fencing token, its mzxid).

mod local;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::lock::{Fence, LockGuard, Validity};
use local::{Exit, LocalQueue, Step};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard as StdGuard, PoisonError};
use tokio::sync::Notify;

/// One directory's local queue, shared by the client's handles on it.
pub(crate) struct Shared {
    client: Client,
    dir: String,
    data: Vec<u8>,
    // A std mutex: transitions are short and never await.
    state: StdMutex<LocalQueue<LockGuard>>,
    changed: Notify,
    next_handle: AtomicU64,
}

impl Shared {
    fn state(&self) -> StdGuard<'_, LocalQueue<LockGuard>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A lock handle; see the module docs. Cheap to create; hold one per logical owner.
pub struct Mutex {
    shared: Arc<Shared>,
    handle: u64,
}

/// A held [`Mutex`]. Dropping it leaves the lock (in the background).
#[must_use = "dropping the guard leaves the lock"]
pub struct MutexGuard {
    shared: Arc<Shared>,
    handle: u64,
    token: u64,
    validity: Validity,
    left: bool,
}

impl Client {
    /// A new reentrant handle on the lock `dir`, queueing locally with this client's other
    /// handles on `dir`.
    pub fn mutex(&self, dir: &str) -> Mutex {
        self.mutex_with_data(dir, &[])
    }

    /// Like [`mutex`](Self::mutex); `data` is the context other contenders see.
    pub fn mutex_with_data(&self, dir: &str, data: &[u8]) -> Mutex {
        let mut registry = self.inner.mutexes.lock().unwrap_or_else(PoisonError::into_inner);
        registry.retain(|_, weak| weak.strong_count() > 0);
        let shared = match registry.get(dir).and_then(|w| w.upgrade()) {
            Some(shared) => shared,
            None => {
                let shared = Arc::new(Shared {
                    client: self.clone(),
                    dir: dir.to_string(),
                    data: data.to_vec(),
                    state: StdMutex::new(LocalQueue::default()),
                    changed: Notify::new(),
                    next_handle: AtomicU64::new(1),
                });
                registry.insert(dir.to_string(), Arc::downgrade(&shared));
                shared
            }
        };
        let handle = shared.next_handle.fetch_add(1, Ordering::Relaxed);
        Mutex { shared, handle }
    }
}

/// Takes a waiting handle out of the local queue if its `lock()` future is dropped.
struct Waiting<'a> {
    shared: &'a Arc<Shared>,
    handle: u64,
    armed: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.armed {
            let orphan = self.shared.state().cancel(self.handle);
            self.shared.changed.notify_waiters();
            if let Some(remote) = orphan {
                drop(remote); // released in the background by its own drop
            }
        }
    }
}

impl Mutex {
    /// Waits until this handle holds the lock (at once, if it already does).
    pub async fn lock(&self) -> Result<MutexGuard> {
        let shared = &self.shared;
        let mut waiting = Waiting { shared, handle: self.handle, armed: true };
        let mut first = true;
        loop {
            let notified = shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let step = {
                let mut state = shared.state();
                if std::mem::take(&mut first) {
                    state.enter(self.handle)
                } else {
                    state.poll(self.handle)
                }
            };
            match step {
                Step::Granted(token) => {
                    waiting.armed = false;
                    let validity = Validity::now(&shared.client);
                    return Ok(MutexGuard {
                        shared: shared.clone(),
                        handle: self.handle,
                        token,
                        validity,
                        left: false,
                    });
                }
                Step::Acquire => match shared.client.lock_with_data(&shared.dir, &shared.data).await {
                    Ok(remote) => {
                        let token = remote.fencing_token();
                        let orphan = shared.state().acquired(remote, token);
                        shared.changed.notify_waiters();
                        drop(orphan);
                    }
                    Err(e) => {
                        waiting.armed = false;
                        shared.state().acquire_failed(self.handle);
                        shared.changed.notify_waiters();
                        return Err(e);
                    }
                },
                Step::Wait => notified.await,
            }
        }
    }
}

impl MutexGuard {
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// The fence for writes made under this guard (see [`Client::set_data_fenced`]).
    pub fn fence(&self) -> Option<Fence> {
        let path = self.shared.state().remote().map(|r| r.path().to_string())?;
        Some(Fence { path, token: self.token })
    }

    /// Completes when the lock can no longer be trusted (see [`LockGuard::lost`]).
    pub async fn lost(&self) {
        self.validity.lost().await
    }

    pub fn is_lost(&self) -> bool {
        self.validity.is_lost()
    }

    /// Leaves the lock once (a reentrant holder still holds until its last guard goes) and
    /// waits until the next holder has it or the server has the release.
    pub async fn unlock(mut self) -> Result<()> {
        self.left = true;
        leave(self.shared.clone(), self.handle).await
    }
}

impl Drop for MutexGuard {
    fn drop(&mut self) {
        if !self.left {
            let (shared, handle) = (self.shared.clone(), self.handle);
            // Spawned on the client's runtime, which also serves blocking callers.
            shared.client.inner.runtime.clone().spawn(async move {
                if let Err(error) = leave(shared, handle).await {
                    tracing::warn!(%error, "leaving a dropped lock guard failed");
                }
            });
        }
    }
}

async fn leave(shared: Arc<Shared>, handle: u64) -> Result<()> {
    let exit = shared.state().exit(handle);
    match exit {
        Exit::Nested => Ok(()),
        Exit::Release(remote) => remote.unlock().await,
        Exit::HandOff => hand_off(&shared).await,
    }
}

/// Gives the lock to the next local waiter: rewriting the contender's data records the
/// handoff on the server and makes the new holder's token (the node's mzxid) larger than
/// every earlier one, so a fenced write by the previous holder now fails.
async fn hand_off(shared: &Shared) -> Result<()> {
    loop {
        let Some(path) = shared.state().remote().map(|r| r.path().to_string()) else { return Ok(()) };
        match shared.client.set_data(&path, &shared.data, None).await {
            Ok(stat) => {
                let orphan = shared.state().handed_off(stat.mzxid);
                shared.changed.notify_waiters();
                return match orphan {
                    Some(remote) => remote.unlock().await,
                    None => Ok(()),
                };
            }
            Err(Error::ConnectionLoss) => {
                if shared.client.wait_connected().await.is_err() {
                    return lost(shared, Error::SessionExpired);
                }
            }
            Err(e) => return lost(shared, e),
        }
    }
}

/// The remote lock is gone (session over, contender deleted): waiters start over.
fn lost(shared: &Shared, error: Error) -> Result<()> {
    let remote = shared.state().remote_lost();
    shared.changed.notify_waiters();
    drop(remote);
    Err(error)
}
