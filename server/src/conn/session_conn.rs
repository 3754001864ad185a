//! A session's connection, shared by every listener: the driver ([`super::driver`]) submits
//! writes as they arrive and runs a read only once the session's earlier writes are applied;
//! the writer ([`super::writer`]) completes items in arrival order. The rules, and the one
//! value that keeps them, are in [`super::ordering`]; the reader and writer reach it through
//! the connection's [`Outbox`](crate::conn::outbox::Outbox). Both protocols (Ward's and
//! ZooKeeper's) run their sessions through [`SessionConn::run`], so they keep the same
//! guarantees.

use super::driver::{self, Protocol};
use super::park::{self, Idle, Stopped};
use super::queue;
use super::types::Attached;
use super::writer::{Item, ItemTx, Queued, Shrink, Who, Wire, WriterLoop};
use crate::acl::identity::SuperDigest;
use crate::acl::Identity;
use crate::command::{Command, CommandOp};
use crate::conn::outbox::{OutboundTx, OutboxRx};
use crate::conn::{ConnId, Delivery};
use crate::metrics::Listener;
use crate::metrics::Stamp;
use crate::prep::prep;
use crate::replication::{MemberChange, Pending, Rejected};
use crate::state::StateMachine;
use crate::{now_ms, Server};
use futures_util::future::join;
use futures_util::Sink;
use std::fmt::Display;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;
use ward_proto::{ErrorCode, Request, Response, SessionId, Zxid};

/// A connection bound to a session, after its handshake.
pub(crate) struct SessionConn {
    pub server: Arc<Server>,
    pub peer: SocketAddr,
    pub conn: ConnId,
    pub session: SessionId,
    /// The zxid at which the session attached to this connection (0: not fenced); see
    /// [`Attached`].
    epoch: Zxid,
    pub outbox: OutboundTx,
    /// Who the connection is ([`Identity`]): checked by its reads, carried by its writes.
    /// Only the reader uses it; a std mutex because the reader holds it across no await.
    identity: Mutex<Identity>,
}

impl SessionConn {
    /// A connection of `session`, with `identity`: its peer address, and under TLS the
    /// subject of its client certificate ([`Identity::for_connection`]).
    pub(crate) fn new(
        server: Arc<Server>,
        peer: SocketAddr,
        conn: ConnId,
        attached: Attached,
        outbox: OutboundTx,
        identity: Identity,
    ) -> Self {
        let Attached { session, epoch } = attached;
        let identity = Mutex::new(identity);
        SessionConn { server, peer, conn, session, epoch, outbox, identity }
    }

    /// The connection's identities, for a read to check (hold it only while reading).
    pub(crate) fn identity(&self) -> std::sync::MutexGuard<'_, Identity> {
        // A list of ids cannot be left half-updated by a panic.
        self.identity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `AddAuth`: adds what `scheme` and `credentials` prove to the connection's identities,
    /// or fails with `AuthFailed` ([`Identity::add_auth`]). Later requests carry it; earlier
    /// ones were submitted or answered with the identities they had.
    pub(crate) fn add_auth(&self, scheme: &str, credentials: &[u8]) -> Result<(), ErrorCode> {
        let super_digest = self.server.config.super_digest.as_ref().map(SuperDigest::as_str);
        let result = self.identity().add_auth(scheme, credentials, super_digest);
        match result {
            Ok(()) => tracing::info!(peer = %self.peer, session = %self.session, scheme, "authenticated"),
            Err(_) => tracing::warn!(peer = %self.peer, session = %self.session, scheme, "authentication failed"),
        }
        result
    }

    /// Runs `f` in a view of the state, recording the last zxid and the read's fence, how
    /// many messages were queued on the connection then: the writer sends those before the
    /// read's reply (G6), and no later one. The result must be queued as an `Item::Read`.
    pub(crate) fn view<R>(&self, f: impl FnOnce(&StateMachine) -> R) -> (Zxid, u64, R) {
        self.outbox.view(&self.server.core, f)
    }

