//! The connection task's life: serve a connection, and when it drops, reconnect and resume
//! the session, until the session expires, the application closes it, or every handle to
//! the client is gone.

use super::dial::{dial, Connection, DialError, Writer};
use super::locks::LockTable;
use super::pending::{complete_user, watched_path, PendingTable, Waiter};
use super::Cmd;
use crate::error::Error;
use crate::state::{SessionCell, SessionState};
use crate::stream::{LocalStreams, StreamWaiter, WatchStream};
use crate::sync::Arc;
use crate::watch::{LocalWatches, SET_WATCHES_BATCH};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};
use ward_proto::{
    ClientMessage, CodecError, Credentials, ErrorCode, Hello, Request, Response, ServerMessage, SessionId,
    SessionSecret, Zxid,
};

/// How a connection ended.
enum End {
    /// The connection dropped; the session may still be alive.
    Lost(String),
    Expired,
    Closed,
    /// Every `Client` handle was dropped.
    Abandoned,
}

pub(crate) struct Task {
    pub addrs: Vec<String>,
    pub next_addr: usize,
    pub session_id: SessionId,
    pub secret: SessionSecret,
    pub requested_timeout_ms: u32,
    /// The negotiated timeout: heartbeats every third of it.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub tls: Option<crate::tls::Tls>,
    /// The highest zxid seen, so a reconnect never lands on a server that is behind us.
    pub last_zxid: Zxid,
    pub next_xid: u64,
    pub pending: PendingTable,
    pub watches: LocalWatches,
    /// The application's persistent watches ([`crate::Client::watch`]).
    pub streams: LocalStreams,
    /// The session state for the application ([`crate::Client::state_changes`]).
    pub state: watch::Sender<SessionState>,
    /// The same for lock guards, and whether the session may have expired without our
    /// knowing (the connection gone too long): a guard taken before that is not trusted.
    pub session: Arc<SessionCell>,
    /// When we sent the newest ping (or hello) that was answered: the leader's deadline for
    /// the session is at least this plus the timeout. Other replies prove nothing: a member
    /// cut off from the leader can still answer reads.
    pub last_ack: Instant,
    pub locks: LockTable,
    /// Writes to send again on the next connection (see [`PendingTable::connection_lost`]).
    pub resend: Vec<(u64, Request)>,
    /// Credentials the server accepted (`AddAuth`): an identity lasts as long as its
    /// connection, so every new one shows them again first.
    pub auth: Vec<(String, Credentials)>,
    pub rx: mpsc::UnboundedReceiver<Cmd>,
}

impl Task {
    pub(crate) async fn run(mut self, mut conn: Connection) {
        loop {
            let end = match self.serve(conn).await {
                End::Lost(why) => {
                    tracing::info!(session = %self.session_id, reason = %why, "disconnected; reconnecting");
                    self.resend = self.pending.connection_lost();
                    self.publish(SessionState::Disconnected);
                    match self.reconnect().await {
                        Ok(next) => {
                            conn = next;
                            continue;
                        }
                        Err(end) => end,
                    }
                }
                end => end,
            };
            return self.finish(end).await;
        }
    }

