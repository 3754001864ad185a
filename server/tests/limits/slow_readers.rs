//! G21, slow readers: a client that never reads what the server queues for it costs the
//! server at most `--max-outbound-bytes` plus a constant, on either listener; it is
//! disconnected with a logged reason, its session stays (it resumes), every other client
//! keeps being answered meanwhile, and nothing stays behind: a second round does not grow
//! the server further (docs/security.md "Limits").

use super::{connect_from, drain_until_closed, memory, metric, native_call, native_hello, native_session, Native};
use futures_util::{SinkExt, StreamExt};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use ward_client::{Client, CreateMode, Op};
use ward_proto::{ClientMessage, Hello, Request, ServerMessage, Welcome};
use ward_testkit::zk::raw::{add_watch, op, path_watch, Raw, PERSISTENT_RECURSIVE};
use ward_testkit::{bounded, connect, serial, wait_until, within, ServerProcess, DEADLINE};

/// The bound the tests set: small, so that going past it is quick and plain to see.
const BOUND: u64 = 4 << 20;
/// What the server's resident memory may grow by beyond the bound, at its peak. Serving the
/// writers costs memory that no bound is about: each tokio worker's allocator arena grows
/// with the bursts of requests and replies it handles, and connection buffers grow for them
/// (up to 8 KiB each, and back when idle). A warm-up round at full speed is run before the
/// baseline is taken, so most of that is in the baseline already; 32 MiB leaves room for the
/// rest several times over, and is still well below what the slow client would cost
/// without the bound (about 100 MiB in the ZooKeeper test).
const SLACK: u64 = 32 << 20;
/// What a second round may leave resident beyond the first: allocator noise only, since
/// the second slow client's memory is the first one's, freed and reused.
const ROUND_SLACK: u64 = 8 << 20;
/// Events generated in each round.
const EVENTS: usize = 100_000;
/// Changes made in the warm-up round.
const WARMUP: usize = 20_000;
/// Changes in one multi: each fires its own event, and the writer's requests (and the test)
/// stay few.
const OPS: usize = 100;
/// Multis the writer keeps in flight.
const WRITERS: usize = 8;
/// Each round's writes come in this many batches, with another client's request answered
/// after each.
const BATCHES: usize = 10;
/// Long paths make each event worth about this many bytes, so that 100,000 of them would
/// cost the server about 100 MiB if nothing bounded them.
const PATH_LEN: usize = 1000;
const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// The slow clients' receive buffer: small, so what they do not read stays in the server.
const SMALL_BUFFER: Option<u32> = Some(4096);

/// The slow clients' session timeout: they send nothing for a whole round, and their
/// session must outlive their connection however long the round takes.
const SLOW_SESSION_MS: u32 = 600_000;

fn start() -> ServerProcess {
    let (bound, timeout) = (BOUND.to_string(), SLOW_SESSION_MS.to_string());
    let flags = ["--max-outbound-bytes", &bound, "--max-session-timeout-ms", &timeout];
    ServerProcess::builder().zookeeper().admin().in_memory().flags(&flags).start()
}

/// `n` changes by `writer`, [`OPS`] to a multi and [`WRITERS`] multis at a time, cycling
/// over `paths`; `check` runs after each of the [`BATCHES`] batches.
async fn generate(writer: &Client, paths: &Arc<Vec<String>>, n: usize, check: &mut impl AsyncFnMut()) {
    let multis = n / OPS / BATCHES;
    for batch in 0..BATCHES {
        let mut tasks = JoinSet::new();
        for w in 0..WRITERS {
            let (writer, paths) = (writer.clone(), paths.clone());
            tasks.spawn(async move {
                for m in (w..multis).step_by(WRITERS) {
                    let first = (batch * multis + m) * OPS;
                    let ops = (first..first + OPS)
                        .map(|i| Op::SetData {
                            path: paths[i % paths.len()].clone(),
                            data: b"x".to_vec(),
                            version: None,
                        })
                        .collect();
                    writer.multi(ops).await.unwrap_or_else(|e| panic!("multi {m}: {e:?}"));
                }
            });
        }
        while let Some(done) = within("a batch of writes", DEADLINE, tasks.join_next()).await {
            done.expect("a writer task");
        }
        check().await;
    }
}

