//! G21, connection limits: past `--max-connections-per-ip` or `--max-connections`, a new
//! connection on either client listener (they count together) is closed at once, with a
//! logged reason that a flood does not multiply, while every other client keeps being
//! answered; a place freed by a closed connection is taken again (docs/security.md
//! "Limits").

use super::{connect_from, metric, native_call, native_session, Native};
use bytes::BytesMut;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;
use tokio_util::codec::Encoder;
use ward_client::Client;
use ward_proto::{ClientMessage, FrameCodec, Hello, Request, ServerMessage};
use ward_testkit::zk::raw::{connect_request, op, path_watch, Raw};
use ward_testkit::{bounded, connect, wait_until, within, ServerProcess, DEADLINE};

/// The per-address limit the test sets.
const PER_IP: usize = 50;
/// Connections the hostile host opens past its limit.
const FLOOD: usize = 5_000;
/// How many of them are open at once: the test's own descriptors stay few (each refused
/// connection is closed before the next batch), well under a default limit of 1024.
const AT_ONCE: usize = 100;
/// The hostile host; the other clients come from 127.0.0.1.
const HOSTILE: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
/// Long enough that no held session expires during the test.
const LONG_SESSION_MS: u32 = 600_000;

/// The first bytes a client sends on `addr`'s protocol: a Ward hello or a ZooKeeper connect
/// request, either asking for a new session.
fn first_message(server: &ServerProcess, addr: SocketAddr) -> Vec<u8> {
    if addr == server.zk_addr() {
        return connect_request(0, &[0; 16], 10_000);
    }
    let mut codec = FrameCodec::<ServerMessage, ClientMessage>::new(ward_proto::MAX_REPLY_FRAME);
    let mut buf = BytesMut::new();
    let hello = ClientMessage::Hello(Hello::new(None, 10_000, 0));
    codec.encode(hello, &mut buf).expect("encode a hello");
    buf.to_vec()
}

/// Connects from `from` and says hello: true if the server answers (the connection was
/// admitted), false if it closes the connection without a byte (refused).
async fn admitted(from: IpAddr, addr: SocketAddr, hello: &[u8]) -> bool {
    let Ok(mut stream) = connect_from(from, addr, None).await else { return false };
    // A refused connection may be closed before the hello arrives: the write may fail.
    let _ = stream.write_all(hello).await;
    let mut first = [0u8; 1];
    matches!(within("an answer or a close", DEADLINE, stream.read(&mut first)).await, Ok(1))
}

/// `n` connections from `from`, spread over both listeners, each refused; the other
/// clients are answered after every [`AT_ONCE`] of them.
async fn all_refused(server: &ServerProcess, from: IpAddr, n: usize, others: &mut Others) {
    let hellos = [server.addr(), server.zk_addr()].map(|addr| (addr, first_message(server, addr)));
    for _ in 0..n / AT_ONCE {
        let mut tries = JoinSet::new();
        for i in 0..AT_ONCE {
            let (addr, hello) = hellos[i % 2].clone();
            tries.spawn(async move { admitted(from, addr, &hello).await });
        }
        while let Some(tried) = tries.join_next().await {
            assert!(!tried.expect("a connecting task"), "a connection from {from} was admitted past the limit");
        }
        others.answered().await;
    }
}

/// Clients that are not part of the flood, one on each listener.
struct Others {
    ward: Client,
    zk: Raw,
}

impl Others {
    async fn connect(server: &ServerProcess) -> Others {
        let ward = connect(&server.addr_str()).await;
        let (zk, _) = Raw::connect(&server.zk_addr_str(), 0, &[0; 16]).await;
        Others { ward, zk }
    }

    async fn answered(&mut self) {
        self.ward.exists("/").await.expect("another Ward client is answered");
        let xid = self.zk.request(op::EXISTS, &path_watch("/", false)).await;
        assert_eq!(self.zk.header().await, (xid, 0), "another ZooKeeper client is answered");
    }
}

/// `n` Ward sessions from `from` that stay open.
async fn hold(server: &ServerProcess, from: IpAddr, n: usize) -> Vec<Native> {
    let mut held = Vec::new();
    for _ in 0..n {
        let stream = connect_from(from, server.addr(), None).await.expect("connect");
        held.push(native_session(stream, LONG_SESSION_MS).await.0);
    }
    held
}

/// The log's refusals: every line found, and they name the reason and the refused peer.
fn refusals_logged(server: &ServerProcess, reason: &str, from: IpAddr) -> usize {
    let log = server.log_tail();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("refusing connection")).collect();
    assert!(
        lines.iter().any(|l| l.contains(reason) && l.contains(&format!("peer={from}:"))),
        "no refusal of {from} for {reason:?} logged:\n{log}"
    );
    lines.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_per_address_limit_are_refused_and_others_keep_working() {
    let per_ip = PER_IP.to_string();
    let flags = ["--max-connections-per-ip", &per_ip, "--max-session-timeout-ms", "600000"];
    let server = ServerProcess::builder().zookeeper().admin().in_memory().flags(&flags).start();
    bounded(async {
        let mut others = Others::connect(&server).await;
        let mut held = hold(&server, HOSTILE, PER_IP).await;
        all_refused(&server, HOSTILE, FLOOD, &mut others).await;
        // Refused at once, and logged, but not once per refusal: the log would have
        // thousands of lines (the tail keeps the last 400) where one a second is written.
        let lines =
            refusals_logged(&server, &format!("too many connections from this address (limit {PER_IP})"), HOSTILE);
        assert!(lines < 200, "{lines} refusals logged for {FLOOD} refused connections");
        assert!(metric(server.admin_addr(), "ward_connections_refused_total") >= FLOOD as u64);
        // The hostile host's admitted connections are served as before.
        for conn in held.iter_mut().step_by(10) {
            native_call(conn, 1, Request::Exists { path: "/".into(), watch: false }).await;
        }
        // A place freed is taken again.
        drop(held.pop());
        let hello = first_message(&server, server.zk_addr());
        wait_until("a closed connection frees its place", DEADLINE, || admitted(HOSTILE, server.zk_addr(), &hello))
            .await;
        others.answered().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_total_limit_are_refused_from_any_address() {
    const TOTAL: usize = 20;
    let total = TOTAL.to_string();
    let flags = ["--max-connections", &total, "--max-session-timeout-ms", "600000"];
    let server = ServerProcess::builder().zookeeper().admin().in_memory().flags(&flags).start();
    bounded(async {
        // The two other clients and 18 held sessions from 127.0.0.1 fill both listeners.
        let mut others = Others::connect(&server).await;
        let mut held = hold(&server, IpAddr::V4(Ipv4Addr::LOCALHOST), TOTAL - 2).await;
        for from in [IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3))] {
            all_refused(&server, from, 2 * AT_ONCE, &mut others).await;
        }
        refusals_logged(
            &server,
            &format!("too many connections in total (limit {TOTAL})"),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        );
        drop(held.pop());
        let hello = first_message(&server, server.addr());
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
        wait_until("a closed connection frees its place", DEADLINE, || admitted(from, server.addr(), &hello)).await;
        others.answered().await;
    })
    .await;
}