    async fn serve(&mut self, conn: Connection) -> End {
        let Connection { mut reader, mut writer, .. } = conn;
        // First, so that every request after them (resent writes too) has the identities.
        for (scheme, credentials) in self.auth.clone() {
            let request = Request::AddAuth { scheme, credentials };
            if let Err(e) = self.feed(&mut writer, request, Waiter::Internal).await {
                return End::Lost(e.to_string());
            }
        }
        for watches in self.watches.batches(SET_WATCHES_BATCH) {
            let request = Request::SetWatches { last_zxid: self.last_zxid, watches };
            if let Err(e) = self.feed(&mut writer, request, Waiter::Internal).await {
                return End::Lost(e.to_string());
            }
        }
        for watches in self.streams.rearm(SET_WATCHES_BATCH) {
            let keys = watches.iter().map(|w| (w.path.clone(), w.mode)).collect();
            let waiter = Waiter::Streams(StreamWaiter::Rearm { keys });
            if let Err(e) = self.feed(&mut writer, Request::AddWatches { watches }, waiter).await {
                return End::Lost(e.to_string());
            }
        }
        if let Err(e) = self.rearm_waits(&mut writer).await {
            return End::Lost(e.to_string());
        }
        // Writes whose replies the last connection lost go first, in their order, under their
        // own xids: the server answers one it already applied instead of applying it again.
        for (xid, request) in std::mem::take(&mut self.resend) {
            self.pending.resent(xid);
            let message = ClientMessage::Request { xid, request: Request::Resend(Box::new(request)) };
            if let Err(e) = writer.feed(message).await {
                return End::Lost(e.to_string());
            }
        }
        // Then the releases: a write sent while the lock was held must not land after it.
        if let Err(e) = self.rearm_releases(&mut writer).await {
            return End::Lost(e.to_string());
        }
        if let Err(e) = writer.flush().await {
            return End::Lost(e.to_string());
        }
        let every = self.timeout / 3;
        let mut heartbeat = tokio::time::interval_at(Instant::now() + every, every);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // ZooKeeper's read timeout: two thirds of the session timeout of silence means this
        // server is gone (or we are cut off); there is still time to reach another. The
        // timer is pushed back lazily, only when it fires, rather than on every frame.
        let silence_limit = self.timeout * 2 / 3;
        let mut last_heard = Instant::now();
        let silence = tokio::time::sleep_until(last_heard + silence_limit);
        tokio::pin!(silence);
        // Past `last_ack + 4/5 T` the session may expire without our hearing of it: give this
        // connection up (its server answers but cannot keep the session alive) so that the
        // reconnect path doubts the session and guards learn their lock may be lost.
        let unconfirmed = tokio::time::sleep_until(self.last_ack + self.timeout * 4 / 5);
        tokio::pin!(unconfirmed);
        loop {
            tokio::select! {
                cmd = self.rx.recv() => {
                    let Some(cmd) = cmd else {
                        // Nobody can use the session any more: end it now rather than let
                        // its ephemerals linger for a whole timeout.
                        let _ = self.feed(&mut writer, Request::CloseSession, Waiter::Internal).await;
                        let _ = writer.flush().await;
                        return End::Abandoned;
                    };
                    if let Err(e) = self.send_batch(&mut writer, cmd).await {
                        return End::Lost(e.to_string());
                    }
                }
                frame = reader.next() => match frame {
                    None => return End::Lost("server closed the connection".into()),
                    Some(Err(e)) => return End::Lost(e.to_string()),
                    Some(Ok(msg)) => {
                        last_heard = Instant::now();
                        if let Some(end) = self.on_message(msg) {
                            return end;
                        }
                        if let Err(e) = self.disarm_abandoned(&mut writer).await {
                            return End::Lost(e.to_string());
                        }
                    }
                },
                _ = &mut unconfirmed => {
                    let due = self.last_ack + self.timeout * 4 / 5;
                    if due <= Instant::now() {
                        return End::Lost("no heartbeat confirmed for 4/5 of the session timeout".into());
                    }
                    unconfirmed.as_mut().reset(due);
                }
                _ = &mut silence => {
                    let due = last_heard + silence_limit;
                    if due <= Instant::now() {
                        return End::Lost("server silent for 2/3 of the session timeout".into());
                    }
                    silence.as_mut().reset(due);
                }
                _ = heartbeat.tick() => {
                    let sent = match self.feed(&mut writer, Request::Ping, Waiter::Ping).await {
                        Ok(()) => writer.flush().await,
                        Err(e) => Err(e),
                    };
                    if let Err(e) = sent {
                        return End::Lost(e.to_string());
                    }
                }
            }
        }
    }

