//! A member cut off from the others and back (G27): Pre-Vote keeps it from raising its term
//! while it cannot win, so on its return it follows the leader the others kept.

use crate::harness::*;
use ward_client::CreateMode;
use ward_testkit::Ensemble;

// G27: a follower cut off from both others for longer than its election timeout (until it
// gives its clients up, 5 s), then healed, while a client writes through the others: the
// leader stays the leader in the same term, and the follower catches up behind it. Without
// Pre-Vote the follower's failed elections raise its term, and its return deposes the leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_cut_off_and_back_does_not_depose_the_leader() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let leader = ensemble.leader(&[]).await;
        let ids = ensemble.ids();
        let cut = *ids.iter().find(|id| **id != leader).expect("a follower");
        let others: Vec<String> = ids.iter().filter(|id| **id != cut).map(|id| ensemble.addr(*id)).collect();
        let client = connect(&others.join(",")).await;
        client.create("/g27", b"", CreateMode::Persistent).await.expect("create");
        let term = figure_of(&ensemble, leader, "raft_term").await.expect("the leader's term");

        // In contact with the leader first (it takes a session): only a member that was in
        // contact gives its clients up, and says so, once cut off.
        let cut_addr = ensemble.addr(cut);
        let on_cut = wait_for("the member to take a session", DEADLINE, || async {
            ward_client::Client::builder(&cut_addr).connect().await.ok()
        })
        .await;
        on_cut.close().await.expect("close");
        ensemble.isolate(cut);
        wait_until("the cut-off member gives its clients up", DEADLINE, || async {
            ensemble.log_tail(cut).contains("out of contact with a leader: closing client connections")
        })
        .await;
        for i in 0..20 {
            client.create(&format!("/g27/while-cut-{i}"), b"", CreateMode::Persistent).await.expect("write while cut");
        }
        ensemble.heal();
        let last = figure_of(&ensemble, leader, "raft_last_log_index").await.expect("the leader's last index");
        wait_until("the member is back and caught up", DEADLINE, || async {
            figure_of(&ensemble, cut, "raft_applied_index").await.is_some_and(|applied| applied >= last)
        })
        .await;
        client.create("/g27/after", b"", CreateMode::Persistent).await.expect("a write after the heal");

        assert_eq!(ensemble.leader(&[]).await, leader, "the leader the others kept still leads");
        let after = figure_of(&ensemble, leader, "raft_term").await.expect("the leader's term");
        assert_eq!(after, term, "the returning member raised the term (and deposed the leader)");
        let theirs = figure_of(&ensemble, cut, "raft_term").await.expect("the member's term");
        assert_eq!(theirs, term, "the returning member follows in the leader's term");
        client.close().await.expect("close");
    })
    .await
}
