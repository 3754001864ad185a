//! Bad input: invalid requests are refused, broken connections are dropped alone.

use crate::harness::*;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::task::JoinHandle;
use ward_client::{Client, CreateMode};
use ward_proto::{
    ClientMessage, ErrorCode, Hello, HelloPrefix, Request, Response, ServerMessage, MAGIC, MAX_DATA_LEN,
    MAX_REQUEST_FRAME, PROTOCOL_VERSION,
};

/// Every invalid form: empty, relative, trailing '/', '//', '.' and '..', control chars.
const BAD_PATHS: &[&str] =
    &["", "a", "a/b", "/a/", "/a//b", "//", "/a/./b", "/.", "/a/..", "/../a", "/a\0b", "/a\u{1}"];

// G9: every invalid path form is BadArguments, for every operation, through the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_paths_are_bad_arguments() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        let root_before = c.get_children("/").await.expect("ls / before");
        for &bad in BAD_PATHS {
            let why = format!("path {bad:?}");
            assert!(is_bad_arguments(&c.create(bad, b"", CreateMode::Persistent).await), "create {why}");
            assert!(is_bad_arguments(&c.create(bad, b"", CreateMode::Ephemeral).await), "create -e {why}");
            assert!(is_bad_arguments(&c.delete(bad, None).await), "delete {why}");
            assert!(is_bad_arguments(&c.set_data(bad, b"", None).await), "set {why}");
            assert!(is_bad_arguments(&c.get_data(bad).await), "get {why}");
            assert!(is_bad_arguments(&c.exists(bad).await), "exists {why}");
            assert!(is_bad_arguments(&c.get_children(bad).await), "ls {why}");
            assert!(is_bad_arguments(&c.get_data_watch(bad).await), "get watch {why}");
            assert!(is_bad_arguments(&c.exists_watch(bad).await), "exists watch {why}");
            assert!(is_bad_arguments(&c.get_children_watch(bad).await), "ls watch {why}");
            assert!(is_bad_arguments(&c.sync(bad).await), "sync {why}");
        }
        // Sequential creates validate the prefix plus a digit, so "/a/" is fine there but
        // the rest are not.
        for bad in ["", "a", "/a//", "/./", "/a\0"] {
            let seq = c.create(bad, b"", CreateMode::PersistentSequential).await;
            assert!(is_bad_arguments(&seq), "sequential create {bad:?}: {seq:?}");
        }
        assert_eq!(c.get_children("/").await.expect("ls / after"), root_before, "nothing created");
    })
    .await
}

// G9: the server itself refuses invalid paths (not only the client), and keeps the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_refuses_invalid_paths_from_a_raw_connection() {
    bounded(async {
        let server = ServerProcess::start();
        let (mut conn, _) = raw_session(server.addr(), 10_000).await;
        let mut xid = 0;
        for &bad in BAD_PATHS {
            let path = bad.to_owned();
            let requests = [
                Request::Create { path: path.clone(), data: vec![], mode: CreateMode::Persistent },
                Request::Delete { path: path.clone(), version: None },
                Request::SetData { path: path.clone(), data: vec![], version: None },
                Request::GetData { path: path.clone(), watch: false },
                Request::Exists { path: path.clone(), watch: true },
                Request::GetChildren { path: path.clone(), watch: false },
                Request::Sync { path: path.clone() },
            ];
            for request in requests {
                xid += 1;
                let what = format!("{request:?}");
                let reply = call(&mut conn, xid, request).await;
                assert_eq!(reply, Err(ErrorCode::BadArguments), "{what}");
            }
        }
        xid += 1;
        assert_eq!(call(&mut conn, xid, Request::Ping).await, Ok(Response::Pong));
    })
    .await
}

// G9: data over MAX_DATA_LEN is BadArguments (client and raw); exactly MAX_DATA_LEN is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_data_is_bad_arguments() {
    bounded(async {
        let server = ServerProcess::start();
        let c = connect(&server.addr_str()).await;
        let too_big = vec![7u8; MAX_DATA_LEN + 1];
        let created = c.create("/big", &too_big, CreateMode::Persistent).await;
        assert!(is_bad_arguments(&created), "create: {:?}", created.map(|_| ()));
        assert_eq!(c.exists("/big").await.expect("exists"), None);
        c.create("/big", b"small", CreateMode::Persistent).await.expect("create small");
        let set = c.set_data("/big", &too_big, None).await;
        assert!(is_bad_arguments(&set), "set: {set:?}");
        assert_eq!(c.get_data("/big").await.expect("get").0, b"small");
        let max = vec![9u8; MAX_DATA_LEN];
        let stat = c.set_data("/big", &max, None).await.expect("set exactly the maximum");
        assert_eq!(stat.data_length as usize, MAX_DATA_LEN);
        assert_eq!(c.get_data("/big").await.expect("get max").0, max);

        // The frame still fits the request limit, so the server answers instead of closing.
        let (mut conn, _) = raw_session(server.addr(), 10_000).await;
        let request = Request::SetData { path: "/big".into(), data: too_big, version: None };
        assert_eq!(call(&mut conn, 1, request).await, Err(ErrorCode::BadArguments));
        assert_eq!(call(&mut conn, 2, Request::Ping).await, Ok(Response::Pong));
    })
    .await
}

