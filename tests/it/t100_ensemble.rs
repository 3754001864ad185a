//! A replicated ensemble: members formed from processes started in any order, serving
//! writes and reads through every member.

use crate::harness::*;
use ward_client::{CreateMode, MemberRole};
use ward_testkit::Ensemble;

// G13: three processes started in random order form one ensemble; every member takes
// writes (followers forward them) and, after `sync`, reads every write made through any
// other member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_in_random_order_serve_writes_and_synced_reads_everywhere() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let mut clients = Vec::new();
        for id in ensemble.ids() {
            // Each client knows one member only, so it is served by that one.
            let client = connect(&ensemble.addr(id)).await;
            client
                .create(&format!("/from-{id}"), id.to_string().as_bytes(), CreateMode::Persistent)
                .await
                .expect("create");
            clients.push((id, client));
        }
        for (id, client) in &clients {
            client.sync("/").await.expect("sync");
            for other in ensemble.ids() {
                let (data, _) = client.get_data(&format!("/from-{other}")).await.expect("read after sync");
                assert_eq!(data, other.to_string().as_bytes(), "member {id} reads the write made through {other}");
            }
        }
        let members = clients[0].1.members().await.expect("members");
        assert_eq!(members.len(), 3, "{members:?}");
        let leaders: Vec<u64> = members.iter().filter(|m| m.role == MemberRole::Leader).map(|m| m.id).collect();
        // One leader, a member (not necessarily the first: a loaded machine may have seen
        // an election since).
        assert_eq!(leaders.len(), 1, "one leader: {members:?}");
        assert!(ensemble.ids().contains(&leaders[0]), "{members:?}");
        for (_, client) in clients {
            client.close().await.expect("close");
        }
    })
    .await
}