/// Waits until the server has closed its `round`th connection for passing the bound, and
/// checks that its log says so, naming the connection's peer and session.
async fn closed_for_overflow(server: &ServerProcess, round: u64, peer: std::net::SocketAddr) {
    let admin = server.admin_addr();
    wait_until("the slow connection is closed for passing its bound", DEADLINE, || async {
        metric(admin, "ward_connections_overflowed_total") >= round
    })
    .await;
    let log = server.log_tail();
    let logged = log.lines().filter(|l| l.contains("outbound bytes past the limit"));
    assert!(
        logged.clone().any(|l| l.contains(&format!("peer={peer}")) && l.contains("session=0x")),
        "no warning naming {peer} and its session:\n{log}"
    );
    assert_eq!(logged.count() as u64, round, "one warning per closed connection:\n{log}");
}

/// Resident memory at its peak stayed within the bound and the slack over `baseline`, and
/// the second round left no more behind than the first.
fn check_memory(pid: u32, baseline: u64, after: &[u64; 2]) {
    let peak = memory(pid, "VmHWM");
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    eprintln!(
        "baseline {:.1} MiB, peak {:.1} MiB, after round 1 {:.1} MiB, after round 2 {:.1} MiB",
        mib(baseline),
        mib(peak),
        mib(after[0]),
        mib(after[1])
    );
    assert!(
        peak <= baseline + BOUND + SLACK,
        "the server grew {:.1} MiB, past the bound ({:.1} MiB) and the slack ({:.1} MiB)",
        mib(peak - baseline),
        mib(BOUND),
        mib(SLACK)
    );
    assert!(
        after[1] <= after[0] + ROUND_SLACK,
        "a second round grew the server again: {:.1} MiB after it, {:.1} MiB after the first",
        mib(after[1]),
        mib(after[0])
    );
}

/// The client that never reads, on either listener.
enum Slow {
    /// With a persistent recursive watch on `/`.
    ZooKeeper(Raw),
    /// With a one-shot data watch on every path, and what resumes its session.
    Ward(Native, Welcome),
}

impl Slow {
    /// Connects (with a small receive buffer), opens a session and arms the watches; from
    /// then on it reads nothing.
    async fn open(server: &ServerProcess, zookeeper: bool, paths: &[String]) -> (Slow, SocketAddr) {
        let addr = if zookeeper { server.zk_addr() } else { server.addr() };
        let stream = connect_from(LOCALHOST, addr, SMALL_BUFFER).await.expect("connect");
        let peer = stream.local_addr().expect("local address");
        if zookeeper {
            let (mut raw, _) = Raw::handshake(stream, 0, &[0; 16], SLOW_SESSION_MS as i32).await;
            let xid = raw.request(op::ADD_WATCH, &add_watch("/", PERSISTENT_RECURSIVE)).await;
            assert_eq!(raw.header().await, (xid, 0), "addWatch");
            return (Slow::ZooKeeper(raw), peer);
        }
        let (mut conn, welcome) = native_session(stream, SLOW_SESSION_MS).await;
        arm_every_watch(&mut conn, paths).await;
        (Slow::Ward(conn, welcome), peer)
    }

    /// Reads until the server closes the connection, then resumes the session on a new
    /// one: it outlived its connection.
    async fn closed_then_resumed(self, server: &ServerProcess) {
        match self {
            Slow::ZooKeeper(mut raw) => {
                drain_until_closed(&mut raw.stream).await;
                let (_resumed, timeout) = Raw::connect(&server.zk_addr_str(), raw.session, &raw.passwd).await;
                assert!(timeout > 0, "the session resumes");
            }
            Slow::Ward(mut conn, welcome) => {
                drain_until_closed(conn.get_mut()).await;
                let resume = Hello::new(Some((welcome.session_id, welcome.secret)), SLOW_SESSION_MS, 0);
                let stream = TcpStream::connect(server.addr()).await.expect("connect");
                let (mut resumed, _) = native_hello(stream, resume).await;
                native_call(&mut resumed, 1, Request::Exists { path: "/".into(), watch: false }).await;
            }
        }
    }
}

