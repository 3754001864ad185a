//! etcd behind [`System`] (feature `etcd`): znode paths are used as keys as they are, writes
//! go through KV put/delete/txn, locks through etcd's own lock service (`Lock`/`Unlock`) held
//! with the session's lease.
//!
//! A "session" is one gRPC connection and one lease kept alive in the background, the lease
//! standing in for ZooKeeper's session: ephemeral nodes and lock keys are attached to it.

use crate::rivals::Cluster;
use crate::sys::{Counters, Error, Fired, Result, Session, System, SESSION_TIMEOUT};
use etcd_client as etcd;
use std::sync::Arc;
use std::time::Duration;

impl From<etcd::Error> for Error {
    fn from(e: etcd::Error) -> Self {
        Error(format!("etcd: {e}"))
    }
}

/// An etcd cluster given by its members' client URLs.
pub struct Etcd {
    pub urls: Vec<String>,
}

#[derive(Clone)]
pub struct EtcdSession {
    client: etcd::Client,
    lease: i64,
    _keeper: Arc<KeepAlive>,
}

/// Aborts the keep-alive task when the last clone of the session goes.
struct KeepAlive(tokio::task::JoinHandle<()>);

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A held etcd lock: its key, and the revision the grant was read at (the FIFO check's order).
pub struct EtcdGuard {
    key: Vec<u8>,
    revision: u64,
}

fn header_revision(h: Option<&etcd::ResponseHeader>) -> u64 {
    h.map_or(0, |h| u64::try_from(h.revision()).unwrap_or(0))
}

impl EtcdSession {
    fn c(&self) -> etcd::Client {
        // A clone shares the connection; the client's methods take `&mut self`.
        self.client.clone()
    }

    /// Puts `data` at `path` only if no such key exists; `false` if one did.
    async fn put_new(&self, path: &str, data: &[u8], lease: Option<i64>) -> Result<bool> {
        let options = lease.map(|l| etcd::PutOptions::new().with_lease(l));
        let txn = etcd::Txn::new()
            .when(vec![etcd::Compare::create_revision(path, etcd::CompareOp::Equal, 0)])
            .and_then(vec![etcd::TxnOp::put(path, data, options)]);
        Ok(self.c().txn(txn).await?.succeeded())
    }
}

impl Session for EtcdSession {
    type Guard = EtcdGuard;

    async fn create(&self, path: &str, data: &[u8], ephemeral: bool) -> Result<()> {
        if self.put_new(path, data, ephemeral.then_some(self.lease)).await? {
            Ok(())
        } else {
            Err(Error(format!("etcd: {path} exists")))
        }
    }

    async fn ensure(&self, path: &str) -> Result<()> {
        self.put_new(path, b"", None).await.map(|_| ())
    }

    async fn delete(&self, path: &str) -> Result<()> {
        self.c().delete(path, None).await?;
        Ok(())
    }

    async fn get_data(&self, path: &str) -> Result<usize> {
        let r = self.c().get(path, None).await?;
        r.kvs().first().map(|kv| kv.value().len()).ok_or_else(|| Error(format!("etcd: no key {path}")))
    }

    async fn set_data(&self, path: &str, data: &[u8]) -> Result<()> {
        self.c().put(path, data, None).await?;
        Ok(())
    }

    async fn watch_data(&self, path: &str) -> Result<Fired> {
        let r = self.c().get(path, None).await?;
        let from = header_revision(r.header()) as i64 + 1;
        let (watcher, mut stream) =
            self.c().watch(path, Some(etcd::WatchOptions::new().with_start_revision(from))).await?;
        Ok(Box::pin(async move {
            let _watcher = watcher; // dropping it would cancel the watch
            while let Some(message) = stream.message().await? {
                if !message.events().is_empty() {
                    return Ok(());
                }
            }
            Err(Error("etcd: watch stream ended".into()))
        }))
    }

    async fn set_all(&self, paths: &[String], data: &[u8]) -> Result<()> {
        let ops = paths.iter().map(|p| etcd::TxnOp::put(p.as_str(), data, None)).collect::<Vec<_>>();
        self.c().txn(etcd::Txn::new().and_then(ops)).await?;
        Ok(())
    }

    async fn children(&self, path: &str) -> Result<Vec<String>> {
        let prefix = format!("{path}/");
        let r = self.c().get(prefix.as_str(), Some(etcd::GetOptions::new().with_prefix().with_keys_only())).await?;
        let keys: Vec<String> = r.kvs().iter().map(|kv| String::from_utf8_lossy(kv.key()).into_owned()).collect();
        Ok(child_names(&prefix, &keys))
    }

    async fn lock(&self, dir: &str) -> Result<EtcdGuard> {
        let r = self.c().lock(dir, Some(etcd::LockOptions::new().with_lease(self.lease))).await?;
        Ok(EtcdGuard { key: r.key().to_vec(), revision: header_revision(r.header()) })
    }

    async fn set_fenced(&self, guard: &EtcdGuard, path: &str, data: &[u8]) -> Result<()> {
        let held = etcd::Compare::create_revision(guard.key.clone(), etcd::CompareOp::Greater, 0);
        let txn = etcd::Txn::new().when([held]).and_then([etcd::TxnOp::put(path, data, None)]);
        if self.c().txn(txn).await?.succeeded() {
            Ok(())
        } else {
            Err(Error("etcd: the lock key is gone".into()))
        }
    }

    async fn check_held(&self, guard: &EtcdGuard) -> Result<()> {
        let r = self.c().get(guard.key.clone(), None).await?;
        if r.kvs().is_empty() {
            Err(Error("etcd: the lock key is gone".into()))
        } else {
            Ok(())
        }
    }

    fn order(guard: &EtcdGuard) -> u64 {
        guard.revision
    }

    async fn unlock(&self, guard: EtcdGuard) -> Result<()> {
        self.c().unlock(guard.key).await?;
        Ok(())
    }

    fn release(&self, guard: EtcdGuard) {
        // tonic sends the request only once the future is polled: a task polls it.
        let mut client = self.c();
        tokio::spawn(async move {
            if let Err(error) = client.unlock(guard.key).await {
                eprintln!("ward-bench: background etcd unlock failed: {error}");
            }
        });
    }

    async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.c().lease_revoke(self.lease)).await;
    }
}

