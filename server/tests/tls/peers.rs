//! G22 on the peer link (docs/security.md "TLS", "The peer link"): members started with
//! `--peer-tls-cert`, `--peer-tls-key` and `--peer-tls-ca` replicate over mutual TLS; a member
//! whose peer certificate is not from the peer CA is refused by the others and cannot catch
//! up, while they go on serving; given the right certificate it joins in again.

use super::Pki;
use ward_client::{CreateMode, MemberRole};
use ward_testkit::{bounded, connect, member_has, wait_until, within, Ensemble, DEADLINE};

fn peer_flags<'a>(cert: &'a ward_testkit::tls::CertFiles, ca: &'a str) -> [&'a str; 6] {
    ["--peer-tls-cert", cert.cert_str(), "--peer-tls-key", cert.key_str(), "--peer-tls-ca", ca]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_replicate_over_mutual_tls_and_a_member_with_a_foreign_certificate_is_refused() {
    let pki = Pki::new();
    let member = pki.ca.server("member");
    let stranger = pki.other_ca.server("stranger-member");
    let ca = pki.ca.file_str();
    let mut ensemble = Ensemble::start(3, &peer_flags(&member, ca)).await;
    bounded(async {
        ensemble.leader(&[]).await;
        let writer = connect(&ensemble.connect_string()).await;
        writer.create("/before", b"1", CreateMode::Persistent).await.expect("create /before");
        ensemble.wait_all_have("/before").await;
        // Member 3 comes back with a peer certificate from another CA.
        let foreign = peer_flags(&stranger, ca);
        tokio::task::block_in_place(|| ensemble.member(3).restart_with(&foreign));
        let (one, two) = (ensemble.addr(1), ensemble.addr(2));
        let writer = connect(&format!("{one},{two}")).await;
        writer.create("/after", b"2", CreateMode::Persistent).await.expect("members 1 and 2 still take writes");
        wait_until("members 1 or 2 refuse member 3's peer connections", DEADLINE, || async {
            let refusing = |id| ensemble.log_tail(id).contains("peer connection refused: TLS handshake failed");
            refusing(1) || refusing(2)
        })
        .await;
        let members = within("members", DEADLINE, writer.members()).await.expect("members");
        let leader = members.iter().find(|m| m.role == MemberRole::Leader).expect("a leader");
        let third = members.iter().find(|m| m.id == 3).expect("member 3 is listed");
        assert_ne!(leader.id, 3, "{members:?}");
        assert!(third.applied.unwrap_or(0) < leader.applied.unwrap_or(0), "member 3 caught up: {members:?}");
        // With the peer CA's certificate again (a later flag wins) it catches up.
        tokio::task::block_in_place(|| ensemble.member(3).restart_with(&peer_flags(&member, ca)));
        let third = ensemble.addr(3);
        wait_until("member 3 has /after", DEADLINE, || member_has(&third, "/after")).await;
    })
    .await;
}