    /// Sends `first` and whatever else is already queued, then flushes once.
    async fn send_batch(&mut self, writer: &mut Writer, first: Cmd) -> Result<(), CodecError> {
        let mut next = Some(first);
        while let Some(cmd) = next {
            match cmd {
                Cmd::Request { request: Request::AddAuth { scheme, credentials }, reply, .. } => {
                    let waiter = Waiter::Auth { scheme: scheme.clone(), credentials: credentials.clone(), reply };
                    self.feed(writer, Request::AddAuth { scheme, credentials }, waiter).await?;
                }
                Cmd::Request { request, watch, reply } => {
                    let watch = watched_path(&request).map(str::to_string).zip(watch);
                    let resend = resendable(&request).then(|| request.clone());
                    self.feed(writer, request, Waiter::User { reply, watch, resend }).await?;
                }
                Cmd::Close { reply } => self.feed(writer, Request::CloseSession, Waiter::Close(reply)).await?,
                Cmd::Lock { dirs, tag, kind, data, lock_delay_ms, reply, granted } => {
                    self.locks.attempt(tag, granted);
                    let request = match lock_delay_ms {
                        Some(lock_delay_ms) => Request::LockAcquireDelayed { dirs, tag, kind, data, lock_delay_ms },
                        None => Request::LockAcquire { dirs, tag, kind, data },
                    };
                    self.feed(writer, request, Waiter::LockAcquire { tag, reply }).await?;
                }
                Cmd::Release { dirs, tag, done } => {
                    self.locks.release(tag, dirs.clone(), done);
                    self.feed(writer, Request::LockRelease { dirs, tag }, Waiter::LockRelease { tag }).await?;
                }
                Cmd::Watch { path, mode, reply } => {
                    let (tx, stream) = WatchStream::new();
                    let request = LocalStreams::arm(path.clone(), mode);
                    let waiter = StreamWaiter::Watch { key: (path, mode), tx, stream, reply };
                    self.feed(writer, request, Waiter::Streams(waiter)).await?;
                }
                Cmd::RemoveWatch { path, mode, reply } => {
                    let request = Request::RemoveWatches { path: path.clone(), mode };
                    let waiter = StreamWaiter::Remove { key: (path, mode), reply };
                    self.feed(writer, request, Waiter::Streams(waiter)).await?;
                }
            }
            next = self.rx.try_recv().ok();
        }
        writer.flush().await
    }

    async fn feed(&mut self, writer: &mut Writer, request: Request, waiter: Waiter) -> Result<(), CodecError> {
        let xid = self.next_xid;
        self.next_xid += 1;
        self.pending.insert(xid, waiter);
        writer.feed(ClientMessage::Request { xid, request }).await
    }

    fn on_message(&mut self, msg: ServerMessage) -> Option<End> {
        match msg {
            ServerMessage::Reply { xid, zxid, result } => {
                self.last_zxid = self.last_zxid.max(zxid);
                let Some((sent, waiter)) = self.pending.take(xid) else {
                    return Some(End::Lost(format!("reply to unknown xid {xid}")));
                };
                if matches!(waiter, Waiter::Ping) && result.is_ok() {
                    self.last_ack = self.last_ack.max(sent);
                }
                match waiter {
                    Waiter::User { reply, watch, .. } => complete_user(reply, watch, result, &mut self.watches),
                    Waiter::LockAcquire { tag, reply } => {
                        if let Ok(Response::Lock(state)) = &result {
                            if let Some(node) = state.nodes.first() {
                                self.locks.answered(tag, &node.path, state.held);
                            }
                        }
                        let _ = reply.send(result.map_err(Error::from));
                    }
                    Waiter::LockWait { tag } => match result {
                        Ok(Response::Lock(state)) if state.held => self.locks.grant(tag, Ok(())),
                        // Our contender is gone (deleted by someone): the attempt cannot succeed.
                        Err(ErrorCode::NoNode) => self.locks.grant(tag, Err(Error::NoNode)),
                        _ => {}
                    },
                    Waiter::LockRelease { tag } => {
                        let result = match result {
                            Ok(_) | Err(ErrorCode::SessionExpired) => Ok(()),
                            // Not applied (the session moved, the member lost its leader,
                            // or it stopped leading before logging it): the release stays
                            // pending and goes again on the next connection, which this
                            // one must give way to, as the server may keep it open.
                            Err(ErrorCode::Unavailable) => {
                                return Some(End::Lost("a lock release was not applied; sending it again".into()))
                            }
                            Err(code) => Err(code.into()),
                        };
                        self.locks.released(tag, result);
                    }
                    Waiter::Close(reply) => {
                        // Whoever sees close() return must also see the state it left.
                        self.state.send_replace(SessionState::Closed);
                        let _ = reply.send(match result {
                            Ok(_) | Err(ErrorCode::SessionExpired) => Ok(()),
                            Err(code) => Err(code.into()),
                        });
                        return Some(End::Closed);
                    }
                    Waiter::Streams(waiter) => self.streams.complete(waiter, zxid, result.map_err(Error::from)),
                    Waiter::Auth { scheme, credentials, reply } => {
                        if result.is_ok() && !self.auth.iter().any(|(s, c)| *s == scheme && *c == credentials) {
                            self.auth.push((scheme, credentials));
                        }
                        let _ = reply.send(result.map_err(Error::from));
                    }
                    Waiter::Ping | Waiter::Internal => {}
                }
                None
            }
            ServerMessage::LockGranted { path, .. } => {
                self.locks.granted_path(&path);
                None
            }
            ServerMessage::Event(event) => {
                self.last_zxid = self.last_zxid.max(event.zxid);
                self.watches.fire(&event);
                None
            }
            ServerMessage::Streamed(event) => {
                self.last_zxid = self.last_zxid.max(event.event.zxid);
                self.streams.on_event(&event);
                None
            }
            ServerMessage::SessionExpired => match self.pending.take_close() {
                // Our own close can reach the server's bookkeeping before its reply is sent.
                Some(reply) => {
                    self.state.send_replace(SessionState::Closed);
                    let _ = reply.send(Ok(()));
                    Some(End::Closed)
                }
                None => Some(End::Expired),
            },
            other => Some(End::Lost(format!("unexpected message {other:?}"))),
        }
    }

