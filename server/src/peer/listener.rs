//! The answering side of the peer link: checks each connection's hello, then runs every
//! request it carries through the [`PeerService`], concurrently, replying as each finishes.

use super::client::Identity;
use super::level::{AnswerOut, HelloIn, LEVEL};
use super::wire::PEER_VERSION;
use super::wire::{Envelope, HelloAnswer, PeerHello, PeerRequest, PeerResponse, MAX_PEER_FRAME, PEER_MAGIC};
use crate::raft::types::NodeId;
use futures_util::{SinkExt, StreamExt};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use ward_proto::FrameCodec;

const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// What a member does with its peers' requests.
pub(crate) trait PeerService: Send + Sync + 'static {
    fn handle(&self, from: NodeId, request: PeerRequest) -> impl Future<Output = PeerResponse> + Send;
}

/// Accepts peer connections on `listener` until `cancel`.
pub(crate) async fn serve<S: PeerService>(
    listener: TcpListener,
    identity: Identity,
    service: Arc<S>,
    cancel: CancellationToken,
    tasks: TaskTracker,
) {
    crate::net::listener::accept_until(listener, cancel, "peer", |stream, peer, cancel| {
        tasks.spawn(connection(stream, peer, identity.clone(), service.clone(), cancel));
    })
    .await
}

/// Checks a hello against who we are; `Err` carries the reason sent back.
pub(crate) fn check_hello(hello: &PeerHello, identity: &Identity) -> Result<(), String> {
    if hello.magic != PEER_MAGIC {
        return Err("not a Ward peer".into());
    }
    if hello.version != PEER_VERSION {
        return Err(super::wire::version_mismatch(PEER_VERSION, hello.version));
    }
    if *hello.ensemble != *identity.ensemble {
        return Err(format!("this is ensemble {:?}, not {:?}", identity.ensemble, hello.ensemble));
    }
    if hello.to != identity.me {
        return Err(format!("this is member {}, not {}", identity.me, hello.to));
    }
    Ok(())
}

async fn connection<S: PeerService>(
    stream: TcpStream,
    peer: SocketAddr,
    identity: Identity,
    service: Arc<S>,
    cancel: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let deadline = tokio::time::Instant::now() + HELLO_TIMEOUT;
    let (r, w) = match &identity.tls {
        None => crate::tls::stream::plain(stream),
        Some(tls) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.current().server.clone());
            match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => crate::tls::stream::tls(stream),
                // A member without a certificate from the peer CA, or no TLS at all.
                Ok(Err(error)) => return tracing::warn!(%peer, %error, "peer connection refused: TLS handshake failed"),
                Err(_) => return tracing::info!(%peer, "peer connection: no TLS handshake in time"),
            }
        }
    };
    let mut hello_in = FramedRead::new(r, FrameCodec::<HelloIn, AnswerOut>::new(4096));
    let mut hello_out = FramedWrite::new(w, FrameCodec::<HelloIn, AnswerOut>::new(4096));
    let (hello, level) = match tokio::time::timeout_at(deadline, hello_in.next()).await {
        Ok(Some(Ok(HelloIn(hello, level)))) => (hello, level),
        Ok(Some(Err(error))) => return tracing::info!(%peer, %error, "peer connection: bad hello"),
        Ok(None) => return,
        Err(_) => return tracing::info!(%peer, "peer connection: no hello in time"),
    };
    if let Err(why) = check_hello(&hello, &identity) {
        match hello.version == PEER_VERSION {
            true => tracing::warn!(%peer, from = hello.from, reason = %why, "peer connection refused"),
            false => tracing::error!(%peer, from = hello.from, reason = %why, "peer connection refused"),
        }
        let _ = hello_out.send(AnswerOut(HelloAnswer::Refused(why), LEVEL)).await;
        return;
    }
    identity.levels.record(hello.from, level);
    if hello_out.send(AnswerOut(HelloAnswer::Accepted, LEVEL)).await.is_err() {
        return;
    }
    let from = hello.from;
    tracing::debug!(%peer, from, channel = ?hello.channel, "peer connected");
    // A caller sends its first request only after the answer, so the hello reader holds no
    // bytes of it.
    let mut reader = FramedRead::new(
        hello_in.into_inner(),
        FrameCodec::<Envelope<PeerRequest>, Envelope<PeerResponse>>::new(MAX_PEER_FRAME),
    );
    let mut writer = FramedWrite::new(
        hello_out.into_inner(),
        FrameCodec::<Envelope<PeerRequest>, Envelope<PeerResponse>>::new(MAX_PEER_FRAME),
    );
    let (replies, mut outgoing) = mpsc::unbounded_channel::<Envelope<PeerResponse>>();
    let write = async {
        while let Some(reply) = outgoing.recv().await {
            if writer.send(reply).await.is_err() {
                return;
            }
        }
    };
    let read = async {
        while let Some(Ok(request)) = reader.next().await {
            let service = service.clone();
            let replies = replies.clone();
            let Envelope { id, body } = request;
            let work = async move {
                let body = service.handle(from, body).await;
                let _ = replies.send(Envelope { id, body });
            };
            // Concurrently: a slow append (a follower's fsync) must not hold up a vote or a
            // heartbeat behind it. openraft sends a replication stream's appends one at a
            // time, and Raft tolerates any order between streams.
            tokio::spawn(work);
        }
    };
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = write => {}
        _ = read => {}
    }
}