/// A well-behaved client doing writes and reads throughout an abusive test.
struct Bystander {
    client: Client,
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Bystander {
    async fn start(addr: &str) -> Bystander {
        let client = connect(addr).await;
        client.create("/bystander", b"0", CreateMode::Ephemeral).await.expect("bystander node");
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let (client, stop, rounds) = (client.clone(), Arc::clone(&stop), Arc::clone(&rounds));
            async move {
                while !stop.load(Ordering::SeqCst) {
                    let value = rounds.load(Ordering::SeqCst).to_string();
                    client.set_data("/bystander", value.as_bytes(), None).await.expect("bystander set");
                    let (data, _) = client.get_data("/bystander").await.expect("bystander get");
                    assert_eq!(data, value.as_bytes());
                    rounds.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Bystander { client, stop, rounds, task }
    }

    /// Lets the background loop finish one more round after the abuse, stops it, and
    /// checks the session is still whole.
    async fn finish(self) {
        let seen = self.rounds.load(Ordering::SeqCst);
        wait_until("the bystander completes a round after the abuse", DEADLINE, || async {
            self.rounds.load(Ordering::SeqCst) > seen
        })
        .await;
        self.stop.store(true, Ordering::SeqCst);
        within("the bystander", DEADLINE, self.task).await.expect("bystander task");
        let stat = self.client.exists("/bystander").await.expect("exists").expect("bystander");
        assert_eq!(stat.ephemeral_owner, Some(self.client.session_id()));
    }
}

/// Sends `bytes` on a fresh connection (after a handshake if `after_hello`) and checks the
/// server drops it; with `shutdown`, our write side closes after the bytes.
async fn assert_dropped(addr: SocketAddr, after_hello: bool, bytes: &[u8], shutdown: bool) {
    let mut stream = if after_hello { raw_session(addr, 10_000).await.0.into_inner() } else { raw_connect(addr).await };
    stream.write_all(bytes).await.expect("send bad bytes");
    if shutdown {
        stream.shutdown().await.expect("shutdown write");
    }
    let dropped = expect_dropped(&mut stream, DEADLINE).await;
    // Before the handshake nothing but a refusal may come back.
    assert!(after_hello || dropped.bytes_before_close < 4096, "{dropped:?}");
}

// G8: garbage closes only its own connection; a bystander session works before, during and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_closes_only_that_connection() {
    bounded(async {
        let mut server = ServerProcess::start();
        let bystander = Bystander::start(&server.addr_str()).await;
        let garbage: &[&[u8]] =
            &[&[0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], &[0, 0, 0, 1, 0x42], &[0, 0, 0, 0]];
        for &bytes in garbage {
            assert_dropped(server.addr(), false, bytes, false).await;
            assert_dropped(server.addr(), true, bytes, false).await;
        }
        // Not our protocol at all: an HTTP request reads as an absurd frame length.
        assert_dropped(server.addr(), false, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", false).await;
        bystander.finish().await;
        server.assert_running();
        let fresh = connect(&server.addr_str()).await;
        fresh.create("/after", b"", CreateMode::Persistent).await.expect("create after");
    })
    .await
}

// G9: a length prefix over the limit is refused from the prefix alone (no body is ever sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_length_prefix_is_refused_from_the_prefix() {
    bounded(async {
        let mut server = ServerProcess::start();
        let bystander = Bystander::start(&server.addr_str()).await;
        let just_over = u32::try_from(MAX_REQUEST_FRAME + 1).expect("limit fits u32");
        for prefix in [0x8000_0000u32, u32::MAX, just_over] {
            let bytes = prefix.to_be_bytes();
            assert_dropped(server.addr(), false, &bytes, false).await;
            assert_dropped(server.addr(), true, &bytes, false).await;
        }
        bystander.finish().await;
        server.assert_running();
    })
    .await
}

// G8: a truncated frame (prefix 100, 10 bytes, then EOF) is dropped without harm to others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_frame_is_dropped() {
    bounded(async {
        let mut server = ServerProcess::start();
        let bystander = Bystander::start(&server.addr_str()).await;
        let mut bytes = 100u32.to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0u8; 10]);
        assert_dropped(server.addr(), false, &bytes, true).await;
        assert_dropped(server.addr(), true, &bytes, true).await;
        // A frame cut inside the length prefix itself.
        assert_dropped(server.addr(), false, &[0, 0], true).await;
        bystander.finish().await;
        server.assert_running();
    })
    .await
}

