//! A TCP proxy between a client and a server, so a test can cut the client off without
//! touching either: `cut()` drops every current connection, `block()` makes new ones close
//! at once (the client sees a refused reconnect), `unblock()` lets them through again.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

#[derive(Default)]
struct Links {
    blocked: bool,
    live: Vec<AbortHandle>,
}

pub struct Proxy {
    addr: SocketAddr,
    // One lock for the flag and the list, so a connection accepted while `block()` and
    // `cut()` run is either cut or refused, never missed.
    links: Arc<Mutex<Links>>,
    accepted: Arc<AtomicUsize>,
    acceptor: JoinHandle<()>,
}

impl Proxy {
    /// Listens on 127.0.0.1:0 and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy listener");
        let addr = listener.local_addr().expect("proxy address");
        let links = Arc::new(Mutex::new(Links::default()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let acceptor = tokio::spawn(accept_loop(listener, upstream, Arc::clone(&links), Arc::clone(&accepted)));
        Proxy { addr, links, accepted, acceptor }
    }

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
            link.abort();
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
        let task = tokio::spawn(forward(downstream, upstream));
        guard.live.retain(|link| !link.is_finished());
        guard.live.push(task.abort_handle());
    }
}

async fn forward(mut downstream: TcpStream, upstream: SocketAddr) {
    let Ok(mut up) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = downstream.set_nodelay(true);
    let _ = up.set_nodelay(true);
    // Aborting this task drops both sockets, which closes both connections.
    let _ = tokio::io::copy_bidirectional(&mut downstream, &mut up).await;
}
