//! G21, requests in flight: a client that pipelines far more requests than
//! `--max-in-flight-per-connection` and reads none of the replies is held back at the cap,
//! as ZooKeeper does: the server stops reading its socket (TCP then stops the client) instead
//! of queueing its requests, so its memory does not grow with them, and every other client
//! keeps being answered; once the client reads, its replies come, in order, and the server
//! reads on (docs/security.md "Limits").

use super::{connect_from, memory, native_session};
use bytes::BytesMut;
use futures_util::StreamExt;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{Encoder, FramedRead};
use ward_client::{Client, CreateMode};
use ward_proto::{ClientMessage, FrameCodec, Request, ServerMessage, MAX_REPLY_FRAME};
use ward_testkit::{bounded, connect, serial, wait_until, within, ServerProcess, DEADLINE};

/// The cap the test sets.
const CAP: u64 = 16;
/// Writes the client pipelines: about 15 MB of requests, far more than the cap and than the
/// kernel's socket buffers hold on both sides (a few MB on loopback), so that most of them
/// can only wait in the client.
const WRITES: u64 = 1_000_000;
/// What the server's resident memory may grow by while it holds the client back. Without
/// the cap it would read and queue the writes as fast as it applies them (the replies of
/// writes do not count against `--max-outbound-bytes`): a hundred bytes or more each.
const SLACK: u64 = 32 << 20;
/// Replies read past the point where the server held the client back.
const READ_ON: u64 = 2_000;
/// The slow client's session must outlive the test however long it takes.
const SESSION_MS: u32 = 600_000;

/// The version of `/n`: how many of the slow client's writes are applied.
async fn applied(other: &Client) -> u64 {
    other.exists("/n").await.expect("exists").map_or(0, |s| u64::try_from(s.version).unwrap_or(0))
}

/// Every write, encoded, one after the other.
fn pipelined_writes() -> BytesMut {
    let mut codec = FrameCodec::<ServerMessage, ClientMessage>::new(MAX_REPLY_FRAME);
    let mut bytes = BytesMut::new();
    for xid in 1..=WRITES {
        let request = Request::SetData { path: "/n".into(), data: b"x".to_vec(), version: None };
        codec.encode(ClientMessage::Request { xid, request }, &mut bytes).expect("encode a write");
    }
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_pipelines_past_the_cap_and_reads_nothing_is_held_back() {
    let _alone = serial().await;
    let (cap, timeout) = (CAP.to_string(), SESSION_MS.to_string());
    let flags = ["--max-in-flight-per-connection", &cap, "--max-session-timeout-ms", &timeout];
    let server = ServerProcess::builder().in_memory().flags(&flags).start();
    bounded(async {
        let other = connect(&server.addr_str()).await;
        other.create("/n", b"", CreateMode::Persistent).await.expect("create /n");
        let pid = server.pid().expect("running");
        let stream = connect_from(IpAddr::V4(Ipv4Addr::LOCALHOST), server.addr(), Some(4096)).await.expect("connect");
        let (slow, _) = native_session(stream, SESSION_MS).await;
        let parts = slow.into_parts();
        assert!(parts.read_buf.is_empty(), "nothing but the welcome came yet");
        let (read, mut write) = parts.io.into_split();
        let writes = pipelined_writes();
        let baseline = memory(pid, "VmRSS");
        // Written in pieces, counting what the kernel took: the sender blocks once the
        // server stops reading and the socket buffers are full.
        let sent = Arc::new(AtomicUsize::new(0));
        let sender = tokio::spawn({
            let sent = sent.clone();
            async move {
                for piece in writes.chunks(16 << 10) {
                    write.write_all(piece).await.expect("send writes");
                    sent.fetch_add(piece.len(), Ordering::Relaxed);
                }
                write
            }
        });
        wait_until("the server has applied the first writes", DEADLINE, || async { applied(&other).await >= CAP })
            .await;
        // Until the server applies no more of them: none while another client is answered
        // 500 times. Without the cap it goes on reading and applying them (some 40,000 a
        // second here, in bursts) until every write is in.
        wait_until("the client is held back", DEADLINE, || async {
            let before = applied(&other).await;
            for _ in 0..500 {
                other.exists("/n").await.expect("another client is answered");
            }
            applied(&other).await == before
        })
        .await;
        let held_at = applied(&other).await;
        let peak = memory(pid, "VmHWM");
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        eprintln!(
            "held at {held_at} writes applied, {:.1} MB sent; the server grew {:.1} MiB",
            sent.load(Ordering::Relaxed) as f64 / 1e6,
            mib(peak.saturating_sub(baseline))
        );
        assert!(!sender.is_finished(), "the client sent all its writes: nothing held it back");
        assert!(held_at < WRITES / 2, "the server applied {held_at} of {WRITES} writes of a client that reads nothing");
        assert!(peak <= baseline + SLACK, "the server grew {:.1} MiB holding a client back", mib(peak - baseline));
        // The client reads at last: the replies come, in order, and the server reads on (a
        // few thousand past where it was held, at the cap's pace).
        let mut replies = FramedRead::new(read, FrameCodec::<ServerMessage, ClientMessage>::new(MAX_REPLY_FRAME));
        for xid in 1..=held_at + READ_ON {
            match within("a reply", DEADLINE, replies.next()).await {
                Some(Ok(ServerMessage::Reply { xid: got, result: Ok(_), .. })) => assert_eq!(got, xid, "in order"),
                other => panic!("expected the reply to {xid}, got {other:?}"),
            }
        }
        sender.abort();
    })
    .await;
}