/// The distinct names one level below `prefix` among `keys` (etcd's keyspace is flat).
fn child_names(prefix: &str, keys: &[String]) -> Vec<String> {
    let mut names: Vec<String> = keys
        .iter()
        .filter_map(|k| k.strip_prefix(prefix))
        .map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
        .filter(|n| !n.is_empty())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

impl System for Etcd {
    type S = EtcdSession;

    fn name(&self) -> &'static str {
        "etcd"
    }

    async fn connect(&self) -> Result<EtcdSession> {
        let options = etcd::ConnectOptions::new().with_connect_timeout(Duration::from_secs(5));
        let mut client = etcd::Client::connect(&self.urls, Some(options)).await?;
        let lease = client.lease_grant(SESSION_TIMEOUT.as_secs() as i64, None).await?.id();
        let (mut keeper, mut replies) = client.lease_keep_alive(lease).await?;
        let keep = tokio::spawn(async move {
            loop {
                tokio::time::sleep(SESSION_TIMEOUT / 4).await;
                if keeper.keep_alive().await.is_err() || replies.message().await.is_err() {
                    // The stream broke (a member went away): a later round opens a new one.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        });
        Ok(EtcdSession { client, lease, _keeper: Arc::new(KeepAlive(keep)) })
    }

    fn server_pid(&self) -> Option<u32> {
        None
    }

    async fn counters(&self, _session: &EtcdSession) -> Result<Counters> {
        Ok(Counters::default())
    }

    async fn live_sessions(&self, _session: &EtcdSession) -> Option<u64> {
        None
    }
}

impl Cluster for Etcd {
    fn members(&self) -> Vec<String> {
        self.urls.clone()
    }

    fn on(&self, members: &[String]) -> Self {
        Etcd { urls: members.to_vec() }
    }

    /// Asks every member alone for its status; the one whose own ID is the leader it reports.
    async fn leader(&self) -> Option<String> {
        let mut seen = Vec::new();
        for url in &self.urls {
            let options = etcd::ConnectOptions::new().with_connect_timeout(Duration::from_secs(1));
            let Ok(Ok(mut c)) =
                tokio::time::timeout(Duration::from_secs(2), etcd::Client::connect([url], Some(options))).await
            else {
                continue;
            };
            if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), c.status()).await {
                seen.push((url.clone(), s.header().map_or(0, |h| h.member_id()), s.leader()));
            }
        }
        leader_of(&seen)
    }
}

/// Of (URL, member ID, leader ID as that member sees it), the URL of the member that leads,
/// once every member that answered names the same leader.
pub fn leader_of(status: &[(String, u64, u64)]) -> Option<String> {
    let leader = status.first()?.2;
    if leader == 0 || status.iter().any(|s| s.2 != leader) {
        return None;
    }
    status.iter().find(|s| s.1 == leader).map(|s| s.0.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leader_is_the_member_everyone_names() {
        let s = |u: &str, id, leader| (u.to_string(), id, leader);
        let agreed = [s("a", 1, 2), s("b", 2, 2), s("c", 3, 2)];
        assert_eq!(leader_of(&agreed).as_deref(), Some("b"));
        assert_eq!(leader_of(&[s("a", 1, 2), s("b", 2, 3)]), None, "members disagree");
        assert_eq!(leader_of(&[s("a", 1, 0), s("b", 2, 0)]), None, "no leader yet");
        assert_eq!(leader_of(&[s("a", 1, 3), s("b", 2, 3)]), None, "the leader did not answer");
    }

    #[test]
    fn children_are_one_level_below_the_prefix() {
        let keys: Vec<String> = ["/d/lock/1", "/d/lock/2", "/d/x", "/d/x/y"].iter().map(|k| k.to_string()).collect();
        assert_eq!(child_names("/d/", &keys), ["lock", "x"]);
    }
}
