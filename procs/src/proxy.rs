//! A TCP proxy between a client and a server, so a test can cut the client off without
//! touching either: `cut()` drops every current connection, `block()` makes new ones close
//! at once (the client sees a refused reconnect), `unblock()` lets them through again;
//! `isolate()` is both, and keeps the client off the server until `unblock()`.
//! `mute_replies()` keeps forwarding what the client sends but drops what the server
//! answers on the connections open now: a request is applied and its reply is lost.
//! `partition()` is a silent `isolate()`: open connections stay up but carry nothing, so
//! neither side sees a close and each must notice the silence itself. `hold()` makes every
//! connection, open or new, carry nothing until `release()`, and then delivers all it held:
//! a stalled link, not a broken one (a request arrives late, after what was sent elsewhere).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

use crate::error::HarnessError;

struct Link {
    task: AbortHandle,
    /// Set: bytes from the server are read and dropped.
    drop_replies: Arc<AtomicBool>,
    /// Set: bytes from the client are read and dropped.
    drop_requests: Arc<AtomicBool>,
}

#[derive(Default)]
struct Links {
    blocked: bool,
    live: Vec<Link>,
}

/// Forwards every connection it accepts to one upstream address, each over a link of its own
/// that the test can cut, block, mute or partition.
pub struct Proxy {
    addr: SocketAddr,
    // One lock for the flag and the list, so a connection accepted while `block()` and
    // `cut()` run is either cut or refused, never missed.
    links: Arc<Mutex<Links>>,
    accepted: Arc<AtomicUsize>,
    /// True while held: relays keep what they read until it is false again.
    held: Arc<watch::Sender<bool>>,
    acceptor: JoinHandle<()>,
}

impl Proxy {
    /// Listens on 127.0.0.1:0 and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        Proxy::try_start(upstream).await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`start`](Self::start), `Err` if it cannot listen.
    pub async fn try_start(upstream: SocketAddr) -> Result<Proxy, HarnessError> {
        let failed = |e| HarnessError::io("bind a proxy listener on 127.0.0.1", e);
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(failed)?;
        let addr = listener.local_addr().map_err(failed)?;
        let links = Arc::new(Mutex::new(Links::default()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let held = Arc::new(watch::Sender::new(false));
        let acceptor =
            tokio::spawn(accept_loop(listener, upstream, Arc::clone(&links), Arc::clone(&accepted), Arc::clone(&held)));
        Ok(Proxy { addr, links, accepted, held, acceptor })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address as a connect string: give this to the client instead of the server's.
    pub fn addr_str(&self) -> String {
        self.addr.to_string()
    }

    /// Connections let through so far: a test can see that a client reconnected.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Closes every connection open now, on both sides.
    pub fn cut(&self) {
        let mut links = self.links.lock().expect("proxy lock");
        for link in links.live.drain(..) {
            link.task.abort();
        }
    }

    /// On every connection open now, server→client bytes are dropped from here on while
    /// client→server bytes still flow. New connections are not muted: `cut()` afterwards
    /// and the client's reconnect gets a working link.
    pub fn mute_replies(&self) {
        let links = self.links.lock().expect("proxy lock");
        for link in &links.live {
            link.drop_replies.store(true, Ordering::SeqCst);
        }
    }

    /// Like `isolate()`, but the connections open now are not closed: from here on they
    /// silently drop everything, both ways, as a network partition would.
    pub fn partition(&self) {
        let mut links = self.links.lock().expect("proxy lock");
        links.blocked = true;
        for link in &links.live {
            link.drop_replies.store(true, Ordering::SeqCst);
            link.drop_requests.store(true, Ordering::SeqCst);
        }
    }

    /// From now on, new connections are closed as soon as they are accepted. Connections
    /// already open stay up; `cut()` them as well to isolate the client.
    pub fn block(&self) {
        self.links.lock().expect("proxy lock").blocked = true;
    }

    pub fn unblock(&self) {
        self.links.lock().expect("proxy lock").blocked = false;
    }

    /// From now on no byte moves on any connection, open or new, either way; nothing is
    /// dropped: `release()` delivers it all, in order.
    pub fn hold(&self) {
        self.held.send_replace(true);
    }

    pub fn release(&self) {
        self.held.send_replace(false);
    }

    /// `block()` then `cut()`: the client is off the server until `unblock()`.
    pub fn isolate(&self) {
        self.block();
        self.cut();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.cut();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    links: Arc<Mutex<Links>>,
    accepted: Arc<AtomicUsize>,
    held: Arc<watch::Sender<bool>>,
) {
    loop {
        let Ok((downstream, _)) = listener.accept().await else {
            continue;
        };
        let mut guard = match links.lock() {
            Ok(guard) => guard,
            Err(_) => return,
        };
        if guard.blocked {
            // Dropping the socket closes it: to the client this is a failed reconnect.
            drop(downstream);
            continue;
        }
        accepted.fetch_add(1, Ordering::SeqCst);
        let (drop_replies, drop_requests) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let task = tokio::spawn(forward(
            downstream,
            upstream,
            Arc::clone(&drop_replies),
            Arc::clone(&drop_requests),
            held.subscribe(),
        ));
        guard.live.retain(|link| !link.task.is_finished());
        guard.live.push(Link { task: task.abort_handle(), drop_replies, drop_requests });
    }
}

async fn forward(
    downstream: TcpStream,
    upstream: SocketAddr,
    drop_replies: Arc<AtomicBool>,
    drop_requests: Arc<AtomicBool>,
    held: watch::Receiver<bool>,
) {
    let Ok(up) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = downstream.set_nodelay(true);
    let _ = up.set_nodelay(true);
    let (mut client_rx, mut client_tx) = downstream.into_split();
    let (mut server_rx, mut server_tx) = up.into_split();
    // Aborting this task drops both sockets, which closes both connections.
    tokio::join!(
        relay(&mut client_rx, &mut server_tx, &drop_requests, held.clone()),
        relay(&mut server_rx, &mut client_tx, &drop_replies, held)
    );
}

/// Copies `from` to `to` (dropping what arrives while `drop` is set) until `from` ends, then
/// shuts `to` down, as `copy_bidirectional` does: the other direction keeps flowing. While
/// `held`, what was read waits (and nothing more is read, so the rest waits in the socket).
async fn relay(from: &mut OwnedReadHalf, to: &mut OwnedWriteHalf, drop: &AtomicBool, mut held: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if held.wait_for(|h| !*h).await.is_err() {
            break;
        }
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) if drop.load(Ordering::SeqCst) => {}
            Ok(n) => {
                // Read before a hold began, sent after it ends.
                if held.wait_for(|h| !*h).await.is_err() || to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}
