//! The calling side of the peer link: one lazily opened connection per (member, channel),
//! shared by every call to that member on that channel, with calls multiplexed by id.
//!
//! A call's failure says whether the request may have reached the member: a connection that
//! could not be opened ([`PeerError::Unreachable`]) means it did not, while a connection lost
//! or a reply not received in time after sending ([`PeerError::Lost`]) leaves it unknown.
//! Forwarded writes depend on that difference.

use super::level::{AnswerIn, HelloOut, LEVEL};
use super::wire::PEER_VERSION;
use super::wire::{Channel, Envelope, HelloAnswer, PeerHello, PeerRequest, PeerResponse, MAX_PEER_FRAME, PEER_MAGIC};
use crate::raft::types::NodeId;
use crate::tls::stream::{ReadHalf, WriteHalf};
use crate::tls::PeerTls;
use futures_util::{SinkExt, StreamExt};
use rustls_pki_types::ServerName;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use ward_proto::FrameCodec;

/// Opening a connection (TCP and the hello) may take this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PeerError {
    /// Not sent: no connection could be opened, or the member refused the hello.
    #[error("member {0} unreachable: {1}")]
    Unreachable(NodeId, String),
    /// Sent (or being sent) when the connection failed or the time ran out: the member may
    /// or may not have acted on it.
    #[error("no reply from member {0}: {1}")]
    Lost(NodeId, String),
}

/// Who we are, as the hello says it, and the certificate that proves it when the link has
/// mutual TLS.
#[derive(Clone, Debug)]
pub(crate) struct Identity {
    pub ensemble: Arc<str>,
    pub me: NodeId,
    /// `None`: plain TCP.
    pub tls: Option<Arc<PeerTls>>,
    /// The release level each member said in its hello or its answer to ours.
    pub levels: super::level::Levels,
}

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<PeerResponse>>>>;

/// An open connection: requests go to its writer task; replies find their caller by id.
struct Conn {
    addr: String,
    requests: mpsc::UnboundedSender<Envelope<PeerRequest>>,
    waiters: Waiters,
    closed: CancellationToken,
}

/// Calls to one member on one channel.
pub(crate) struct PeerClient {
    identity: Identity,
    target: NodeId,
    channel: Channel,
    next_id: AtomicU64,
    /// A tokio mutex: held across connecting, so that concurrent callers share one attempt.
    conn: tokio::sync::Mutex<Option<Conn>>,
}

impl PeerClient {
    pub(crate) fn new(identity: Identity, target: NodeId, channel: Channel) -> Self {
        PeerClient { identity, target, channel, next_id: AtomicU64::new(1), conn: tokio::sync::Mutex::new(None) }
    }