/// Two rounds of a slow client (on the ZooKeeper listener, or Ward's) and [`EVENTS`]
/// changes to `paths` by `writer`, after a warm-up; then the memory checks. Memory is
/// measured from the moment the first slow client has armed its watches: what the watches
/// themselves cost (the registry's entries) is not queued output.
async fn rounds(
    server: &ServerProcess,
    zookeeper: bool,
    writer: &Client,
    paths: &Arc<Vec<String>>,
    check: &mut impl AsyncFnMut(),
) {
    generate(writer, paths, WARMUP, check).await;
    let pid = server.pid().expect("running");
    let (mut baseline, mut after) = (0, [0; 2]);
    for round in 1..=2 {
        let (slow, peer) = Slow::open(server, zookeeper, paths).await;
        if round == 1 {
            baseline = memory(pid, "VmRSS");
        }
        generate(writer, paths, EVENTS, check).await;
        closed_for_overflow(server, round, peer).await;
        slow.closed_then_resumed(server).await;
        after[round as usize - 1] = memory(pid, "VmRSS");
    }
    check_memory(pid, baseline, &after);
}

/// A ZooKeeper client sets a persistent recursive watch on `/`, then reads nothing while
/// another client makes 100,000 changes under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_client_that_never_reads_its_persistent_watch_costs_at_most_the_bound() {
    let _alone = serial().await;
    let server = start();
    bounded(async {
        let writer = connect(&server.addr_str()).await;
        let hot = format!("/{}", "h".repeat(PATH_LEN));
        writer.create(&hot, b"", CreateMode::Persistent).await.expect("create the hot node");
        let (mut other, _) = Raw::connect(&server.zk_addr_str(), 0, &[0; 16]).await;
        let mut check = async || {
            let xid = other.request(op::EXISTS, &path_watch("/", false)).await;
            assert_eq!(other.header().await, (xid, 0), "another ZooKeeper client is answered");
        };
        rounds(&server, true, &writer, &Arc::new(vec![hot]), &mut check).await;
    })
    .await;
}

/// Nodes each watched once by the Ward client below.
const WATCHED: usize = 8_000;

/// A Ward client arms a one-shot data watch on each of 8,000 nodes, then reads nothing
/// while another client makes 100,000 changes to them. (An event that fires a one-shot watch
/// frees the watch's entry in the registry, which costs more than the event: here the bound's
/// part is to close the connection, and memory must stay flat.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ward_client_that_never_reads_its_one_shot_watches_costs_at_most_the_bound() {
    let _alone = serial().await;
    let server = start();
    bounded(async {
        let writer = connect(&server.addr_str()).await;
        let dir = format!("/{}", "w".repeat(PATH_LEN));
        writer.create(&dir, b"", CreateMode::Persistent).await.expect("create the directory");
        let paths: Vec<String> = (0..WATCHED).map(|i| format!("{dir}/{i}")).collect();
        for chunk in paths.chunks(OPS) {
            let ops = chunk.iter().map(|path| Op::Create {
                path: path.clone(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
            });
            writer.multi(ops.collect()).await.expect("create the watched nodes");
        }
        let other = connect(&server.addr_str()).await;
        let mut check = async || {
            other.get_data(&paths[0]).await.expect("another Ward client is answered");
        };
        rounds(&server, false, &writer, &Arc::new(paths.clone()), &mut check).await;
    })
    .await;
}

/// A data watch on every path, sent a few hundred at a time, every reply read.
async fn arm_every_watch(conn: &mut Native, paths: &[String]) {
    for (chunk_no, chunk) in paths.chunks(500).enumerate() {
        for (i, path) in chunk.iter().enumerate() {
            let xid = (chunk_no * 500 + i + 1) as u64;
            let request = Request::GetData { path: path.clone(), watch: true };
            conn.feed(ClientMessage::Request { xid, request }).await.expect("send getData");
        }
        conn.flush().await.expect("flush");
        for _ in chunk {
            match within("a getData reply", DEADLINE, conn.next()).await {
                Some(Ok(ServerMessage::Reply { result: Ok(_), .. })) => {}
                other => panic!("expected a getData reply, got {other:?}"),
            }
        }
    }
}

/// Reads pipelined by the client below, and the size of the node each one reads.
const READS: usize = 500;
const BIG: usize = 128 << 10;

