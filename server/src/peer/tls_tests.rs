//! Mutual TLS on the peer link (docs/security.md "TLS", "The peer link"): members with
//! certificates from the peer CA talk; a caller with a certificate from another CA, or
//! without TLS, is refused before its hello, and so is a listener the caller cannot trust.

use super::client::{Identity, PeerClient, PeerError};
use super::listener::{serve, PeerService};
use super::wire::{Channel, PeerRequest, PeerResponse};
use crate::tls::{PeerTls, PeerTlsFiles};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use ward_proto::SessionId;
use ward_testkit::tls::{CertFiles, TestCa};
use ward_testkit::TempDir;

struct Echo;

impl PeerService for Echo {
    async fn handle(&self, _from: u64, request: PeerRequest) -> PeerResponse {
        match request {
            PeerRequest::Touch { sessions, .. } => PeerResponse::Touch(Ok(sessions)),
            _ => PeerResponse::Touch(Ok(Vec::new())),
        }
    }
}

fn identity(me: u64, tls: Option<Arc<PeerTls>>) -> Identity {
    Identity { ensemble: "prod".into(), me, tls, levels: Default::default() }
}

fn peer_tls(files: &CertFiles, ca: &TestCa) -> Option<Arc<PeerTls>> {
    let files = PeerTlsFiles { cert: files.cert.clone(), key: files.key.clone(), ca: ca.file().to_path_buf() };
    Some(Arc::new(files.load().expect("load the peer TLS files")))
}

async fn call(from: Identity, addr: &str) -> Result<PeerResponse, PeerError> {
    let client = PeerClient::new(from, 2, Channel::Raft);
    let touch = PeerRequest::Touch { sessions: vec![SessionId(7)], applied: None };
    client.call(addr, touch, Duration::from_secs(30)).await
}

#[tokio::test]
async fn members_with_the_peer_cas_certificates_talk_and_others_are_refused() {
    let dir = TempDir::new("peer-tls");
    let (ca, other_ca) = (TestCa::new(dir.path(), "peer-ca"), TestCa::new(dir.path(), "other-ca"));
    let (one, two, stranger) = (ca.server("member-1"), ca.server("member-2"), other_ca.server("stranger"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let cancel = CancellationToken::new();
    tokio::spawn(serve(listener, identity(2, peer_tls(&two, &ca)), Arc::new(Echo), cancel.clone(), TaskTracker::new()));

    let answered = call(identity(1, peer_tls(&one, &ca)), &addr).await;
    assert!(matches!(answered, Ok(PeerResponse::Touch(Ok(ref s))) if *s == vec![SessionId(7)]), "{answered:?}");
    // A certificate from another CA: the listener refuses it (and the caller, trusting only
    // its own CA, refuses the listener's).
    let refused = call(identity(1, peer_tls(&stranger, &other_ca)), &addr).await;
    assert!(matches!(refused, Err(PeerError::Unreachable(2, _))), "{refused:?}");
    // The other CA's certificate, trusting the right CA: the listener still refuses it.
    let refused = call(identity(1, peer_tls(&stranger, &ca)), &addr).await;
    assert!(matches!(refused, Err(PeerError::Unreachable(2, _))), "{refused:?}");
    // No TLS at all on a TLS link.
    let plain = call(identity(1, None), &addr).await;
    assert!(matches!(plain, Err(PeerError::Unreachable(2, _))), "{plain:?}");
    // The listener keeps serving members.
    let again = call(identity(1, peer_tls(&one, &ca)), &addr).await;
    assert!(matches!(again, Ok(PeerResponse::Touch(Ok(_)))), "{again:?}");
    cancel.cancel();
}
