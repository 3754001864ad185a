//! One client connection: a reader that turns frames into ordered work items, and a writer
//! (`writer.rs`) that completes them in order and interleaves server-initiated messages.
//!
//! Order is the point. Requests of a session are handled in the order sent, as ZooKeeper
//! promises (G2): the reader submits writes to the log as they arrive, and runs a read only
//! once every write sent before it has been applied, and before it reads the next frame,
//! so a read sees exactly the session's earlier writes. The reader also records how many
//! events were queued on the connection when the read looked at the state; the writer sends
//! at least those before the read's reply, so an event for any change the read can see goes
//! out first (G6).

use super::handshake;
use super::writer::{Item, WriterLoop};
use crate::command::Command;
use crate::outbox::{OutboundTx, Outbox};
use crate::prep::prep;
use crate::read::Reader as ReadCtx;
use crate::watch::ConnId;
use crate::{now_ms, Server};
use futures_util::StreamExt;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use ward_proto::{ClientMessage, CodecError, ErrorCode, FrameCodec, Request, ServerMessage, SessionId};

pub type Reader = FramedRead<OwnedReadHalf, FrameCodec<ClientMessage, ServerMessage>>;
pub type Writer = FramedWrite<OwnedWriteHalf, FrameCodec<ClientMessage, ServerMessage>>;

pub async fn serve(server: Arc<Server>, stream: TcpStream, peer: SocketAddr, conn: ConnId, cancel: CancellationToken) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
    }
    let (r, w) = stream.into_split();
    let max = server.config.max_frame_len();
    let mut reader = FramedRead::new(r, FrameCodec::new(max));
    let mut writer = FramedWrite::new(w, FrameCodec::new(max));
    let (outbox, out_rx) = Outbox::channel();

    let hello = handshake::run(&server, &mut reader, &mut writer, peer, conn, &outbox);
    let session = tokio::select! {
        _ = cancel.cancelled() => return,
        r = tokio::time::timeout(server.config.handshake_timeout, hello) => match r {
            Ok(Some(session)) => session,
            Ok(None) => return,
            Err(_) => {
                tracing::info!(%peer, "closing connection: no hello in time");
                return;
            }
        },
    };
    server.core.watches.add_conn(conn, outbox.clone());
    let (queue_tx, queue_rx) = mpsc::channel(server.config.max_inflight_per_conn);
    let (applied_tx, applied_rx) = watch::channel(0u64);
    let conn_cancel = cancel.child_token();
    let ctx = Conn { server: server.clone(), peer, conn, session, outbox };
    let writer_loop =
        WriterLoop { server: server.clone(), peer, session, writer, queue: queue_rx, out: out_rx, taken: 0 };
    tokio::join!(
        ctx.read_loop(reader, queue_tx, applied_rx, conn_cancel.clone()),
        writer_loop.run(applied_tx, conn_cancel),
    );
    server.core.watches.remove_conn(conn);
    server.core.sessions.detach(session, conn);
    tracing::debug!(%peer, %session, "connection closed");
}

struct Conn {
    server: Arc<Server>,
    peer: SocketAddr,
    conn: ConnId,
    session: SessionId,
    outbox: OutboundTx,
}

impl Conn {
    async fn read_loop(
        &self,
        mut reader: Reader,
        queue: mpsc::Sender<Item>,
        mut applied: watch::Receiver<u64>,
        cancel: CancellationToken,
    ) {
        // Writes submitted so far; the writer counts those applied in `applied`.
        let mut submitted = 0u64;
        loop {
            let frame = tokio::select! {
                _ = cancel.cancelled() => return,
                frame = reader.next() => frame,
            };
            let (xid, request) = match frame {
                None => return,
                Some(Ok(ClientMessage::Request { xid, request })) => (xid, request),
                Some(Ok(ClientMessage::Hello(_))) => return self.drop_peer("a second hello"),
                Some(Err(CodecError::Io(error))) => {
                    tracing::debug!(peer = %self.peer, %error, "connection read failed");
                    return;
                }
                Some(Err(error)) => return self.drop_peer(&error.to_string()),
            };
            self.server.core.sessions.touch(self.session);
            let closes_session = matches!(request, Request::CloseSession);
            let item = if request.is_write() {
                submitted += 1;
                self.write(xid, request, submitted, closes_session)
            } else {
                // FIFO per session: the writes sent before this read are applied first.
                let caught_up = tokio::select! {
                    _ = cancel.cancelled() => return,
                    r = applied.wait_for(|&n| n >= submitted) => r.is_ok(),
                };
                if !caught_up {
                    return;
                }
                self.read(xid, request)
            };
            if queue.send(item).await.is_err() || closes_session {
                return;
            }
        }
    }

    fn drop_peer(&self, why: &str) {
        tracing::warn!(peer = %self.peer, session = %self.session, reason = why, "closing connection: bad input");
    }

    fn read(&self, xid: u64, request: Request) -> Item {
        let ctx = ReadCtx { core: &self.server.core, conn: self.conn, session: self.session };
        let mut events = Vec::new();
        let (zxid, events_before, result) = self.server.core.read(|state| {
            let events_before = self.outbox.queued();
            (state.last_zxid(), events_before, ctx.execute(state, request, &mut events))
        });
        Item::Read { xid, zxid, events_before, events, result }
    }

    fn write(&self, xid: u64, request: Request, number: u64, closes_session: bool) -> Item {
        if !self.server.core.sessions.is_owner(self.session, self.conn) {
            // The session moved to a newer connection (or ended): a late frame on this one
            // must not be ordered after what the new connection sends.
            return Item::Refused { xid, number, code: ErrorCode::SessionExpired };
        }
        match prep(request, self.server.config.max_data_len) {
            Ok(op) => {
                let cmd = Command { time_ms: now_ms(), session: self.session, xid, op };
                Item::Write { xid, number, pending: self.server.log.submit(cmd), closes_session }
            }
            Err(code) => Item::Refused { xid, number, code },
        }
    }
}