/// A Ward client pipelines 500 reads of a 128 KiB node (64 MiB of replies) and reads no
/// reply: the server stops reading its requests once the replies waiting for it reach the
/// bound (back-pressure, not a close: the replies are its own), other clients are answered
/// meanwhile, and when the client reads at last it gets every reply, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ward_client_that_reads_no_replies_is_held_back_at_the_bound() {
    let _alone = serial().await;
    let server = start();
    bounded(async {
        let other = connect(&server.addr_str()).await;
        other.create("/big", &vec![7; BIG], CreateMode::Persistent).await.expect("create /big");
        let pid = server.pid().expect("running");
        let baseline = memory(pid, "VmRSS");
        let stream = connect_from(LOCALHOST, server.addr(), SMALL_BUFFER).await.expect("connect");
        let (mut slow, _) = native_session(stream, SLOW_SESSION_MS).await;
        // Each read is followed by an exists that arms a watch of its own: the server's watch
        // count tells how far it has got through the requests.
        let watches_before = other.server_stats().await.expect("stats").watches;
        for i in 0..READS as u64 {
            let read = Request::GetData { path: "/big".into(), watch: false };
            slow.feed(ClientMessage::Request { xid: 2 * i + 1, request: read }).await.expect("send");
            let probe = Request::Exists { path: format!("/probe-{i}"), watch: true };
            slow.feed(ClientMessage::Request { xid: 2 * i + 2, request: probe }).await.expect("send");
        }
        slow.flush().await.expect("flush");
        // Three quarters of a bound's worth of replies is waiting (the server reads at
        // least a bound's worth before it stops); then another client is answered, many
        // times over the time the server would need to read the rest if nothing held it.
        let bound_worth = (BOUND as usize / BIG) as u64;
        wait_until("the server has read the first requests", DEADLINE, || async {
            other.server_stats().await.expect("stats").watches >= watches_before + bound_worth * 3 / 4
        })
        .await;
        for _ in 0..100 {
            other.exists("/big").await.expect("another Ward client is answered");
        }
        let read = other.server_stats().await.expect("stats").watches - watches_before;
        assert!(read < READS as u64, "the server read all {read} requests of a client that reads nothing");
        let peak = memory(pid, "VmHWM");
        assert!(
            peak <= baseline + BOUND + SLACK,
            "the server grew {} MiB holding replies, past the bound and the slack",
            (peak - baseline) >> 20
        );
        for xid in 1..=2 * READS as u64 {
            match within("a reply", DEADLINE, slow.next()).await {
                Some(Ok(ServerMessage::Reply { xid: got, result: Ok(_), .. })) => assert_eq!(got, xid, "in order"),
                other => panic!("expected the reply to {xid}, got {other:?}"),
            }
        }
    })
    .await;
}

const LINGER_READS: u64 = 64;

/// A Ward client pipelines 64 reads of a 128 KiB node, reads nothing, and then sends nothing
/// either, so its session expires: the server closes the connection though the client never
/// takes what is still owed it (the connection would otherwise stay, its writer waiting on a
/// full socket, for as long as the client lives); the log says why, naming the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_closed_by_the_server_is_let_go_though_its_client_reads_nothing() {
    let _alone = serial().await;
    let server = ServerProcess::builder().admin().in_memory().flags(&["--min-session-timeout-ms", "1000"]).start();
    bounded(async {
        let other = connect(&server.addr_str()).await;
        other.create("/big", &vec![7; BIG], CreateMode::Persistent).await.expect("create /big");
        let admin = server.admin_addr();
        let open = || metric(admin, "ward_connections{listener=\"ward\"}");
        let stream = connect_from(LOCALHOST, server.addr(), SMALL_BUFFER).await.expect("connect");
        // Short, so that it expires soon, but long enough to be seen open first on a loaded
        // machine.
        let (mut slow, welcome) = native_session(stream, 3000).await;
        for i in 1..=LINGER_READS {
            let read = Request::GetData { path: "/big".into(), watch: false };
            slow.feed(ClientMessage::Request { xid: i, request: read }).await.expect("send");
        }
        slow.flush().await.expect("flush");
        wait_until("both connections are open", DEADLINE, || async { open() == 2 }).await;
        // 8 MiB of replies is more than the sockets' buffers hold (the kernel's send buffer
        // grows to 4 MiB at most): the writer waits on a full socket when the session expires.
        wait_until("the server lets the connection go", DEADLINE, || async { open() == 1 }).await;
        let log = server.log_tail();
        let session = welcome.session_id.to_string();
        assert!(
            log.lines().any(|l| l.contains("took none of what was still owed it") && l.contains(&session)),
            "no line naming the session {session}:\n{log}"
        );
        let unread = drain_until_closed(slow.get_mut()).await;
        assert!(unread < LINGER_READS * BIG as u64, "every reply was written after the session ended ({unread} bytes)");
        other.exists("/big").await.expect("the other client is answered");
    })
    .await;
}
