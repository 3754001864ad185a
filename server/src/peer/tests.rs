//! The peer link: every message survives the wire, the hello keeps strangers out, and calls
//! tell "not sent" from "sent, no answer".

use super::client::{Identity, PeerClient, PeerError};
use super::listener::{check_hello, serve, PeerService};
use super::wire::*;
use crate::command::{Applied, Command, CommandOp, Outcome};
use crate::raft::types::LeaderId;
use crate::raft::types::{Entry, LogId, TypeConfig, Vote};
use openraft::error::{Fatal, RaftError};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, TransferLeaderRequest, VoteRequest, VoteResponse};
use openraft::{EntryPayload, SnapshotMeta};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use ward_proto::{ErrorCode, Op, Response, SessionId, SessionSecret};

fn round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(value: T) {
    let bytes = postcard::to_allocvec(&Envelope { id: 7, body: &value }).expect("encode");
    let back: Envelope<T> = postcard::from_bytes(&bytes).expect("decode");
    assert_eq!(back.id, 7);
    assert_eq!(format!("{:?}", back.body), format!("{value:?}"));
}

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(LeaderId { term, node_id: 2 }, index)
}

fn command() -> Command {
    Command {
        time_ms: 1_700_000_000_000,
        session: SessionId(9),
        xid: 3,
        op: CommandOp::Op(Op::Create {
            path: "/a".into(),
            data: b"x".to_vec(),
            mode: ward_proto::CreateMode::EphemeralSequential,
        }),
    }
}

#[test]
fn every_request_round_trips() {
    let vote = Vote::new_committed(3, 2);
    let entries: Vec<Entry> = vec![
        Entry { log_id: log_id(3, 10), payload: EntryPayload::Blank },
        Entry { log_id: log_id(3, 11), payload: EntryPayload::Normal(vec![command(), command()].into()) },
    ];
    round_trip(PeerRequest::AppendEntries(AppendEntriesRequest::<TypeConfig> {
        vote,
        prev_log_id: Some(log_id(3, 9)),
        leader_commit: Some(log_id(2, 8)),
        entries,
    }));
    round_trip(PeerRequest::Vote(VoteRequest::new(vote, Some(log_id(2, 4)))));
    round_trip(PeerRequest::PreVote(VoteRequest::new(vote, Some(log_id(2, 4)))));
    round_trip(PeerRequest::SnapshotChunk(SnapshotChunk {
        vote,
        meta: SnapshotMeta { last_log_id: Some(log_id(3, 5)), last_membership: Default::default() },
        offset: 1 << 20,
        data: vec![1, 2, 3],
        done: true,
    }));
    round_trip(PeerRequest::TransferLeader(TransferLeaderRequest::new(vote, 3, Some(log_id(3, 9)))));
    round_trip(PeerRequest::Forward(vec![
        command(),
        Command {
            time_ms: 5,
            session: SessionId(0),
            xid: 0,
            op: CommandOp::CreateSession { timeout_ms: 4000, secret: SessionSecret([7; 16]), owner: Some("o".into()) },
        },
    ]));
    round_trip(PeerRequest::Touch { sessions: vec![SessionId(1), SessionId(u64::MAX)], applied: Some(4) });
    round_trip(PeerRequest::ReadIndex);
    round_trip(PeerRequest::Admin(AdminRequest::AddMember { id: 4, addr: "10.0.0.4:7190".into() }));
    round_trip(PeerRequest::Admin(AdminRequest::RemoveMember { id: 1 }));
    round_trip(PeerRequest::Admin(AdminRequest::Members));
    round_trip(PeerHello {
        magic: PEER_MAGIC,
        version: PEER_VERSION,
        ensemble: "prod".into(),
        from: 1,
        to: 2,
        channel: Channel::Snapshot,
    });
    round_trip(HelloAnswer::Refused("no".into()));
}

#[test]
fn every_response_round_trips() {
    let vote = Vote::new(4, 1);
    round_trip(PeerResponse::AppendEntries(Ok(AppendEntriesResponse::Success)));
    round_trip(PeerResponse::AppendEntries(Ok(AppendEntriesResponse::PartialSuccess(Some(log_id(1, 2))))));
    round_trip(PeerResponse::AppendEntries(Ok(AppendEntriesResponse::Conflict)));
    round_trip(PeerResponse::AppendEntries(Ok(AppendEntriesResponse::HigherVote(vote))));
    round_trip(PeerResponse::AppendEntries(Err(RaftError::Fatal(Fatal::Stopped))));
    round_trip(PeerResponse::Vote(Ok(VoteResponse::new(vote, Some(log_id(1, 1)), true))));
    round_trip(PeerResponse::PreVote(Ok(VoteResponse::new(vote, Some(log_id(1, 1)), false))));
    round_trip(PeerResponse::SnapshotChunk(Ok(vote)));
    round_trip(PeerResponse::SnapshotChunk(Err("out of order".into())));
    round_trip(PeerResponse::TransferLeader(Ok(Ok(()))));
    let applied = Applied { zxid: 77, outcome: Outcome::Reply(Err(ErrorCode::NodeExists)) };
    let created = Applied { zxid: 78, outcome: Outcome::SessionCreated(SessionId(78)) };
    let ok = Applied { zxid: 79, outcome: Outcome::Reply(Ok(Response::Deleted)) };
    round_trip(PeerResponse::Forward(Ok((12, vec![applied, created, ok]))));
    round_trip(PeerResponse::Forward(Err(ForwardError::NotLeader(Some(3)))));
    round_trip(PeerResponse::Forward(Err(ForwardError::Unknown("t".into()))));
    round_trip(PeerResponse::Touch(Ok(vec![SessionId(4)])));
    round_trip(PeerResponse::ReadIndex(Ok(99)));
    round_trip(PeerResponse::ReadIndex(Err(ForwardError::NotLeader(None))));
    round_trip(PeerResponse::Admin(Ok(AdminReply::Done)));
    let member = ward_proto::MemberInfo {
        id: 2,
        addr: "h:1".into(),
        role: ward_proto::MemberRole::Learner,
        applied: Some(5),
        lag: None,
    };
    round_trip(PeerResponse::Admin(Ok(AdminReply::Members(vec![member]))));
    round_trip(PeerResponse::Admin(Err(ForwardError::Refused("learner not found".into()))));
}