    async fn reconnect(&mut self) -> Result<Connection, End> {
        let mut delay = Duration::from_millis(20);
        // Conservatively before the server's earliest possible expiry of the session.
        let doubt = tokio::time::sleep_until(self.last_ack + self.timeout * 4 / 5);
        tokio::pin!(doubt);
        let mut doubted = false;
        loop {
            for _ in 0..self.addrs.len() {
                let addr = self.addrs[self.next_addr % self.addrs.len()].clone();
                self.next_addr += 1;
                let hello = Hello::new(Some((self.session_id, self.secret)), self.requested_timeout_ms, self.last_zxid);
                let hello_sent = Instant::now();
                // A clone (an `Arc` inside): the attempt must not borrow `self`.
                let tls = self.tls.clone();
                let attempt = dial(&addr, hello, self.connect_timeout, tls.as_ref());
                tokio::pin!(attempt);
                let result = loop {
                    tokio::select! {
                        r = &mut attempt => break r,
                        cmd = self.rx.recv() => self.while_disconnected(cmd)?,
                        _ = &mut doubt, if !doubted => doubted = self.doubt_session(),
                    }
                };
                match result {
                    Ok(conn) => {
                        self.last_ack = self.last_ack.max(hello_sent);
                        self.timeout = Duration::from_millis(u64::from(conn.welcome.timeout_ms));
                        tracing::info!(session = %self.session_id, %addr, "session resumed");
                        self.publish(SessionState::Connected);
                        return Ok(conn);
                    }
                    Err(DialError::Refused(ErrorCode::SessionExpired, _)) => return Err(End::Expired),
                    Err(DialError::Refused(code, reason)) => tracing::warn!(%addr, ?code, %reason, "refused"),
                    Err(DialError::Unreachable(why)) => tracing::debug!(reason = %why, "reconnect failed"),
                    Err(DialError::Certificate(addr, problem)) => {
                        tracing::warn!(%addr, %problem, "reconnect failed: TLS certificate refused");
                    }
                }
            }
            let pause = tokio::time::sleep(delay);
            tokio::pin!(pause);
            loop {
                tokio::select! {
                    _ = &mut pause => break,
                    cmd = self.rx.recv() => self.while_disconnected(cmd)?,
                    _ = &mut doubt, if !doubted => doubted = self.doubt_session(),
                }
            }
            delay = (delay * 2).min(Duration::from_secs(1));
        }
    }

    fn doubt_session(&mut self) -> bool {
        tracing::warn!(session = %self.session_id, "disconnected so long the session may have expired");
        // Writes kept to send again give up now: their callers learn the outcome is unknown
        // instead of waiting for a server that may never come back.
        self.resend.clear();
        self.pending.fail_all(&Error::ConnectionLoss);
        self.session.doubt();
        true
    }

    fn publish(&self, state: SessionState) {
        self.session.set(state);
        self.state.send_replace(state);
    }

    /// After a reconnect: ask again about lock attempts whose grant may have been missed.
    async fn rearm_waits(&mut self, writer: &mut Writer) -> Result<(), CodecError> {
        for (tag, path) in self.locks.waiting_paths() {
            self.feed(writer, Request::LockWait { path }, Waiter::LockWait { tag }).await?;
        }
        Ok(())
    }

