//! The async client: one `Client` is cheap to clone and shared by many tasks.

use crate::builder::ClientBuilder;
use crate::conn::Cmd;
use crate::error::{Error, Result};
use crate::lock::Fence;
use crate::state::SessionState;
use crate::stream::WatchStream;
use crate::sync::oneshot;
use crate::watch::{Watch, WatchSender};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use ward_proto::{
    path, CreateMode, MemberInfo, MemberList, Op, OpResult, Request, Response, ServerStats, SessionId, Stat, WatchMode,
};

/// A session with a Ward ensemble. Clones share the session; when the last clone is dropped
/// the session is closed (its ephemerals deleted) in the background.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub tx: mpsc::UnboundedSender<Cmd>,
    pub state: watch::Receiver<SessionState>,
    /// The session as lock guards see it (see `SessionCell`).
    pub session: crate::sync::Arc<crate::state::SessionCell>,
    pub session_id: SessionId,
    pub timeout: Duration,
    /// Names this client's lock attempts, so a retry finds its own contender.
    pub next_tag: AtomicU64,
    /// Local lock queues by directory, shared by the client's `Mutex` handles.
    pub mutexes: std::sync::Mutex<std::collections::HashMap<String, std::sync::Weak<crate::mutex::Shared>>>,
    /// The runtime the client was made on, for work started from `Drop`.
    pub runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("session", &self.inner.session_id).field("state", &self.state()).finish()
    }
}

impl Client {
    /// Connects with default settings to `addrs` ("host:port[,host:port...]").
    pub async fn connect(addrs: &str) -> Result<Client> {
        ClientBuilder::new(addrs).connect().await
    }

    pub fn builder(addrs: &str) -> ClientBuilder {
        ClientBuilder::new(addrs)
    }

    pub fn session_id(&self) -> SessionId {
        self.inner.session_id
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.inner.timeout
    }

    pub fn state(&self) -> SessionState {
        *self.inner.state.borrow()
    }

    /// Every change of [`SessionState`] (intermediate states may be skipped if nobody looks).
    pub fn state_changes(&self) -> watch::Receiver<SessionState> {
        self.inner.state.clone()
    }

