//! Two servers in one process count apart (docs/operations.md, "Metrics"): each server's
//! figures are its own, so in-process test servers, and the members of a simulated
//! ensemble, can be told apart.

use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use ward_client::{Client, CreateMode};
use ward_server::config::Config;
use ward_server::local::Local;
use ward_server::metrics::Metrics;
use ward_server::raft::{self as durable, RaftOptions};
use ward_server::replication::Replication;
use ward_testkit::{bounded, TempDir};

/// A durable server on its own temporary directory and port: its address, its figures, and
/// what stops it.
async fn start(dir: &TempDir) -> (String, Arc<Metrics>, tokio::sync::oneshot::Sender<()>) {
    let (core, local) = Local::serving();
    let metrics = local.metrics.clone();
    let log = durable::open(dir.path(), core.clone(), local.clone(), RaftOptions::default()).await.expect("open");
    let log: Arc<dyn Replication> = Arc::new(log);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        ward_server::serve_with(listener, Config::default(), core, local, log, shutdown).await.expect("serve");
    });
    (addr, metrics, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_in_one_process_report_their_own_figures() {
    bounded(async {
        let (dir_a, dir_b) = (TempDir::new("metrics-a"), TempDir::new("metrics-b"));
        let (addr_a, a, stop_a) = start(&dir_a).await;
        let (_addr_b, b, stop_b) = start(&dir_b).await;
        let (b_requests, b_fsyncs) = (b.ward.answered_total(), b.log_fsyncs());
        let (a_requests, a_fsyncs) = (a.ward.answered_total(), a.log_fsyncs());

        let client =
            Client::builder(&addr_a).session_timeout(Duration::from_secs(10)).connect().await.expect("connect");
        for i in 0..10 {
            client.create(&format!("/apart-{i}"), b"x", CreateMode::Persistent).await.expect("create");
        }
        client.close().await.expect("close");

        assert!(a.ward.answered_total() >= a_requests + 10, "server A counted the creates it answered");
        assert!(a.log_fsyncs() > a_fsyncs, "server A counted the fsyncs that made them durable");
        assert!(a.ward.bytes_in.load(std::sync::atomic::Ordering::Relaxed) > 0, "server A counted the bytes read");
        assert_eq!(b.ward.answered_total(), b_requests, "server B answered nothing");
        assert_eq!(b.log_fsyncs(), b_fsyncs, "server B wrote nothing");
        assert_eq!(b.ward.bytes_in.load(std::sync::atomic::Ordering::Relaxed), 0, "server B read nothing");
        let _ = (stop_a.send(()), stop_b.send(()));
    })
    .await
}
