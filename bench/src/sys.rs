//! The two systems behind one interface, so every workload is written once.
//!
//! Ward goes through `ward-client` and its server-side lock queue. ZooKeeper goes through the
//! `zookeeper-client` crate with ZooKeeper's standard herd-free lock recipe: an
//! ephemeral-sequential child, then `getChildren`; the lowest child holds, every other one
//! watches only its immediate predecessor and re-checks when that one goes. This is the same
//! sequence of requests as the crate's own `Client::lock`, spelled out so that the release can
//! be awaited and the watch events delivered to waiters can be counted.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use zookeeper_client as zk;

/// A benchmark error: what failed, as text.
#[derive(Debug)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ward_client::Error> for Error {
    fn from(e: ward_client::Error) -> Self {
        Error(format!("ward: {e}"))
    }
}

impl From<zk::Error> for Error {
    fn from(e: zk::Error) -> Self {
        Error(format!("zookeeper: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(format!("io: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The session timeout every benchmark session asks for (both systems' default ranges allow it).
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(20);

/// A watch that has been set: completes when its event arrives.
pub type Fired = Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// One session of either system.
pub trait Session: Clone + Send + Sync + 'static {
    /// The lock a contender holds: its fencing token or sequence number, for the FIFO check.
    type Guard: Send + 'static;

    fn create(&self, path: &str, data: &[u8], ephemeral: bool) -> impl Future<Output = Result<()>> + Send;
    /// Creates a persistent node unless it exists.
    fn ensure(&self, path: &str) -> impl Future<Output = Result<()>> + Send;
    fn delete(&self, path: &str) -> impl Future<Output = Result<()>> + Send;
    fn get_data(&self, path: &str) -> impl Future<Output = Result<usize>> + Send;
    fn set_data(&self, path: &str, data: &[u8]) -> impl Future<Output = Result<()>> + Send;
    /// Reads `path` and leaves a one-shot data watch on it.
    fn watch_data(&self, path: &str) -> impl Future<Output = Result<Fired>> + Send;
    /// Sets the data of every path in one atomic multi (one transaction).
    fn set_all(&self, paths: &[String], data: &[u8]) -> impl Future<Output = Result<()>> + Send;
    fn children(&self, path: &str) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// Waits for the exclusive lock of `dir`.
    fn lock(&self, dir: &str) -> impl Future<Output = Result<Self::Guard>> + Send;
    /// Increases with every later grant of the same lock.
    fn order(guard: &Self::Guard) -> u64;
    /// Sets `path`'s data only while `guard` still holds its lock, checked in the same
    /// transaction as the write (Ward: a fenced write; ZooKeeper: a multi of a check of the
    /// contender node and the set; etcd: a transaction comparing the lock key).
    fn set_fenced(&self, guard: &Self::Guard, path: &str, data: &[u8]) -> impl Future<Output = Result<()>> + Send;
    /// Whether `guard` still holds its lock as of now, linearizably (Ward: `check_fence`;
    /// ZooKeeper: `sync`, then the contender node's stat; etcd: a linearizable get).
    fn check_held(&self, guard: &Self::Guard) -> impl Future<Output = Result<()>> + Send;
    /// Releases and waits until the server acknowledged it.
    fn unlock(&self, guard: Self::Guard) -> impl Future<Output = Result<()>> + Send;
    /// Releases without waiting for the acknowledgement: the release is sent at once, so a
    /// later request of this session is ordered behind it.
    fn release(&self, guard: Self::Guard);
    /// Ends the session (best effort).
    fn close(self) -> impl Future<Output = ()> + Send;
}

/// Server-side counters a workload reads around its window; `None` where a system has no such
/// counter.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// Ward: lock grants pushed to waiters. ZooKeeper: watch events delivered to lock waiters
    /// (counted by the recipe in this process).
    pub lock_notifications: Option<u64>,
    /// fdatasyncs of the transaction log.
    pub log_fsyncs: Option<u64>,
}

/// A system under test.
pub trait System: Send + Sync + 'static {
    type S: Session;
    fn name(&self) -> &'static str;
    fn connect(&self) -> impl Future<Output = Result<Self::S>> + Send;
    /// The server's PID, if it could be found.
    fn server_pid(&self) -> Option<u32>;
    /// Counters, read through `session` where the system serves them.
    fn counters(&self, session: &Self::S) -> impl Future<Output = Result<Counters>> + Send;
    /// Number of live sessions on the server, if known.
    fn live_sessions(&self, session: &Self::S) -> impl Future<Output = Option<u64>> + Send;
    /// Bytes of live JVM heap after a full GC (ZooKeeper only).
    fn live_heap(&self) -> Option<u64> {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Ward

pub struct Ward {
    pub addr: String,
    pub pid: Option<u32>,
}

impl Session for ward_client::Client {
    type Guard = ward_client::LockGuard;

    async fn create(&self, path: &str, data: &[u8], ephemeral: bool) -> Result<()> {
        let mode = if ephemeral { ward_client::CreateMode::Ephemeral } else { ward_client::CreateMode::Persistent };
        ward_client::Client::create(self, path, data, mode).await?;
        Ok(())
    }

    async fn ensure(&self, path: &str) -> Result<()> {
        match ward_client::Client::create(self, path, b"", ward_client::CreateMode::Persistent).await {
            Ok(_) | Err(ward_client::Error::NodeExists) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn delete(&self, path: &str) -> Result<()> {
        Ok(ward_client::Client::delete(self, path, None).await?)
    }

    async fn get_data(&self, path: &str) -> Result<usize> {
        Ok(ward_client::Client::get_data(self, path).await?.0.len())
    }

    async fn set_data(&self, path: &str, data: &[u8]) -> Result<()> {
        ward_client::Client::set_data(self, path, data, None).await?;
        Ok(())
    }

    async fn watch_data(&self, path: &str) -> Result<Fired> {
        let (_, _, watch) = self.get_data_watch(path).await?;
        Ok(Box::pin(async move {
            watch.await?;
            Ok(())
        }))
    }

    async fn set_all(&self, paths: &[String], data: &[u8]) -> Result<()> {
        let ops = paths
            .iter()
            .map(|p| ward_client::Op::SetData { path: p.clone(), data: data.to_vec(), version: None })
            .collect();
        self.multi(ops).await?;
        Ok(())
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        Ok(self.get_children(path).await?)
    }

    async fn lock(&self, dir: &str) -> Result<Self::Guard> {
        Ok(ward_client::Client::lock(self, dir).await?)
    }

    fn order(guard: &Self::Guard) -> u64 {
        guard.fencing_token()
    }

    async fn set_fenced(&self, guard: &Self::Guard, path: &str, data: &[u8]) -> Result<()> {
        self.set_data_fenced(&guard.fence(), path, data, None).await?;
        Ok(())
    }

    async fn check_held(&self, guard: &Self::Guard) -> Result<()> {
        Ok(self.check_fence(guard.path(), guard.fencing_token()).await?)
    }

    async fn unlock(&self, guard: Self::Guard) -> Result<()> {
        Ok(guard.unlock().await?)
    }

    fn release(&self, guard: Self::Guard) {
        // `LockGuard`'s drop queues the release behind earlier requests and retries it
        // until the server acknowledges it.
        drop(guard);
    }

    async fn close(self) {
        let _ = ward_client::Client::close(&self).await;
    }
}

impl System for Ward {
    type S = ward_client::Client;

    fn name(&self) -> &'static str {
        "ward"
    }

    async fn connect(&self) -> Result<Self::S> {
        Ok(ward_client::Client::builder(&self.addr).session_timeout(SESSION_TIMEOUT).connect().await?)
    }

    fn server_pid(&self) -> Option<u32> {
        self.pid
    }

    async fn counters(&self, session: &Self::S) -> Result<Counters> {
        let stats = session.server_stats().await?;
        Ok(Counters { lock_notifications: Some(stats.lock_grants), log_fsyncs: Some(stats.log_fsyncs) })
    }

    async fn live_sessions(&self, session: &Self::S) -> Option<u64> {
        session.server_stats().await.ok().map(|s| s.sessions)
    }
}

// ---------------------------------------------------------------------------------------------
// ZooKeeper

pub struct ZooKeeper {
    pub addr: String,
    pub pid: Option<u32>,
    /// Watch events delivered to lock waiters, over every session of this process.
    pub lock_events: Arc<AtomicU64>,
}

/// A ZooKeeper session and the shared count of lock watch events.
#[derive(Clone)]
pub struct ZkSession {
    client: zk::Client,
    lock_events: Arc<AtomicU64>,
}

/// A held ZooKeeper lock: the contender node and its sequence number.
pub struct ZkGuard {
    path: String,
    sequence: u64,
}

const LOCK_PREFIX: &str = "lock-";

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// The sequence number of a lock contender's name, if it is one.
fn lock_sequence(name: &str) -> Option<u64> {
    name.strip_prefix(LOCK_PREFIX)?.parse().ok()
}

impl ZkSession {
    pub fn state(&self) -> zk::SessionState {
        self.client.state()
    }
}

impl Session for ZkSession {
    type Guard = ZkGuard;

    async fn create(&self, path: &str, data: &[u8], ephemeral: bool) -> Result<()> {
        let mode = if ephemeral { zk::CreateMode::Ephemeral } else { zk::CreateMode::Persistent };
        self.client.create(path, data, &mode.with_acls(zk::Acls::anyone_all())).await?;
        Ok(())
    }

    async fn ensure(&self, path: &str) -> Result<()> {
        match self.client.create(path, b"", &persistent()).await {
            Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn delete(&self, path: &str) -> Result<()> {
        Ok(self.client.delete(path, None).await?)
    }

    async fn get_data(&self, path: &str) -> Result<usize> {
        Ok(self.client.get_data(path).await?.0.len())
    }

    async fn set_data(&self, path: &str, data: &[u8]) -> Result<()> {
        self.client.set_data(path, data, None).await?;
        Ok(())
    }

    async fn watch_data(&self, path: &str) -> Result<Fired> {
        let (_, _, watcher) = self.client.get_and_watch_data(path).await?;
        Ok(Box::pin(async move {
            watcher.changed().await;
            Ok(())
        }))
    }

    async fn set_all(&self, paths: &[String], data: &[u8]) -> Result<()> {
        let mut writer = self.client.new_multi_writer();
        for p in paths {
            writer.add_set_data(p, data, None)?;
        }
        writer.commit().await.map_err(|e| Error(format!("zookeeper multi: {e}")))?;
        Ok(())
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        Ok(self.client.list_children(path).await?)
    }

    async fn lock(&self, dir: &str) -> Result<ZkGuard> {
        // 1. An ephemeral-sequential contender.
        let prefix = format!("{dir}/{LOCK_PREFIX}");
        let mode = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let (_, sequence) = self.client.create(&prefix, b"", &mode).await?;
        let sequence = u64::try_from(sequence.into_i64()).map_err(|_| Error("negative sequence".into()))?;
        let path = format!("{prefix}{sequence:010}");
        loop {
            // 2. The lowest contender holds.
            let mut queue: Vec<u64> =
                self.client.list_children(dir).await?.iter().filter_map(|n| lock_sequence(n)).collect();
            queue.sort_unstable();
            let Some(index) = queue.iter().position(|&s| s == sequence) else {
                return Err(Error(format!("lock contender {path} vanished")));
            };
            if index == 0 {
                return Ok(ZkGuard { path, sequence });
            }
            // 3. Otherwise watch only the predecessor; if it is gone already, look again.
            let predecessor = format!("{prefix}{:010}", queue[index - 1]);
            match self.client.get_and_watch_data(&predecessor).await {
                Ok((_, _, watcher)) => {
                    watcher.changed().await;
                    self.lock_events.fetch_add(1, Ordering::Relaxed);
                }
                Err(zk::Error::NoNode) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn set_fenced(&self, guard: &ZkGuard, path: &str, data: &[u8]) -> Result<()> {
        let mut writer = self.client.new_multi_writer();
        writer.add_check_version(&guard.path, -1)?;
        writer.add_set_data(path, data, None)?;
        writer.commit().await.map_err(|e| Error(format!("zookeeper multi: {e}")))?;
        Ok(())
    }

    async fn check_held(&self, guard: &ZkGuard) -> Result<()> {
        self.client.sync(&guard.path).await?;
        match self.client.check_stat(&guard.path).await? {
            Some(_) => Ok(()),
            None => Err(Error(format!("lock contender {} is gone", guard.path))),
        }
    }

    fn order(guard: &ZkGuard) -> u64 {
        guard.sequence
    }

    async fn unlock(&self, guard: ZkGuard) -> Result<()> {
        Ok(self.client.delete(&guard.path, None).await?)
    }

    fn release(&self, guard: ZkGuard) {
        // zookeeper-client sends the request when `delete` is called; only the reply is
        // awaited in the background (as its own `LockClient` does on drop).
        let reply = self.client.delete(&guard.path, None);
        tokio::spawn(async move {
            if let Err(error) = reply.await {
                eprintln!("ward-bench: background lock release failed: {error}");
            }
        });
    }

    async fn close(self) {
        // The session is closed (CloseSession sent) when the last clone is dropped.
        drop(self.client);
    }
}

impl System for ZooKeeper {
    type S = ZkSession;

    fn name(&self) -> &'static str {
        "zookeeper"
    }

    async fn connect(&self) -> Result<ZkSession> {
        let client = zk::Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(&self.addr).await?;
        Ok(ZkSession { client, lock_events: self.lock_events.clone() })
    }

    fn server_pid(&self) -> Option<u32> {
        self.pid
    }

    async fn counters(&self, _session: &ZkSession) -> Result<Counters> {
        let addr = self.addr.clone();
        let fsyncs = tokio::task::spawn_blocking(move || crate::procinfo::zk_counter(&addr, "zk_cnt_fsynctime"))
            .await
            .map_err(|e| Error(format!("mntr: {e}")))?;
        Ok(Counters {
            lock_notifications: Some(self.lock_events.load(Ordering::Relaxed)),
            log_fsyncs: fsyncs.map(|f| f as u64),
        })
    }

    async fn live_sessions(&self, _session: &ZkSession) -> Option<u64> {
        let addr = self.addr.clone();
        tokio::task::spawn_blocking(move || crate::procinfo::zk_counter(&addr, "zk_global_sessions"))
            .await
            .ok()
            .flatten()
            .map(|v| v as u64)
    }

    fn live_heap(&self) -> Option<u64> {
        crate::procinfo::jvm_live_heap(self.pid?)
    }
}
