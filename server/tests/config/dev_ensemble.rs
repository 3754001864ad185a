//! `--dev-ensemble N`, the README's way to try an ensemble: a member killed with kill -9
//! leaves the others serving, the parent says which member stopped and how to start it
//! again, and `restart ID` on its stdin does.

use super::Spawned;
use ward_client::CreateMode;
use ward_testkit::server::STARTUP;
use ward_testkit::{bounded, connect, wait_for, DEADLINE};

/// A free port P with P+1, P+2 (clients), P+10..P+12 (peers) and P+20..P+22 (admin) free
/// too, at the time.
fn free_ports() -> u16 {
    for _ in 0..100 {
        let Ok(first) = std::net::TcpListener::bind("127.0.0.1:0") else { continue };
        let Ok(port) = first.local_addr().map(|a| a.port()) else { continue };
        drop(first);
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if port < 65000 && [0, 1, 2, 10, 11, 12, 20, 21, 22].iter().all(|d| free(port + d)) {
            return port;
        }
    }
    panic!("no run of free ports for a dev ensemble");
}

// G13: the dev ensemble is an ensemble: with one of three members killed, the other two
// keep acknowledging writes, and the member started again serves them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dev_ensemble_keeps_serving_when_a_member_is_killed_and_starts_it_again_on_request() {
    let port = free_ports();
    let addr = |i: u16| format!("127.0.0.1:{}", port + i - 1);
    let listen = addr(1);
    let mut dev =
        Spawned::start(&["--dev-ensemble", "3", "--listen", &listen, "--zk-listen", "off", "--data-dir", "dev"], &[]);
    dev.line_starting("ward-server ensemble of 3 listening on ", STARTUP);
    let console = dev.line_starting("web console: http://", DEADLINE);
    let member2 = dev.line_starting("member 2: pid ", DEADLINE);
    let pid = member2.trim_start_matches("member 2: pid ").split(',').next().expect("pid").to_string();
    let console = console.trim_start_matches("web console: http://").split('/').next().expect("address").to_string();
    let (status, _) = ward_testkit::http::get(console.parse().expect("console address"), "/");
    assert_eq!(status, 200, "the web console at the address printed");

    let killed = std::process::Command::new("kill").args(["-KILL", &pid]).status().expect("kill");
    assert!(killed.success());
    let said = dev.line_starting("member 2 stopped", DEADLINE);
    assert!(said.contains("SIGKILL") && said.contains("the other 2 keep serving"), "{said}");
    assert!(said.contains("`restart 2`") && said.contains("2.log"), "says how to start it again: {said}");
    bounded(async {
        let client = connect(&format!("{},{}", addr(1), addr(3))).await;
        for i in 0..20 {
            let path = format!("/while-2-is-down-{i}");
            wait_for("a write through the two members left", DEADLINE, || async {
                client.create(&path, b"x", CreateMode::Persistent).await.ok()
            })
            .await;
        }
        client.close().await.expect("close");
    })
    .await;

    dev.send("restart 2");
    let back = dev.line_starting("member 2 is back", STARTUP);
    assert!(back.ends_with(&addr(2)), "{back}");
    bounded(async {
        let client = connect(&addr(2)).await;
        client.sync("/").await.expect("sync");
        let stat = client.exists("/while-2-is-down-19").await.expect("exists");
        assert!(stat.is_some(), "the member started again has the writes made while it was down");
        client.close().await.expect("close");
    })
    .await;
    dev.terminate();
}