#[test]
fn the_hello_is_checked() {
    let me = Identity { ensemble: "prod".into(), me: 2, tls: None, levels: Default::default() };
    let hello = PeerHello {
        magic: PEER_MAGIC,
        version: PEER_VERSION,
        ensemble: "prod".into(),
        from: 1,
        to: 2,
        channel: Channel::Raft,
    };
    assert_eq!(check_hello(&hello, &me), Ok(()));
    assert!(check_hello(&PeerHello { to: 3, ..hello.clone() }, &me).is_err(), "meant for another member");
    assert!(check_hello(&PeerHello { ensemble: "test".into(), ..hello.clone() }, &me).is_err(), "another ensemble");
    assert!(check_hello(&PeerHello { version: PEER_VERSION + 1, ..hello.clone() }, &me).is_err());
    // A member of the previous release (openraft 0.9, peer protocol 1) is told, in words an
    // operator can act on, why it cannot join and what to do.
    let refused = check_hello(&PeerHello { version: 1, ..hello.clone() }, &me).expect_err("version 1 refused");
    assert!(refused.starts_with("peer protocol 2 here, 1 there"), "{refused}");
    assert!(refused.contains("stop every member") && refused.contains("Upgrading"), "{refused}");
    assert!(check_hello(&PeerHello { magic: *b"WARD", ..hello }, &me).is_err());
}

/// Answers Touch with what it got; never answers ReadIndex.
struct Echo;

impl PeerService for Echo {
    async fn handle(&self, _from: u64, request: PeerRequest) -> PeerResponse {
        match request {
            PeerRequest::Touch { sessions, .. } => PeerResponse::Touch(Ok(sessions)),
            _ => std::future::pending().await,
        }
    }
}

async fn listening(identity: Identity) -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let cancel = CancellationToken::new();
    tokio::spawn(serve(listener, identity, Arc::new(Echo), cancel.clone(), TaskTracker::new()));
    (addr, cancel)
}

#[tokio::test]
async fn calls_multiplex_and_strangers_are_refused() {
    let (addr, cancel) =
        listening(Identity { ensemble: "prod".into(), me: 2, tls: None, levels: Default::default() }).await;
    let client = Arc::new(PeerClient::new(
        Identity { ensemble: "prod".into(), me: 1, tls: None, levels: Default::default() },
        2,
        Channel::Client,
    ));
    let long = Duration::from_secs(30);
    // Many calls at once on one connection, each answered with its own reply.
    let calls = (0..50u64).map(|i| {
        let client = client.clone();
        let addr = addr.clone();
        tokio::spawn(async move {
            client.call(&addr, PeerRequest::Touch { sessions: vec![SessionId(i)], applied: None }, long).await
        })
    });
    for (i, call) in calls.enumerate() {
        match call.await.expect("task") {
            Ok(PeerResponse::Touch(Ok(s))) => assert_eq!(s, vec![SessionId(i as u64)]),
            other => panic!("call {i}: {other:?}"),
        }
    }
    // Sent and never answered: the outcome is unknown.
    let silent = client.call(&addr, PeerRequest::ReadIndex, Duration::from_millis(200)).await;
    assert!(matches!(silent, Err(PeerError::Lost(2, _))), "{silent:?}");
    // A caller that thinks it reaches member 3, or another ensemble, never gets through.
    let wrong_member = PeerClient::new(
        Identity { ensemble: "prod".into(), me: 1, tls: None, levels: Default::default() },
        3,
        Channel::Raft,
    );
    let r = wrong_member.call(&addr, PeerRequest::Touch { sessions: vec![], applied: None }, long).await;
    assert!(matches!(r, Err(PeerError::Unreachable(3, _))), "{r:?}");
    let stranger = PeerClient::new(
        Identity { ensemble: "test".into(), me: 1, tls: None, levels: Default::default() },
        2,
        Channel::Raft,
    );
    let r = stranger.call(&addr, PeerRequest::Touch { sessions: vec![], applied: None }, long).await;
    assert!(matches!(r, Err(PeerError::Unreachable(2, _))), "{r:?}");
    // Nobody listening: not sent.
    cancel.cancel();
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let dead = closed.local_addr().expect("addr").to_string();
    drop(closed);
    let r = client.call(&dead, PeerRequest::Touch { sessions: vec![], applied: None }, long).await;
    assert!(matches!(r, Err(PeerError::Unreachable(2, _))), "{r:?}");
}