    /// Who the connection is, for its writer.
    fn who(&self) -> Who<'_> {
        Who { server: &self.server, peer: self.peer, session: self.session }
    }

    /// Numbers the next write of the connection (`ConnOrder::submit_write`).
    pub(crate) fn next_write(&self) -> u64 {
        self.outbox.submit_write()
    }

    /// Waits until every write this connection submitted so far is applied, so a read sees
    /// exactly the session's earlier writes; false if the writer is gone or `cancel` fires.
    /// Every answer that looks at the state ([`view`](Self::view)) waits for this first:
    /// its fence and its zxid must come after the session's earlier writes (G2, G6).
    pub(crate) async fn caught_up(&self, cancel: &CancellationToken) -> bool {
        tokio::select! {
            _ = cancel.cancelled() => false,
            r = self.outbox.caught_up() => r,
        }
    }

    /// Preps and submits a write of this session, unless the connection no longer owns it.
    /// `nulls`: the ops whose data the client sent as null (`CommandOp::NullData`).
    pub(crate) fn submit(&self, xid: u64, request: Request, nulls: Vec<u32>) -> Result<Pending, ErrorCode> {
        if !self.server.local.sessions.is_owner(self.session, self.conn) {
            // A late frame on this connection must not be ordered after what a newer one
            // sends. If the session still lives (it moved, or this member gave its clients up),
            // the write was simply not applied: saying "expired" would make a client take a
            // lock release for done while its node stays.
            let code = if self.server.local.sessions.is_live(self.session) {
                ErrorCode::Unavailable
            } else {
                ErrorCode::SessionExpired
            };
            return Err(code);
        }
        let mut op = prep(request, self.server.config.max_data_len)?;
        if !nulls.is_empty() {
            op = CommandOp::NullData { nulls, op: Box::new(op) };
        }
        let waits = self.before_logging(&op)?;
        // Apply checks ACLs against the identities the write was sent with (G24).
        let mut op = CommandOp::As { ids: self.identity().ids().to_vec(), op: Box::new(op) };
        if self.epoch != 0 {
            op = CommandOp::Fenced { epoch: self.epoch, op: Box::new(op) };
        }
        let cmd = Command { time_ms: now_ms(), session: self.session, xid, op };
        Ok(match waits {
            true => self.server.replication.submit_waiting(cmd),
            false => self.server.replication.submit(cmd),
        })
    }

    /// For a lock acquire, `lock::before_logging`: refused, or whether it will queue behind
    /// another session.
    fn before_logging(&self, op: &CommandOp) -> Result<bool, ErrorCode> {
        match op {
            CommandOp::LockAcquire { dirs, kind, .. } | CommandOp::LockAcquireDelayed { dirs, kind, .. } => {
                self.server.core.read(|state| crate::lock::before_logging(state.tree(), self.session, dirs, *kind))
            }
            _ => Ok(false),
        }
    }

    /// What a read needs beyond the session's own writes, before it looks at the state: a
    /// `sync` or a fence check waits for this server to have applied every write committed
    /// anywhere before it (a linearizable read follows); a ping waits for its heartbeat to be
    /// known to count at the leader (R3: a pong promises the session outlives the ping's send time by a
    /// timeout). Membership requests are answered here, from the log, not from the state.
    /// `None`: go on and read; `Some`: this is the answer.
    pub(crate) async fn prepare(&self, request: &Request) -> Option<Result<Response, ErrorCode>> {
        let log = &self.server.replication;
        let waited = match request {
            // A fence check answers for the lock as it stands now, not as this member last
            // applied it (a follower may lag, or be cut off, behind a newer holder).
            Request::Sync { .. } | Request::CheckFence { .. } => log.barrier().await,
            Request::Ping => match log.confirm_contact().await {
                // Not a pong for a session the leader refused at that round, or that this
                // member is expiring: the client must not count it alive for longer.
                Ok(()) if !self.server.local.sessions.may_confirm(self.session) => {
                    return Some(Err(ErrorCode::Unavailable));
                }
                waited => waited,
            },
            Request::Members => {
                let list = log.members().await.map(|list| list.members.into_iter().map(|m| m.info).collect());
                return Some(list.map(Response::Members).map_err(|r| self.refused(r)));
            }
            Request::MemberList => {
                return Some(log.members().await.map(Response::MemberList).map_err(|r| self.refused(r)))
            }
            Request::AddMember { id, addr } => {
                let change = MemberChange::Add { id: *id, addr: addr.clone() };
                return Some(
                    log.change_members(change).await.map(|()| Response::MembersChanged).map_err(|r| self.refused(r)),
                );
            }
            Request::AddObserver { id, addr } => {
                let change = MemberChange::AddObserver { id: *id, addr: addr.clone() };
                return Some(
                    log.change_members(change).await.map(|()| Response::MembersChanged).map_err(|r| self.refused(r)),
                );
            }
            Request::RemoveMember { id } => {
                let change = MemberChange::Remove { id: *id };
                return Some(
                    log.change_members(change).await.map(|()| Response::MembersChanged).map_err(|r| self.refused(r)),
                );
            }
            Request::TransferLeader { to } => {
                let moved = log.transfer_leader(*to).await;
                return Some(moved.map(|leader| Response::LeaderTransferred { leader }).map_err(|r| self.refused(r)));
            }
            _ => return None,
        };
        waited.err().map(|r| Err(self.refused(r)))
    }

    /// Hands `item` to the writer. A read's reply, and the events it fired, count against
    /// the connection's outbound bound until written; at the bound this then waits before
    /// the reader reads another request (back-pressure, `super::outbox`). Err: the writer is
    /// gone.
    pub(crate) fn queue<'a, W: Wire>(
        &'a self,
        queue: &'a ItemTx<W>,
        stamp: Stamp,
        item: Item<W>,
    ) -> impl Future<Output = Result<(), queue::Closed>> + 'a {
        if let Item::Read { events, answer, .. } = &item {
            let events: u64 = events.iter().map(crate::conn::outbox::event_weight).sum();
            self.outbox.charge(W::answer_weight(answer) + events);
        }
        // Boxed before the future is made: an async fn would keep the item itself in its
        // state, and so make every reader's future (idle or not) that much larger.
        let queued = Box::new(Queued { stamp, item });
        async move {
            queue.send(queued).await?;
            self.outbox.room().await;
            Ok(())
        }
    }

    fn refused(&self, rejected: Rejected) -> ErrorCode {
        tracing::info!(session = %self.session, %rejected, "request not served");
        ErrorCode::Unavailable
    }

    /// Serves the session: the driver reads `protocol`'s requests into items
    /// ([`driver::drive`]), the shared writer completes them in order on `sink`. Returns when either side ends; the connection's watches go
    /// and the session stays alive until its deadline.
    ///
    /// Reader and writer run as one boxed future, given up whenever both wait with nothing
    /// to do and built again when the socket or the outbox has something (`conn/park.rs`):
    /// an idle connection keeps only what is built here.
    pub(crate) fn run<W, S, P>(self, out_rx: OutboxRx, wire: W, sink: S, mut protocol: P) -> impl Future<Output = ()>
    where
        W: Wire,
        S: Sink<W::Msg> + Shrink + Unpin + Send,
        S::Error: Display,
        P: Protocol<Wire = W>,
    {
        let server = &self.server;
        let delivery = match W::LISTENER {
            Listener::Ward => Delivery::Streams,
            Listener::ZooKeeper => Delivery::OneEvent,
        };
        server.local.watches.add_conn(self.conn, self.outbox.clone(), delivery);
        let mut writer = WriterLoop { wire, writer: sink, out: out_rx };
        async move {
            let ctx = &self;
            let server = &ctx.server;
            let idle = Idle::default();
            loop {
                // Made afresh: a connection parks only with its queue empty.
                let (queue_tx, queue_rx) = queue::bounded(server.config.max_inflight_per_conn);
                // The connection's own token (a child of the listener's), kept by its outbox
                // and looked up here rather than held while parked: the writer's end
                // cancels the reader through it.
                let cancel = ctx.outbox.token();
                let reader = driver::drive(ctx, &mut protocol, queue_tx, cancel, &idle);
                let writes = writer.serve(ctx.who(), queue_rx, cancel, &idle);
                let mut active = Box::pin(join(reader, writes));
                let stopped = park::until_idle(active.as_mut(), &idle).await;
                drop(active);
                if stopped == Stopped::Ended {
                    break;
                }
                park::parked(protocol.park(), &writer.out, &server.local.metrics.parked).await;
            }
            writer.finish(ctx.who());
            server.local.watches.remove_conn(ctx.conn);
            server.local.sessions.detach(ctx.session, ctx.conn);
            tracing::debug!(peer = %ctx.peer, session = %ctx.session, "connection closed");
        }
    }
}
