//! Reentrant lock handles with a local queue in front of the distributed lock.
//!
//! `client.mutex(dir)` returns a handle. Locking a handle that already holds re-enters (a
//! depth count, the same fencing token). Handles of one client on the same directory queue
//! locally first, so the client keeps at most one contender in the server's queue; when a
//! holder leaves and another local handle waits, the lock passes to it without leaving the
//! server's queue: the server only records the handoff (the contender's data is rewritten,
//! which gives the new holder a new, larger fencing token, its mzxid). That happens only
//! while no other client waits behind this one; otherwise the lock goes back to the server's
//! queue, so tokens keep growing across clients and remote waiters are not starved.

mod local;
mod queue;

// The loom model of the local queue (`--cfg ward_loom`).
#[cfg(all(test, ward_loom))]
mod loom_tests;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::lock::{Fence, LockGuard, Validity};
use crate::{Op, OpResult};
use local::Exit;
use queue::Queue;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

/// One directory's local queue, shared by the client's handles on it.
pub(crate) struct Shared {
    client: Client,
    dir: String,
    data: Vec<u8>,
    queue: Queue<LockGuard>,
    next_handle: AtomicU64,
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
                    queue: Queue::default(),
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

impl Mutex {
    /// Waits until this handle holds the lock (at once, if it already does).
    pub async fn lock(&self) -> Result<MutexGuard> {
        let shared = &self.shared;
        let acquire = || async {
            let remote = shared.client.lock_with_data(&shared.dir, &shared.data).await?;
            let token = remote.fencing_token();
            Ok::<_, Error>((remote, token))
        };
        let token = shared.queue.hold(self.handle, acquire).await?;
        let validity = Validity::now(&shared.client.inner.session);
        Ok(MutexGuard { shared: shared.clone(), handle: self.handle, token, validity, left: false })
    }
}

impl MutexGuard {
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// The fence for writes made under this guard (see [`Client::set_data_fenced`]).
    pub fn fence(&self) -> Option<Fence> {
        let path = self.shared.queue.with_remote(|r| r.path().to_string())?;
        Some(Fence { path, token: self.token })
    }

    /// Completes when the lock can no longer be trusted (see [`LockGuard::lost`]).
    pub async fn lost(&self) {
        self.validity.lost().await
    }

    pub fn is_lost(&self) -> bool {
        self.validity.is_lost()
    }

    pub(crate) fn validity(&self) -> &Validity {
        &self.validity
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
    let exit = shared.queue.exit(handle);
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
    // If this future is dropped halfway (a caller's timeout, the runtime shutting down),
    // the queue must not stay in hand-off with its waiters asleep: give the remote lock up
    // and let them start over.
    struct Abandoned<'a>(&'a Shared, bool);
    impl Drop for Abandoned<'_> {
        fn drop(&mut self) {
            if self.1 {
                drop(self.0.queue.remote_lost());
            }
        }
    }
    let mut abandoned = Abandoned(shared, true);
    let result = hand_off_inner(shared).await;
    abandoned.1 = false;
    result
}

async fn hand_off_inner(shared: &Shared) -> Result<()> {
    loop {
        let Some(path) = shared.queue.with_remote(|r| r.path().to_string()) else { return Ok(()) };
        // Only while nobody else waits behind this client's contender: a later contender's
        // token (its czxid) must stay above every token this client hands out, and remote
        // waiters must not be starved by local ones.
        let ops = vec![
            Op::CheckLast { path: path.clone() },
            Op::SetData { path: path.clone(), data: shared.data.clone(), version: None },
        ];
        let rewritten = match shared.client.multi(ops).await {
            Ok(results) => match results.get(1) {
                Some(OpResult::DataSet(stat)) => Ok(*stat),
                _ => Err(Error::Protocol("handoff returned no stat".into())),
            },
            Err(Error::MultiFailed { source, .. }) => Err(*source),
            Err(e) => Err(e),
        };
        match rewritten {
            Err(Error::LockContended) => {
                // Back to the server's queue: the local waiters queue again, behind the others.
                return match shared.queue.remote_lost() {
                    Some(remote) => remote.unlock().await,
                    None => Ok(()),
                };
            }
            Ok(stat) => {
                let orphan = shared.queue.handed_off(stat.mzxid);
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
    drop(shared.queue.remote_lost());
    Err(error)
}