// G8: a frame whose header and body arrive in separate reads is one frame, not bad input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_split_across_reads_is_accepted() {
    bounded(async {
        let server = ServerProcess::start();
        let (conn, _) = raw_session(server.addr(), 10_000).await;
        let mut stream = conn.into_inner();
        let request = ClientMessage::Request {
            xid: 7,
            request: Request::GetData { path: "/not/there/at/all".into(), watch: false },
        };
        let body = postcard::to_allocvec(&request).expect("encode request");
        let len = u32::try_from(body.len()).expect("small frame");
        stream.write_all(&len.to_be_bytes()).await.expect("send header");
        stream.flush().await.expect("flush header");
        // Not synchronisation: a pause makes the server likely to read the header alone.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        stream.write_all(&body).await.expect("send body");
        let mut conn = frame(stream);
        match recv(&mut conn).await {
            Some(ServerMessage::Reply { xid: 7, result, .. }) => assert_eq!(result, Err(ErrorCode::NoNode)),
            other => panic!("a split frame was not answered: {other:?}"),
        }
    })
    .await
}

// G8: a hello of another protocol version is refused with ProtocolVersion, then closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_protocol_version_is_refused() {
    bounded(async {
        let server = ServerProcess::start();
        let hello = Hello { version: PROTOCOL_VERSION + 1, ..Hello::new(None, 5000, 0) };
        let mut conn = frame(raw_connect(server.addr()).await);
        send(&mut conn, ClientMessage::Hello(hello)).await;
        expect_refused_for_version(&mut conn).await;

        // A newer client's hello whose body no longer decodes: the prefix still names it.
        let prefix = HelloPrefix { tag: 0, magic: MAGIC, version: PROTOCOL_VERSION + 1 };
        let mut body = postcard::to_allocvec(&prefix).expect("encode prefix");
        body.extend_from_slice(&[0xff; 16]);
        let mut stream = raw_connect(server.addr()).await;
        let len = u32::try_from(body.len()).expect("small frame");
        stream.write_all(&len.to_be_bytes()).await.expect("send prefix");
        stream.write_all(&body).await.expect("send body");
        expect_refused_for_version(&mut frame(stream)).await;
    })
    .await
}

async fn expect_refused_for_version(conn: &mut RawConn) {
    match recv(conn).await {
        Some(ServerMessage::Refused { code, .. }) => assert_eq!(code, ErrorCode::ProtocolVersion),
        other => panic!("expected Refused(ProtocolVersion), got {other:?}"),
    }
    assert_eq!(recv(conn).await, None, "the server must close after refusing");
}

// G8: a hello with the wrong magic, or a request before any hello, gets no session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_session_without_a_proper_hello() {
    bounded(async {
        let mut server = ServerProcess::start();
        let wrong_magic = Hello { magic: *b"ZOOK", ..Hello::new(None, 5000, 0) };
        let premature = ClientMessage::Request { xid: 1, request: Request::Ping };
        for first in [ClientMessage::Hello(wrong_magic), premature] {
            let mut conn = frame(raw_connect(server.addr()).await);
            send(&mut conn, first.clone()).await;
            loop {
                match recv(&mut conn).await {
                    None => break,
                    Some(ServerMessage::Refused { .. }) => continue,
                    Some(other) => panic!("{first:?} was answered with {other:?}"),
                }
            }
        }
        server.assert_running();
        connect(&server.addr_str()).await.exists("/").await.expect("server still serves");
    })
    .await
}

// G8: a well-formed raw session works, so the refusals above are about the bad bytes alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_handshake_and_requests_work() {
    bounded(async {
        let server = ServerProcess::start_with(&["--min-session-timeout-ms", "4000"]);
        let (mut conn, welcome) = raw_session(server.addr(), 1000).await;
        assert_eq!(welcome.version, PROTOCOL_VERSION);
        assert_eq!(welcome.timeout_ms, 4000, "clamped up to the minimum");
        assert!(!welcome.resumed);
        assert_eq!(call(&mut conn, 1, Request::Ping).await, Ok(Response::Pong));
        let create = Request::Create { path: "/raw".into(), data: b"r".to_vec(), mode: CreateMode::Ephemeral };
        match call(&mut conn, 2, create).await {
            Ok(Response::Created { path, stat }) => {
                assert_eq!(path, "/raw");
                assert_eq!(stat.ephemeral_owner, Some(welcome.session_id));
            }
            other => panic!("create: {other:?}"),
        }
        assert_eq!(call(&mut conn, 3, Request::CloseSession).await, Ok(Response::Closed));
        let c = connect(&server.addr_str()).await;
        assert_eq!(c.exists("/raw").await.expect("exists"), None);
    })
    .await
}