    /// Re-sends the releases the server has not acknowledged.
    async fn rearm_releases(&mut self, writer: &mut Writer) -> Result<(), CodecError> {
        for (tag, dirs) in self.locks.pending_releases() {
            self.feed(writer, Request::LockRelease { dirs, tag }, Waiter::LockRelease { tag }).await?;
        }
        Ok(())
    }

    /// Removes the server's watches whose every stream was dropped.
    async fn disarm_abandoned(&mut self, writer: &mut Writer) -> Result<(), CodecError> {
        let abandoned = self.streams.take_abandoned();
        if abandoned.is_empty() {
            return Ok(());
        }
        for (path, mode) in abandoned {
            self.feed(writer, Request::RemoveWatches { path, mode }, Waiter::Internal).await?;
        }
        writer.flush().await
    }

    /// Requests made while disconnected fail at once, as ZooKeeper's do.
    fn while_disconnected(&mut self, cmd: Option<Cmd>) -> Result<(), End> {
        match cmd {
            None => Err(End::Abandoned),
            Some(Cmd::Request { reply, .. }) => {
                let _ = reply.send(Err(Error::ConnectionLoss));
                Ok(())
            }
            Some(Cmd::Close { reply }) => {
                // The server cannot hear us; the session ends by expiry instead.
                self.state.send_replace(SessionState::Closed);
                let _ = reply.send(Err(Error::ConnectionLoss));
                Err(End::Closed)
            }
            Some(Cmd::Lock { reply, .. }) => {
                let _ = reply.send(Err(Error::ConnectionLoss));
                Ok(())
            }
            Some(Cmd::Watch { reply, .. }) => {
                let _ = reply.send(Err(Error::ConnectionLoss));
                Ok(())
            }
            Some(Cmd::RemoveWatch { reply, .. }) => {
                let _ = reply.send(Err(Error::ConnectionLoss));
                Ok(())
            }
            Some(Cmd::Release { dirs, tag, done }) => {
                self.locks.release(tag, dirs, done);
                Ok(())
            }
        }
    }

    /// The session is over: say so to everyone waiting now or later.
    async fn finish(mut self, end: End) {
        let Some(error) = self.end_session(end) else { return };
        while let Some(cmd) = self.rx.recv().await {
            after_end(cmd, &error);
        }
    }

    /// Publishes the end of the session and fails everything in flight with the error it
    /// gives every later command; `None` if the task just stops (the session is abandoned).
    fn end_session(&mut self, end: End) -> Option<Error> {
        let (state, error) = match end {
            End::Expired => (SessionState::Expired, Error::SessionExpired),
            End::Closed => (SessionState::Closed, Error::Closed),
            End::Abandoned | End::Lost(_) => return None,
        };
        tracing::info!(session = %self.session_id, ?state, "session over");
        self.publish(state);
        self.pending.fail_all(&error);
        self.watches.fail_all(&error);
        self.streams.fail_all(&error);
        self.locks.session_over(&error);
        Some(error)
    }
}

/// Answers a command that comes after the session ended with `error`.
fn after_end(cmd: Cmd, error: &Error) {
    match cmd {
        Cmd::Request { reply, .. } | Cmd::Lock { reply, .. } => {
            let _ = reply.send(Err(error.clone()));
        }
        Cmd::RemoveWatch { reply, .. } => {
            let _ = reply.send(Err(error.clone()));
        }
        Cmd::Watch { reply, .. } => {
            let _ = reply.send(Err(error.clone()));
        }
        Cmd::Close { reply } => {
            let _ = reply.send(Ok(()));
        }
        // The session's nodes are gone with it: nothing left to release.
        Cmd::Release { done, .. } => {
            if let Some(done) = done {
                let _ = done.send(Ok(()));
            }
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // However the task ends (even by a panic), guards must not go on trusting a session
        // nobody looks after any more. After `finish` the state is already terminal.
        self.session.set(SessionState::Closed);
    }
}

// The loom models of the connection task's completions (`--cfg ward_loom`).
#[cfg(all(test, ward_loom))]
#[path = "loom_tests.rs"]
mod loom_tests;

/// Plain writes are sent again after a lost connection; lock requests have their own retry
/// (by tag), and reads are simply failed.
fn resendable(request: &Request) -> bool {
    matches!(
        request,
        Request::Create { .. }
            | Request::Delete { .. }
            | Request::SetData { .. }
            | Request::Multi(_)
            | Request::CreateWithAcl { .. }
            | Request::SetAcl { .. }
    )
}
