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

/// Member `id`'s row of `ward members` asked of the leader, when that row contains `says`
/// (and the leader answered as the leader: a member that no longer leads lists no contact).
async fn members_row(ensemble: &Ensemble, among: &[u64], id: u64, says: &str) -> Option<String> {
    let leader = ensemble.try_leader(among, DEADLINE).await.ok()?;
    let out = run_cli(&ensemble.addr(leader), &["members"]).await;
    let row = out.stdout.lines().find(|l| l.split_whitespace().next() == Some(&id.to_string()))?.to_owned();
    row.contains(says).then_some(row)
}

/// Member `id` in the console's `/api/ensemble` on member `at`.
async fn console_member(ensemble: &Ensemble, at: u64, id: u64) -> Option<serde_json::Value> {
    let view = ensemble_view(ensemble.admin_addr(at)).await?;
    view["members"].as_array()?.iter().find(|m| m["id"] == id).cloned()
}

// docs/operations.md, "Members": `ward members` asked of the leader says that a member
// killed with kill -9 is unreachable, with how long ago it was last heard from and no
// applied index or lag (the last ones are not current), as the console's ensemble view
// does (`/api/ensemble`); asked of a follower, it names the leader, which alone knows.
// Once the member is restarted, it is reachable again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ward_members_says_a_killed_member_is_unreachable_until_it_is_back() {
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let ids = ensemble.ids();
        let leader = ensemble.leader(&[]).await;
        let victim = ids.iter().copied().find(|&id| id != leader).expect("a follower");
        // Two spaces: the CONTACT column, not the end of "unreachable".
        let reachable = || members_row(&ensemble, &[], victim, "  reachable");
        wait_for("ward members says the follower is reachable", DEADLINE, reachable).await;

        ensemble.member(victim).kill9_now();
        let rest: Vec<u64> = ids.iter().copied().filter(|&id| id != victim).collect();
        let gone = || members_row(&ensemble, &rest, victim, "unreachable (");
        let row = wait_for("ward members says the killed member is unreachable", DEADLINE, gone).await;
        let columns: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(columns[3..5], ["-", "-"], "no applied index or lag for a dead member: {row}");
        let console = || async {
            let leader = ensemble.try_leader(&rest, DEADLINE).await.ok()?;
            console_member(&ensemble, leader, victim).await.filter(|m| m["contact"] == "unreachable")
        };
        let member = wait_for("the console says the killed member is unreachable", DEADLINE, console).await;
        assert!(member["lag"].is_null() && member["applied"].is_null(), "{member}");

        let through_follower = || async {
            let leader = ensemble.try_leader(&rest, DEADLINE).await.ok()?;
            let follower = rest.iter().copied().find(|&id| id != leader)?;
            let asked = run_cli(&ensemble.addr(follower), &["members"]).await.success().stdout;
            asked.contains(&format!("known only to the leader (member {leader})")).then_some(())
        };
        wait_for("a follower names the leader, which alone knows", DEADLINE, through_follower).await;

        ensemble.member(victim).restart_now();
        let back = || members_row(&ensemble, &[], victim, "  reachable");
        wait_for("ward members says the restarted member is reachable", DEADLINE, back).await;
    })
    .await
}
