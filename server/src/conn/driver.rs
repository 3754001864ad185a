//! The one reader every listener runs: it owns the ordering protocol of a connection's
//! requests, so no listener can get it wrong. A listener ([`Protocol`]) only decodes frames
//! into [`Decoded`] requests and says how its answers look; the driver does the rest, in
//! this order for each request:
//!
//! * a write is numbered (`ConnOrder::submit_write`) and submitted to the log as it arrives,
//!   so the session's writes are applied in the order sent (G2);
//! * anything answered from the state (a read, an auth, an answer decided at decoding) first
//!   waits until the session's earlier writes are applied (`caught_up`), then for what the
//!   request needs beyond them (`prepare`: a barrier, a confirmed contact), then looks at the
//!   state (`view`), which records the read's fence: the events queued before the look go
//!   out before its reply, and no later one (G6);
//! * every item goes to the writer in arrival order (`queue`), whose bound on outbound bytes
//!   holds the reader back.

use super::park::Idle;
use super::session_conn::SessionConn;
use super::writer::{Item, ItemTx, Wire};
use crate::metrics::Stamp;
use crate::state::StateMachine;
use std::future::Future;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use ward_proto::{ErrorCode, Request, Response, WatchEvent};

type Tag<P> = <<P as Protocol>::Wire as Wire>::Tag;
type Answer<P> = <<P as Protocol>::Wire as Wire>::Answer;

/// One request as a listener decoded it, in the terms the driver orders.
pub(crate) enum Decoded<P: Protocol + ?Sized> {
    /// Goes through the log. `dedup_xid`: the id under which a resend is recognised (0: the
    /// protocol never resends); `nulls`: the ops (indices into a multi, 0 for a lone op) whose
    /// data the client sent as null, which only ZooKeeper's protocol can say.
    Write { tag: Tag<P>, request: Request, dedup_xid: u64, nulls: Vec<u32>, closes_session: bool },
    /// Answered from the state ([`Protocol::read`]).
    Read { tag: Tag<P>, op: P::Read },
    /// Adds an identity to the connection; the requests after it carry it.
    Auth { tag: Tag<P>, scheme: String, credentials: Vec<u8> },
    /// Answered with what the listener decided, in order, touching nothing.
    Answer { tag: Tag<P>, answer: Answer<P> },
}

/// What a listener's protocol adds to the driver: how frames become requests and what its
/// answers look like.
pub(crate) trait Protocol: Send {
    type Wire: Wire;
    /// A read as the protocol states it.
    type Read: Send;

    /// The next request, stamped when its frame was decoded; `None` when the connection
    /// ends (closed, failed, or bad input, logged here). Waiting for a frame with none of one
    /// buffered, it marks itself [`Idle::reader`]; it may be given up there and called again
    /// once the socket is readable, so it keeps nothing of its own between frames.
    fn next<'a>(
        &'a mut self,
        ctx: &'a SessionConn,
        idle: &'a Idle,
    ) -> impl Future<Output = Option<(Stamp, Decoded<Self>)>> + Send + 'a;

    /// The request a read must wait for first ([`SessionConn::prepare`]), if it may need to.
    fn waits_for(op: &Self::Read) -> Option<&Request>;

    /// The answer to a read whose wait answered instead (a refused barrier, a membership
    /// list); `None` closes the connection.
    fn prepared(ctx: &SessionConn, op: &Self::Read, answer: Result<Response, ErrorCode>) -> Option<Answer<Self>>;

    /// Answers a read in a view of the state; `events` gets the watch events it fires.
    fn read(ctx: &SessionConn, state: &StateMachine, op: Self::Read, events: &mut Vec<WatchEvent>) -> Answer<Self>;

    /// The answer to an auth request, and whether the connection closes after it.
    fn authed(result: Result<(), ErrorCode>) -> (Answer<Self>, bool);

    /// The connection parks: gives back what the reader need not keep meanwhile (an empty
    /// read buffer), and the plain TCP socket it reads, to wait on; `None` under TLS, where
    /// the reader never marks itself idle.
    fn park(&mut self) -> Option<&TcpStream>;
}

/// Reads requests and queues their items in order until the connection ends.
pub(crate) async fn drive<P: Protocol>(
    ctx: &SessionConn,
    protocol: &mut P,
    queue: ItemTx<P::Wire>,
    cancel: &CancellationToken,
    idle: &Idle,
) {
    loop {
        let next = tokio::select! {
            _ = cancel.cancelled() => return,
            next = protocol.next(ctx, idle) => next,
        };
        let Some((stamp, decoded)) = next else { return };
        ctx.server.local.sessions.touch(ctx.session);
        let Some((item, closes)) = order::<P>(ctx, decoded, cancel).await else { return };
        if ctx.queue(&queue, stamp, item).await.is_err() || closes {
            return;
        }
    }
}

/// The item for one request, and whether the connection ends after it; `None` ends it now.
async fn order<P: Protocol>(
    ctx: &SessionConn,
    decoded: Decoded<P>,
    cancel: &CancellationToken,
) -> Option<(Item<P::Wire>, bool)> {
    let (tag, op) = match decoded {
        Decoded::Write { tag, request, dedup_xid, nulls, closes_session } => {
            let number = ctx.next_write();
            let item = match ctx.submit(dedup_xid, request, nulls) {
                Ok(pending) => Item::Write { tag, number, pending, closes_session },
                Err(code) => Item::Refused { tag, number, code },
            };
            return Some((item, closes_session));
        }
        Decoded::Read { tag, op } => (tag, op),
        Decoded::Auth { tag, scheme, credentials } => {
            // In order: the writes before it were sent with the identities they had, every
            // request after it carries the new one; its answer comes after theirs, as a read's.
            if !ctx.caught_up(cancel).await {
                return None;
            }
            let (answer, closes) = P::authed(ctx.add_auth(&scheme, &credentials));
            return Some((answered(ctx, tag, answer), closes));
        }
        Decoded::Answer { tag, answer } => {
            // After the session's earlier writes, as a read (G2, G6).
            if !ctx.caught_up(cancel).await {
                return None;
            }
            return Some((answered(ctx, tag, answer), false));
        }
    };
    // FIFO per session: the writes sent before this read are applied first.
    if !ctx.caught_up(cancel).await {
        return None;
    }
    if let Some(request) = P::waits_for(&op) {
        let prepared = tokio::select! {
            _ = cancel.cancelled() => return None,
            prepared = ctx.prepare(request) => prepared,
        };
        if let Some(answer) = prepared {
            return Some((answered(ctx, tag, P::prepared(ctx, &op, answer)?), false));
        }
    }
    let mut events = Vec::new();
    let (zxid, events_before, answer) = ctx.view(|state| P::read(ctx, state, op, &mut events));
    Some((Item::Read { tag, zxid, events_before, events, answer }, false))
}

/// An answer decided without reading, placed as a read's: its fence taken now.
fn answered<W: Wire>(ctx: &SessionConn, tag: W::Tag, answer: W::Answer) -> Item<W> {
    let (zxid, events_before, answer) = ctx.view(|_| answer);
    Item::Read { tag, zxid, events_before, events: Vec::new(), answer }
}