    /// Creates a node and returns its actual path (with the sequence suffix, if any).
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        self.create_with_stat(path, data, mode).await.map(|(path, _)| path)
    }

    /// Creates a node and returns its actual path and its stat.
    pub async fn create_with_stat(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<(String, Stat)> {
        if mode.is_sequential() { path::validate_sequential_prefix(path) } else { path::validate(path) }
            .map_err(|e| Error::BadArguments(format!("{path:?}: {e}")))?;
        check_data(data)?;
        let request = Request::Create { path: path.to_string(), data: data.to_vec(), mode };
        match self.call(request, None).await? {
            Response::Created { path, stat } => Ok((path, stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Deletes a node; `version: Some(v)` fails with `BadVersion` unless it is at `v`.
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        match self.call(Request::Delete { path: checked(path)?, version }, None).await? {
            Response::Deleted => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// Replaces a node's data; returns the new stat.
    pub async fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        check_data(data)?;
        let request = Request::SetData { path: checked(path)?, data: data.to_vec(), version };
        match self.call(request, None).await? {
            Response::DataSet(stat) => Ok(stat),
            other => Err(unexpected(other)),
        }
    }

    pub async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        match self.call(Request::GetData { path: checked(path)?, watch: false }, None).await? {
            Response::Data { data, stat } => Ok((data, stat)),
            other => Err(unexpected(other)),
        }
    }

    /// Reads a node and watches it: the watch fires on its next data change or delete.
    pub async fn get_data_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch)> {
        let (tx, watch) = Watch::new();
        match self.call(Request::GetData { path: checked(path)?, watch: true }, Some(tx)).await? {
            Response::Data { data, stat } => Ok((data, stat, watch)),
            other => Err(unexpected(other)),
        }
    }

    /// The node's stat, or `None` if it does not exist.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        match self.call(Request::Exists { path: checked(path)?, watch: false }, None).await? {
            Response::Exists(stat) => Ok(stat),
            other => Err(unexpected(other)),
        }
    }

    /// Like [`exists`](Self::exists), and watches the path: the watch fires when the node is
    /// created (if missing now), or changed or deleted (if present).
    pub async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch)> {
        let (tx, watch) = Watch::new();
        match self.call(Request::Exists { path: checked(path)?, watch: true }, Some(tx)).await? {
            Response::Exists(stat) => Ok((stat, watch)),
            other => Err(unexpected(other)),
        }
    }

    /// The names of a node's children, sorted.
    pub async fn get_children(&self, path: &str) -> Result<Vec<String>> {
        match self.call(Request::GetChildren { path: checked(path)?, watch: false }, None).await? {
            Response::Children { children, .. } => Ok(children),
            other => Err(unexpected(other)),
        }
    }

    /// Lists children and watches the node: the watch fires when a child is created or
    /// deleted, or the node itself is deleted.
    pub async fn get_children_watch(&self, path: &str) -> Result<(Vec<String>, Watch)> {
        let (tx, watch) = Watch::new();
        match self.call(Request::GetChildren { path: checked(path)?, watch: true }, Some(tx)).await? {
            Response::Children { children, .. } => Ok((children, watch)),
            other => Err(unexpected(other)),
        }
    }

    /// A persistent watch on `path` (ZooKeeper's `addWatch`): a stream of every change of
    /// the node ([`WatchMode::Persistent`]: created, data changed, deleted, children
    /// changed) or of the node and every node below it ([`WatchMode::PersistentRecursive`]:
    /// each event names the node that changed; no children changes, as the creates and
    /// deletes below are reported themselves). It stays armed when it fires, and across
    /// reconnects: armed again since the last change it had, it gets what it missed, so every
    /// change arrives once and in zxid order (docs/guarantees.md, G23). The watch covers the
    /// changes after the call; the node need not exist.
    pub async fn watch(&self, path: &str, mode: WatchMode) -> Result<WatchStream> {
        let path = checked(path)?;
        let (reply, rx) = oneshot::channel();
        self.inner.tx.send(Cmd::Watch { path, mode, reply }).map_err(|_| Error::Closed)?;
        rx.await.map_err(|_| Error::Closed)?
    }

    /// Removes this session's persistent watch of `mode` on `path`: its streams end.
    /// `Error::NoWatcher` if there is none.
    pub async fn remove_watches(&self, path: &str, mode: WatchMode) -> Result<()> {
        let path = checked(path)?;
        let (reply, rx) = oneshot::channel();
        self.inner.tx.send(Cmd::RemoveWatch { path, mode, reply }).map_err(|_| Error::Closed)?;
        rx.await.map_err(|_| Error::Closed)?
    }

    /// Applies every op or none. On failure, `Error::MultiFailed` names the op that failed.
    pub async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>> {
        for op in &ops {
            let path = op.path();
            let valid = match op.create_mode() {
                Some(mode) if mode.is_sequential() => path::validate_sequential_prefix(path),
                _ => path::validate(path),
            };
            valid.map_err(|e| Error::BadArguments(format!("{path:?}: {e}")))?;
            if op.data_len() > ward_proto::MAX_DATA_LEN {
                return Err(Error::BadArguments(format!("{path:?}: too much data")));
            }
        }
        match self.call(Request::Multi(ops), None).await? {
            Response::Multi(results) => {
                let failed = results.iter().enumerate().find_map(|(index, r)| match r {
                    OpResult::Error(code) if *code != ward_proto::ErrorCode::RolledBack => Some((index, *code)),
                    _ => None,
                });
                match failed {
                    Some((index, code)) => Err(Error::MultiFailed { index, source: Box::new(code.into()) }),
                    None => Ok(results),
                }
            }
            other => Err(unexpected(other)),
        }
    }

    /// Waits until this server has applied every write ordered before the call, so that a
    /// following read is at least as new as the sync.
    pub async fn sync(&self, path: &str) -> Result<()> {
        match self.call(Request::Sync { path: checked(path)? }, None).await? {
            Response::Synced => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// Ends the session now: its ephemeral nodes are deleted and their watchers told. Every
    /// clone of this client then fails with `Error::Closed`.
    pub async fn close(&self) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.inner.tx.send(Cmd::Close { reply }).map_err(|_| Error::Closed)?;
        rx.await.map_err(|_| Error::Closed)?
    }

    /// Succeeds if `path` holds its lock with fencing token `token`, else fails with
    /// `Error::StaleFence`: how a service checks a token it was handed.
    pub async fn check_fence(&self, path: &str, token: u64) -> Result<()> {
        match self.call(Request::CheckFence { path: checked(path)?, token }, None).await? {
            Response::FenceValid => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// Sets data only if the fence still holds (`Error::StaleFence` otherwise).
    pub async fn set_data_fenced(&self, fence: &Fence, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        let ops = vec![fence.op(), Op::SetData { path: checked(path)?, data: data.to_vec(), version }];
        match self.multi(ops).await {
            Ok(results) => match results.get(1) {
                Some(OpResult::DataSet(stat)) => Ok(*stat),
                _ => Err(Error::Protocol("fenced set returned no stat".into())),
            },
            Err(Error::MultiFailed { source, .. }) => Err(*source),
            Err(e) => Err(e),
        }
    }

    /// Counters of the server this client is connected to.
    pub async fn server_stats(&self) -> Result<ServerStats> {
        match self.call(Request::Stats, None).await? {
            Response::Stats(stats) => Ok(stats),
            other => Err(unexpected(other)),
        }
    }

    /// The ensemble's members as its leader sees them: id, peer address, role, applied index
    /// and lag. A single server lists itself.
    pub async fn members(&self) -> Result<Vec<MemberInfo>> {
        match self.call(Request::Members, None).await? {
            Response::Members(members) => Ok(members),
            other => Err(unexpected(other)),
        }
    }

    /// [`Client::members`] with whether the leader hears from each member, and the member it
    /// is handing its leadership to, if it is. Only the leader knows: asked through a
    /// follower, each member's contact is [`Contact::Unknown`](ward_proto::Contact::Unknown).
    pub async fn member_list(&self) -> Result<MemberList> {
        match self.call(Request::MemberList, None).await? {
            Response::MemberList(list) => Ok(list),
            other => Err(unexpected(other)),
        }
    }

    /// Adds member `id`, reachable by its peers at `peer_addr`, to the ensemble: it joins as
    /// a learner, catches up, then votes. Returns once it votes.
    pub async fn add_member(&self, id: u64, peer_addr: &str) -> Result<()> {
        match self.call(Request::AddMember { id, addr: peer_addr.to_string() }, None).await? {
            Response::MembersChanged => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// Adds member `id`, reachable by its peers at `peer_addr`, as an observer: it receives
    /// the log and serves clients but never votes. Returns once it has caught up.
    pub async fn add_observer(&self, id: u64, peer_addr: &str) -> Result<()> {
        match self.call(Request::AddObserver { id, addr: peer_addr.to_string() }, None).await? {
            Response::MembersChanged => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// Removes member `id` from the ensemble (the leader too: another is elected).
    pub async fn remove_member(&self, id: u64) -> Result<()> {
        match self.call(Request::RemoveMember { id }, None).await? {
            Response::MembersChanged => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    /// Hands the ensemble's leadership to member `to`, or to the voter most up to date;
    /// returns the member that leads once it does. Writes in flight carry on at the new
    /// leader; clients keep their sessions.
    pub async fn transfer_leader(&self, to: Option<u64>) -> Result<u64> {
        match self.call(Request::TransferLeader { to }, None).await? {
            Response::LeaderTransferred { leader } => Ok(leader),
            other => Err(unexpected(other)),
        }
    }

    pub(crate) async fn call(&self, request: Request, watch: Option<WatchSender>) -> Result<Response> {
        let (reply, rx) = oneshot::channel();
        self.inner.tx.send(Cmd::Request { request, watch, reply }).map_err(|_| Error::Closed)?;
        rx.await.map_err(|_| Error::Closed)?
    }
}

/// Refuses data the server would refuse, before it costs a round trip (or, past the frame
/// limit, the connection).
pub(crate) fn check_data(data: &[u8]) -> Result<()> {
    if data.len() > ward_proto::MAX_DATA_LEN {
        return Err(Error::BadArguments(format!(
            "{} bytes of data exceed the limit of {}",
            data.len(),
            ward_proto::MAX_DATA_LEN
        )));
    }
    Ok(())
}

pub(crate) fn checked(p: &str) -> Result<String> {
    path::validate(p).map_err(|e| Error::BadArguments(format!("{p:?}: {e}")))?;
    Ok(p.to_string())
}

pub(crate) fn unexpected(response: Response) -> Error {
    Error::Protocol(format!("unexpected response {response:?}"))
}