    /// Sends `request` to the member at `addr` and waits up to `timeout` for its reply.
    pub(crate) async fn call(
        &self,
        addr: &str,
        request: PeerRequest,
        timeout: Duration,
    ) -> Result<PeerResponse, PeerError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut slot = self.conn.lock().await;
            let stale = slot.as_ref().is_none_or(|c| c.closed.is_cancelled() || c.addr != addr);
            if stale {
                if let Some(old) = slot.take() {
                    old.closed.cancel();
                }
                let opened = tokio::time::timeout(CONNECT_TIMEOUT.min(timeout), self.open(addr)).await;
                let why = match opened {
                    Ok(Ok(conn)) => Ok(conn),
                    Ok(Err(why)) => Err(why),
                    Err(_) => Err("connect timed out".to_string()),
                };
                let conn = why.map_err(|why| {
                    // Down, or restarting: perhaps on another release. Its level is not
                    // known again until it answers a hello.
                    self.identity.levels.forget(self.target);
                    PeerError::Unreachable(self.target, why)
                })?;
                *slot = Some(conn);
            }
            let Some(conn) = slot.as_ref() else {
                return Err(PeerError::Unreachable(self.target, "no connection".into()));
            };
            conn.waiters.lock().unwrap_or_else(PoisonError::into_inner).insert(id, tx);
            if conn.requests.send(Envelope { id, body: request }).is_err() {
                conn.waiters.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                return Err(PeerError::Unreachable(self.target, "connection closed".into()));
            }
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(PeerError::Lost(self.target, "connection lost".into())),
            Err(_) => {
                self.forget(id).await;
                Err(PeerError::Lost(self.target, format!("no reply within {timeout:?}")))
            }
        }
    }

    async fn forget(&self, id: u64) {
        if let Some(conn) = self.conn.lock().await.as_ref() {
            conn.waiters.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        }
    }

    /// The token cancelled when the connection open now closes, if one is open (and not
    /// being opened: nobody waits here for a connect).
    pub(crate) fn open_connection(&self) -> Option<CancellationToken> {
        let slot = self.conn.try_lock().ok()?;
        slot.as_ref().filter(|c| !c.closed.is_cancelled()).map(|c| c.closed.clone())
    }

    async fn open(&self, addr: &str) -> Result<Conn, String> {
        let stream = TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (r, w) = match &self.identity.tls {
            None => crate::tls::stream::plain(stream),
            Some(tls) => {
                let name = server_name(addr)?;
                let connector = tokio_rustls::TlsConnector::from(tls.current().client.clone());
                let stream = connector.connect(name, stream).await.map_err(|e| format!("TLS with {addr}: {e}"))?;
                crate::tls::stream::tls(stream)
            }
        };
        let mut hello_out = FramedWrite::new(w, FrameCodec::<AnswerIn, HelloOut>::new(MAX_PEER_FRAME));
        let mut hello_in = FramedRead::new(r, FrameCodec::<AnswerIn, HelloOut>::new(4096));
        let hello = PeerHello {
            magic: PEER_MAGIC,
            version: PEER_VERSION,
            ensemble: self.identity.ensemble.to_string(),
            from: self.identity.me,
            to: self.target,
            channel: self.channel,
        };
        hello_out.send(HelloOut(hello, LEVEL)).await.map_err(|e| format!("hello to {addr}: {e}"))?;
        match hello_in.next().await {
            Some(Ok(AnswerIn(HelloAnswer::Accepted, level))) => self.identity.levels.record(self.target, level),
            Some(Ok(AnswerIn(HelloAnswer::Refused(why), _))) => {
                // A member of another release says "peer protocol N here, M there".
                let theirs = why.strip_prefix("peer protocol ").and_then(|r| r.split(' ').next()?.parse().ok());
                if let Some(theirs) = theirs.filter(|v| *v != PEER_VERSION) {
                    let told = super::wire::version_mismatch(PEER_VERSION, theirs);
                    tracing::error!(member = self.target, %addr, reason = %why, "{told}");
                }
                return Err(format!("{addr} refused: {why}"));
            }
            Some(Err(e)) => return Err(format!("hello answer from {addr}: {e}")),
            None => return Err(format!("{addr} closed the connection during the hello")),
        }
        // The hello codecs hand over their sockets and whatever they buffered (nothing can
        // follow the answer before we send a request).
        let reader = FramedRead::new(
            hello_in.into_inner(),
            FrameCodec::<Envelope<PeerResponse>, Envelope<PeerRequest>>::new(MAX_PEER_FRAME),
        );
        let writer = FramedWrite::new(
            hello_out.into_inner(),
            FrameCodec::<Envelope<PeerResponse>, Envelope<PeerRequest>>::new(MAX_PEER_FRAME),
        );
        let (requests, rx) = mpsc::unbounded_channel();
        let waiters = Waiters::default();
        let closed = CancellationToken::new();
        tokio::spawn(pump(reader, writer, rx, waiters.clone(), closed.clone()));
        Ok(Conn { addr: addr.to_string(), requests, waiters, closed })
    }
}

/// The name a member's peer certificate must carry: the host of the address it is reached
/// at (an IP address or a DNS name).
fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _port)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| format!("{addr}: no name to check its certificate against: {e}"))
}

type Reader = FramedRead<ReadHalf, FrameCodec<Envelope<PeerResponse>, Envelope<PeerRequest>>>;
type Writer = FramedWrite<WriteHalf, FrameCodec<Envelope<PeerResponse>, Envelope<PeerRequest>>>;

/// Moves requests out and replies in until the connection fails or is closed; then every
/// caller still waiting learns that its reply is lost (its sender is dropped).
async fn pump(
    mut reader: Reader,
    mut writer: Writer,
    mut requests: mpsc::UnboundedReceiver<Envelope<PeerRequest>>,
    waiters: Waiters,
    closed: CancellationToken,
) {
    let write = async {
        while let Some(request) = requests.recv().await {
            if let Err(error) = writer.send(request).await {
                tracing::debug!(%error, "peer write failed");
                return;
            }
        }
    };
    let read = async {
        while let Some(frame) = reader.next().await {
            match frame {
                Ok(reply) => {
                    let waiter = waiters.lock().unwrap_or_else(PoisonError::into_inner).remove(&reply.id);
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(reply.body);
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, "peer read failed");
                    return;
                }
            }
        }
    };
    tokio::select! {
        _ = closed.cancelled() => {}
        _ = write => {}
        _ = read => {}
    }
    closed.cancel();
    waiters.lock().unwrap_or_else(PoisonError::into_inner).clear();
}
