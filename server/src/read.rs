//! Reads: served from the local state, with any watch armed in the same view.

use crate::acl::{access, check, AuthId};
use crate::conn::ConnId;
use crate::local::Local;
use crate::state::StateMachine;
use crate::watch::Armed;
use ward_proto::{
    path, perms, Acl, ErrorCode, EventKind, Request, Response, SessionId, Stat, WatchEvent, WatchKind, Zxid,
};

/// Who is reading: the watch registry, the connection that would own a watch, and the
/// connection's identities, which the node's ACL must grant the read to (G24).
pub(crate) struct Reader<'a> {
    pub local: &'a Local,
    pub conn: ConnId,
    pub session: SessionId,
    pub ids: &'a [AuthId],
}

impl Reader<'_> {
    /// Answers a read. `events` receives watches that fire at once (from `SetWatches`);
    /// they go out before the reply.
    pub(crate) fn execute(
        &self,
        state: &StateMachine,
        request: Request,
        events: &mut Vec<WatchEvent>,
    ) -> Result<Response, ErrorCode> {
        if state.session(self.session).is_none() {
            return Err(ErrorCode::SessionExpired);
        }
        match request {
            Request::GetData { path, watch } => {
                valid(&path)?;
                access::node(state.tree(), &path, perms::READ, self.ids)?;
                let node = state.tree().get(&path).ok_or(ErrorCode::NoNode)?;
                self.arm(watch, WatchKind::Data, &path);
                Ok(Response::Data { data: node.data().to_vec(), stat: state.tree().stat(node) })
            }
            Request::Exists { path, watch } => {
                valid(&path)?;
                // ZooKeeper 3.8.4 on: an existing node's stat is READ's to see.
                access::if_exists(state.tree(), &path, perms::READ, self.ids)?;
                let stat = state.tree().get(&path).map(|n| state.tree().stat(n));
                let kind = if stat.is_some() { WatchKind::Data } else { WatchKind::Exists };
                self.arm(watch, kind, &path);
                Ok(Response::Exists(stat))
            }
            Request::GetChildren { path, watch } => {
                valid(&path)?;
                access::node(state.tree(), &path, perms::READ, self.ids)?;
                let node = state.tree().get(&path).ok_or(ErrorCode::NoNode)?;
                self.arm(watch, WatchKind::Child, &path);
                Ok(Response::Children {
                    children: node.children.iter().map(str::to_string).collect(),
                    stat: state.tree().stat(node),
                })
            }
            Request::Sync { path } => valid(&path).map(|()| Response::Synced),
            Request::Ping => Ok(Response::Pong),
            Request::SetWatches { last_zxid, watches } => {
                for (kind, path) in watches {
                    if let Some(event) = self.rearm(state, kind, path, last_zxid) {
                        events.push(event);
                    }
                }
                Ok(Response::WatchesSet)
            }
            Request::AddWatches { watches } => {
                for watch in &watches {
                    valid(&watch.path)?;
                }
                let (replay, missed) = self.local.watches.add_streams(self.conn, &watches);
                Ok(Response::WatchesAdded { replay, missed })
            }
            Request::RemoveWatches { path, mode } => {
                valid(&path)?;
                match self.local.watches.remove(self.conn, &path, |armed| armed == Armed::Persistent(mode)) {
                    true => Ok(Response::WatchesRemoved),
                    false => Err(ErrorCode::NoWatcher),
                }
            }
            Request::LockWait { path } => {
                valid(&path)?;
                access::if_exists(state.tree(), path::parent(&path), perms::READ, self.ids)?;
                state.lock_state(&path).map(Response::Lock).ok_or(ErrorCode::NoNode)
            }
            Request::CheckFence { path, token } => {
                valid(&path)?;
                access::if_exists(state.tree(), &path, perms::READ, self.ids)?;
                crate::state::check_fence(state.tree(), &path, token).map(|()| Response::FenceValid)
            }
            Request::GetAcl { path } => {
                valid(&path)?;
                let (acl, stat) = self.acl(state, &path)?;
                Ok(Response::Acl { acl, stat })
            }
            Request::Stats => Ok(Response::Stats(self.local.stats(state))),
            // Answered from the log before any read (`SessionConn::prepare`).
            Request::Members
            | Request::MemberList
            | Request::AddMember { .. }
            | Request::AddObserver { .. }
            | Request::RemoveMember { .. }
            | Request::TransferLeader { .. } => Err(ErrorCode::BadArguments),
            _ => Err(ErrorCode::BadArguments),
        }
    }

    /// A node's ACL and stat, for a client with READ or ADMIN on it; digests shown only to
    /// one with ADMIN (ZooKeeper's getACL).
    pub(crate) fn acl(&self, state: &StateMachine, path: &str) -> Result<(Vec<Acl>, Stat), ErrorCode> {
        access::node(state.tree(), path, perms::READ | perms::ADMIN, self.ids)?;
        let node = state.tree().get(path).ok_or(ErrorCode::NoNode)?;
        let acl = state.tree().acl(node);
        let acl = match check::allows(acl, perms::ADMIN, self.ids) {
            true => acl.to_vec(),
            false => check::masked(acl),
        };
        Ok((acl, state.tree().stat(node)))
    }

    fn arm(&self, watch: bool, kind: WatchKind, path: &str) {
        if watch {
            self.local.watches.register(self.conn, kind, path);
        }
    }

    /// A watch carried over a reconnect fires at once if what it watches changed after
    /// `last_zxid` (the client missed that event), else it is armed again. The event carries
    /// the zxid of the change it reports, as a live one would.
    fn rearm(&self, state: &StateMachine, kind: WatchKind, path: String, last_zxid: Zxid) -> Option<WatchEvent> {
        if path::validate(&path).is_err() {
            return None;
        }
        let node = state.tree().get(&path);
        let fired = match (kind, node) {
            (WatchKind::Data | WatchKind::Child, None) => Some((EventKind::NodeDeleted, state.last_zxid())),
            (WatchKind::Data, Some(n)) if n.mzxid > last_zxid => Some((EventKind::NodeDataChanged, n.mzxid)),
            (WatchKind::Child, Some(n)) if n.pzxid > last_zxid => Some((EventKind::NodeChildrenChanged, n.pzxid)),
            (WatchKind::Exists, Some(n)) => Some((EventKind::NodeCreated, n.czxid)),
            _ => None,
        };
        match fired {
            Some((kind, zxid)) => Some(WatchEvent { kind, path, zxid }),
            None => {
                self.local.watches.register(self.conn, kind, &path);
                None
            }
        }
    }
}

fn valid(path: &str) -> Result<(), ErrorCode> {
    path::validate(path).map_err(|_| ErrorCode::BadArguments)
}
