//! Requests sent and not yet answered, by xid.

use crate::error::Error;
use crate::sync::oneshot;
use crate::sync::HashMap;
use crate::watch::{LocalWatches, WatchSender};
use tokio::time::Instant;
use ward_proto::{Credentials, ErrorCode, Request, Response, WatchKind};

/// Why a request is in flight.
pub(crate) enum Waiter {
    /// An application request; `watch` is armed if the reply succeeds. `resend` holds a
    /// plain write (create, delete, set, multi): if the connection is lost before its reply,
    /// it is sent again on the next one under the same xid, and the server applies it at
    /// most once (exactly-once writes).
    User {
        reply: oneshot::Sender<Result<Response, Error>>,
        watch: Option<(String, WatchSender)>,
        resend: Option<Request>,
    },
    Close(oneshot::Sender<Result<(), Error>>),
    /// `AddAuth`: once the server accepts it, the credentials are shown again on every later
    /// connection, before anything else.
    Auth {
        scheme: String,
        credentials: Credentials,
        reply: oneshot::Sender<Result<Response, Error>>,
    },
    LockAcquire {
        tag: u64,
        reply: oneshot::Sender<Result<Response, Error>>,
    },
    /// Re-asking after a reconnect whether attempt `tag` holds.
    LockWait {
        tag: u64,
    },
    LockRelease {
        tag: u64,
    },
    /// A heartbeat. Its answer, a pong, is the one proof that the session's deadline was
    /// refreshed where it counts (the server answers only then): the session lives at least
    /// a timeout past the ping's send time.
    Ping,
    /// Watch re-arming and the like: nobody waits on the answer.
    Internal,
    /// A request about persistent watches.
    Streams(crate::stream::StreamWaiter),
}

#[derive(Default)]
pub(crate) struct PendingTable {
    /// Each request with the time it was sent: a reply proves the server heard from us then.
    by_xid: HashMap<u64, (Instant, Waiter)>,
}

impl PendingTable {
    pub(crate) fn insert(&mut self, xid: u64, waiter: Waiter) {
        self.by_xid.insert(xid, (Instant::now(), waiter));
    }

    pub(crate) fn take(&mut self, xid: u64) -> Option<(Instant, Waiter)> {
        self.by_xid.remove(&xid)
    }

    /// The application's close, if one is in flight.
    pub(crate) fn take_close(&mut self) -> Option<oneshot::Sender<Result<(), Error>>> {
        let xid = self.by_xid.iter().find_map(|(xid, (_, w))| matches!(w, Waiter::Close(_)).then_some(*xid))?;
        match self.by_xid.remove(&xid) {
            Some((_, Waiter::Close(reply))) => Some(reply),
            _ => None,
        }
    }

    /// The connection is gone: every request in flight gets `ConnectionLoss` (its outcome is
    /// unknown), except writes that can be sent again: those stay, and are returned oldest
    /// first, to go out again first on the next connection.
    pub(crate) fn connection_lost(&mut self) -> Vec<(u64, Request)> {
        let resendable: Vec<u64> = self
            .by_xid
            .iter()
            .filter(|(_, (_, w))| matches!(w, Waiter::User { resend: Some(_), .. }))
            .map(|(xid, _)| *xid)
            .collect();
        let mut kept: Vec<(u64, (Instant, Waiter))> =
            resendable.into_iter().filter_map(|xid| self.by_xid.remove(&xid).map(|w| (xid, w))).collect();
        self.fail_all(&Error::ConnectionLoss);
        kept.sort_by_key(|(xid, _)| *xid);
        let mut again = Vec::with_capacity(kept.len());
        for (xid, entry) in kept {
            if let (_, Waiter::User { resend: Some(request), .. }) = &entry {
                again.push((xid, request.clone()));
            }
            self.by_xid.insert(xid, entry);
        }
        again
    }

    /// Marks `xid` as sent again now (a reply to it proves the server heard us then).
    pub(crate) fn resent(&mut self, xid: u64) {
        if let Some((sent, _)) = self.by_xid.get_mut(&xid) {
            *sent = Instant::now();
        }
    }

    /// The session is over, or the connection gone: every request in flight gets `error`.
    pub(crate) fn fail_all(&mut self, error: &Error) {
        for (_, (_, waiter)) in self.by_xid.drain() {
            match waiter {
                Waiter::User { reply, .. } => {
                    let _ = reply.send(Err(error.clone()));
                }
                Waiter::Close(reply) => {
                    let _ = reply.send(Err(error.clone()));
                }
                Waiter::LockAcquire { reply, .. } | Waiter::Auth { reply, .. } => {
                    let _ = reply.send(Err(error.clone()));
                }
                Waiter::Streams(waiter) => waiter.fail(error),
                // Kept in the lock table and asked again after the reconnect.
                Waiter::LockWait { .. } | Waiter::LockRelease { .. } | Waiter::Ping | Waiter::Internal => {}
            }
        }
    }
}

/// The path a watching read arms, if `request` is one.
pub(crate) fn watched_path(request: &Request) -> Option<&str> {
    match request {
        Request::GetData { path, watch: true }
        | Request::Exists { path, watch: true }
        | Request::GetChildren { path, watch: true } => Some(path),
        _ => None,
    }
}

/// Completes a user request, arming its watch the way the server armed it.
pub(crate) fn complete_user(
    reply: oneshot::Sender<Result<Response, Error>>,
    watch: Option<(String, WatchSender)>,
    result: Result<Response, ErrorCode>,
    watches: &mut LocalWatches,
) {
    if let (Some((path, tx)), Ok(response)) = (watch, &result) {
        let kind = match response {
            Response::Data { .. } | Response::Exists(Some(_)) => Some(WatchKind::Data),
            Response::Exists(None) => Some(WatchKind::Exists),
            Response::Children { .. } => Some(WatchKind::Child),
            _ => None,
        };
        if let Some(kind) = kind {
            watches.add(kind, path, tx);
        }
    }
    let _ = reply.send(result.map_err(Error::from));
}
