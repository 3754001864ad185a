//! The ZooKeeper port at the byte level: four-letter words, frame order (a notification
//! before any reply that shows its change, never before the reply that armed its watch),
//! expired-session handshakes, and bad input dropped without disturbing other clients.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use ward_testkit::zk::raw::{create, four_letters, path_watch, set_data, Raw, LIMIT};
use ward_testkit::ServerProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_letter_words_answer_in_zookeepers_format() {
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let zk = ward.zk_addr_str();
    let (mut raw, _) = Raw::connect(&zk, 0, &[0; 16]).await;
    raw.request(1, &create("/w")).await;
    raw.request(4, &path_watch("/w", true)).await;
    assert_eq!(raw.header().await.1, 0);
    assert_eq!(raw.header().await.1, 0);

    assert_eq!(four_letters(&zk, b"ruok").await, "imok");
    assert_eq!(four_letters(&zk, b"isro").await, "rw");
    let srvr = four_letters(&zk, b"srvr").await;
    assert!(srvr.starts_with("Zookeeper version: 3.8.0-ward"), "{srvr}");
    assert!(srvr.contains("Mode: standalone\n") && srvr.contains("Zxid: 0x"), "{srvr}");
    let stat = four_letters(&zk, b"stat").await;
    assert!(stat.contains("Clients:\n /127.0.0.1:") && stat.contains("Node count: 2\n"), "{stat}");
    let mntr = four_letters(&zk, b"mntr").await;
    assert!(mntr.contains("zk_server_state\tstandalone\n") && mntr.contains("zk_watch_count\t1\n"), "{mntr}");
    assert!(mntr.contains("zk_znode_count\t2\n"), "{mntr}");
    let conf = four_letters(&zk, b"conf").await;
    assert!(conf.contains("minSessionTimeout=4000\n") && conf.contains("maxSessionTimeout=40000\n"), "{conf}");
    let cons = four_letters(&zk, b"cons").await;
    assert!(cons.contains(&format!("sid={:#x}", raw.session)), "{cons}");
    assert!(four_letters(&zk, b"envi").await.contains("zookeeper.version=3.8.0"));
    assert_eq!(four_letters(&zk, b"wchs").await, "1 connections watching 1 paths\nTotal watches:1\n");
    assert_eq!(four_letters(&zk, b"dump").await, "dump is not executed because it is not in the whitelist.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_go_before_replies_that_show_the_change_and_after_the_one_that_armed() {
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let zk = ward.zk_addr_str();
    let (mut a, _) = Raw::connect(&zk, 0, &[0; 16]).await;
    let (mut b, _) = Raw::connect(&zk, 0, &[0; 16]).await;
    let mut raced = 0;
    for round in 0..50 {
        // A fresh node per round, so no watch is left over from an earlier one.
        let node = format!("/n{round}");
        let created = b.request(1, &create(&node)).await;
        assert_eq!(b.header().await, (created, 0));
        // A arms a data watch while B changes the node as fast as it can: the event must
        // come after the reply that armed the watch (or the client would drop it) and
        // before A's next reply, which shows the change.
        let armed = a.request(4, &path_watch(&node, true)).await;
        let set = b.request(5, &set_data(&node)).await;
        let reply = a.frame().await.expect("reply");
        assert_eq!(&reply[0..4], &armed.to_be_bytes(), "round {round}: the arming reply comes first");
        // getData: data (4 + 3 bytes "new", or 0 at first), then the stat: version after 4 longs.
        let data_len = i32::from_be_bytes(reply[16..20].try_into().expect("len")).max(0) as usize;
        let at = 20 + data_len + 32;
        let seen_version = i32::from_be_bytes(reply[at..at + 4].try_into().expect("version"));
        let set_reply = b.frame().await.expect("set reply");
        let set_version = i32::from_be_bytes(set_reply[48..52].try_into().expect("version"));
        assert_eq!(&set_reply[0..4], &set.to_be_bytes());
        let next = a.request(3, &path_watch(&node, false)).await;
        if seen_version < set_version {
            assert_eq!(a.header().await, (-1, 0), "round {round}: the notification precedes the next reply");
            raced += 1;
        }
        assert_eq!(a.header().await, (next, 0), "round {round}");
    }
    // Whether the rounds above raced depends on scheduling; this one always does. A single
    // connection pipelines the arming read and the change: the read is answered first (it
    // arms the watch and shows the old version), the notification follows it, and the write's
    // reply, which shows the change, comes last.
    for round in 0..10 {
        let node = format!("/p{round}");
        let created = a.request(1, &create(&node)).await;
        assert_eq!(a.header().await, (created, 0));
        let armed = a.request(4, &path_watch(&node, true)).await;
        let set = a.request(5, &set_data(&node)).await;
        assert_eq!(a.header().await, (armed, 0), "round {round}: the arming reply comes first");
        assert_eq!(a.header().await, (-1, 0), "round {round}: then the notification");
        assert_eq!(a.header().await, (set, 0), "round {round}: then the reply showing the change");
    }
    eprintln!("{raced} of 50 rounds across connections raced the watch against the change");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_or_unknown_session_gets_a_zero_timeout() {
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let zk = ward.zk_addr_str();
    let (mut a, timeout) = Raw::connect(&zk, 0, &[0; 16]).await;
    assert_eq!(timeout, 10_000);
    let (session, passwd) = (a.session, a.passwd.clone());
    let (_b, resumed) = Raw::connect(&zk, session, &passwd).await;
    assert_eq!(resumed, 10_000, "a live session resumes with its password");
    let (_c, wrong) = Raw::connect(&zk, session, &[9; 16]).await;
    assert_eq!(wrong, 0, "a wrong password looks like an expired session");
    let (mut d, _) = Raw::connect(&zk, session, &passwd).await;
    let close = d.request(-11, &[]).await;
    assert_eq!(d.header().await, (close, 0));
    assert!(d.frame().await.is_none(), "closeSession closes the connection");
    assert!(a.frame().await.is_none(), "the session's older connection was closed when it moved");
    let (_e, gone) = Raw::connect(&zk, session, &passwd).await;
    assert_eq!(gone, 0, "a closed session is expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_dropped_and_other_clients_keep_working() {
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let zk = ward.zk_addr_str();
    let (mut good, _) = Raw::connect(&zk, 0, &[0; 16]).await;
    let cases: [(&str, Vec<u8>); 4] = [
        ("garbage", b"\x00\x00\x00\x10garbage-garbage!".to_vec()),
        ("2 GiB length prefix", vec![0x80, 0, 0, 0, 1, 2, 3]),
        ("truncated packet", vec![0, 0, 0, 100, 1, 2, 3]),
        ("over jute.maxbuffer", (0x100000u32).to_be_bytes().to_vec()),
    ];
    for (what, bytes) in cases {
        let mut s = TcpStream::connect(&zk).await.expect("connect");
        s.write_all(&bytes).await.expect("write");
        if what == "truncated packet" {
            s.shutdown().await.expect("half-close");
        }
        let mut rest = Vec::new();
        let started = std::time::Instant::now();
        let read = tokio::time::timeout(LIMIT, s.read_to_end(&mut rest)).await.expect("dropped in time");
        eprintln!("{what}: dropped after {:?}", started.elapsed());
        assert!(read.is_err() || rest.is_empty(), "{what}: got {rest:?}");
        // The good client is unaffected.
        let xid = good.request(3, &path_watch("/", false)).await;
        assert_eq!(good.header().await, (xid, 0), "after {what}");
    }
    // A bad request after a good handshake drops only that connection.
    let (mut bad, _) = Raw::connect(&zk, 0, &[0; 16]).await;
    bad.request(1, &[0xff, 0xff]).await;
    assert!(bad.frame().await.is_none(), "a malformed create closes its connection");
    let xid = good.request(3, &path_watch("/", false)).await;
    assert_eq!(good.header().await, (xid, 0));
}

/// A numeric `mntr` row.
fn mntr_row(mntr: &str, key: &str) -> u64 {
    let row = mntr.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix('\t'));
    row.and_then(|v| v.trim().parse().ok()).unwrap_or_else(|| panic!("no numeric {key} in\n{mntr}"))
}

// `mntr`'s counters move with traffic: packets in and out, nodes and watches
// (docs/operations.md "Metrics": the same numbers as /metrics).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mntr_counters_move_with_traffic() {
    let ward = ServerProcess::builder().zookeeper().in_memory().start();
    let zk = ward.zk_addr_str();
    let (mut raw, _) = Raw::connect(&zk, 0, &[0; 16]).await;
    let before = four_letters(&zk, b"mntr").await;
    raw.request(1, &create("/m")).await;
    raw.request(4, &path_watch("/m", true)).await;
    assert_eq!(raw.header().await.1, 0);
    assert_eq!(raw.header().await.1, 0);
    let after = four_letters(&zk, b"mntr").await;
    for key in ["zk_packets_received", "zk_packets_sent"] {
        assert!(mntr_row(&after, key) >= mntr_row(&before, key) + 2, "{key}: {before}\n---\n{after}");
    }
    assert_eq!(mntr_row(&after, "zk_znode_count"), mntr_row(&before, "zk_znode_count") + 1);
    assert_eq!(mntr_row(&after, "zk_watch_count"), mntr_row(&before, "zk_watch_count") + 1);
    // The session's connection, and the one asking: an earlier four-letter connection is
    // counted until the server has finished closing it, which may be just after its answer.
    ward_testkit::wait_until("mntr counts the session's connection and its own", ward_testkit::DEADLINE, || async {
        mntr_row(&four_letters(&zk, b"mntr").await, "zk_num_alive_connections") == 2
    })
    .await;
}
