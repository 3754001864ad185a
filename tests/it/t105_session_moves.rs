//! Sessions moving between members: what a session sent through a member it has left
//! never applies after it moved, and a member that does not know a session yet says so.

use crate::harness::*;
use std::net::SocketAddr;
use ward_proto::{
    ClientMessage, CreateMode, ErrorCode, Hello, Request, Response, ServerMessage, SessionId, SessionSecret,
};
use ward_testkit::{wait_for, Ensemble, DEADLINE};

/// How many times the move is tried: a member gives its clients up after 5 s without
/// contact with the leader, and on a loaded machine the move can take that long.
const ATTEMPTS: u32 = 5;

// G19: a write held on the link from a follower to the leader while its session resumes at
// another member reaches the leader after that move was logged, and is refused
// (`SessionMoved`) instead of applied; the session's writes through its new member apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_held_at_a_member_the_session_left_is_refused_when_it_arrives() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let addr = |id| ensemble.addr(id).parse::<SocketAddr>().expect("member address");
        for attempt in 1..=ATTEMPTS {
            // Members start out of contact and can fall out of it on a loaded machine: begin
            // each attempt with every member welcoming sessions.
            for id in ensemble.ids() {
                wait_for("the member to welcome a session", DEADLINE, || welcomes(addr(id))).await;
            }
            let leader = ensemble.leader(&[]).await;
            let followers: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
            let (a, b) = (followers[0], followers[1]);
            let (mut on_a, welcome) = raw_session(addr(a), 10_000).await;
            let path = format!("/late-{attempt}");
            ensemble.hold(a, leader);
            let create = Request::Create { path: path.clone(), data: vec![], mode: CreateMode::Persistent };
            send(&mut on_a, ClientMessage::Request { xid: 1, request: create }).await;
            // The client moves to b while its write waits on a's link to the leader.
            let mut on_b = frame(raw_connect(addr(b)).await);
            let resume = Hello::new(Some((welcome.session_id, welcome.secret)), 10_000, 0);
            send(&mut on_b, ClientMessage::Hello(resume)).await;
            let moved = recv(&mut on_b).await;
            ensemble.release(a, leader);
            if !matches!(moved, Some(ServerMessage::Welcome(ref w)) if w.resumed) {
                eprintln!("attempt {attempt}: member {b} did not take the session ({moved:?}); trying again");
                continue;
            }
            let held = loop {
                match recv(&mut on_a).await {
                    Some(ServerMessage::Reply { xid: 1, result, .. }) => break Some(result),
                    Some(_) => continue,
                    None => break None,
                }
            };
            let Some(held) = held else {
                eprintln!("attempt {attempt}: member {a} gave its clients up during the hold; trying again");
                continue;
            };
            assert_eq!(held, Err(ErrorCode::SessionMoved), "the held write, arriving after the move");
            call(&mut on_b, 2, Request::Sync { path: "/".into() }).await.expect("sync at b");
            let seen = call(&mut on_b, 3, Request::Exists { path: path.clone(), watch: false }).await;
            assert_eq!(seen, Ok(Response::Exists(None)), "{path} was never applied");
            let after = Request::Create { path: format!("{path}-moved"), data: vec![], mode: CreateMode::Persistent };
            assert!(call(&mut on_b, 4, after).await.is_ok(), "the session writes through its new member");
            return;
        }
        panic!("no attempt of {ATTEMPTS} got the session moved while its write was held");
    })
    .await;
}

// G15: a member that has not yet applied a session's creation cannot know the session, and
// answers its resume "try another" (`Unavailable`), never "expired", which would end for good
// a session the leader keeps. Once it has caught up it takes the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_behind_a_sessions_creation_answers_try_another_never_expired() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let addr = |id| ensemble.addr(id).parse::<SocketAddr>().expect("member address");
        for id in ensemble.ids() {
            wait_for("the member to welcome a session", DEADLINE, || welcomes(addr(id))).await;
        }
        let leader = ensemble.leader(&[]).await;
        let behind = ensemble.ids().into_iter().find(|id| *id != leader).expect("a follower");
        ensemble.hold(leader, behind);
        // Long enough to outlive the catching up on a loaded machine: the session is kept
        // alive only by its hello and the resumes.
        let (_on_leader, welcome) = raw_session(addr(leader), 30_000).await;
        let credentials = (welcome.session_id, welcome.secret);
        let resume = || async move {
            let mut conn = frame(raw_connect(addr(behind)).await);
            send(&mut conn, ClientMessage::Hello(Hello::new(Some(credentials), 30_000, 0))).await;
            recv(&mut conn).await
        };
        let early = resume().await;
        println!("resume at member {behind} before it applied the session's creation: {early:?}");
        // For that reason, not another (such as being out of contact with the leader).
        assert!(
            matches!(early, Some(ServerMessage::Refused { code: ErrorCode::Unavailable, ref reason })
                if reason.contains("newer than this member's state")),
            "a member behind the session's creation must say try another: {early:?}"
        );

        ensemble.release(leader, behind);
        let taken = wait_for("the caught-up member to take the session", DEADLINE, || async {
            match resume().await {
                Some(ServerMessage::Refused { code: ErrorCode::Unavailable, .. }) => None,
                other => Some(other),
            }
        })
        .await;
        assert!(matches!(taken, Some(ServerMessage::Welcome(ref w)) if w.resumed), "{taken:?}");
    })
    .await;
}

// G15: a session id this ensemble never had (made up, or from a wiped or restored ensemble)
// is answered "expired" by every member, followers included, once it has caught up with the
// leader: the client then starts a new session instead of trying members forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_answers_a_session_it_never_had_expired() {
    bounded(async {
        let ensemble = Ensemble::start(3, &[]).await;
        let addr = |id| ensemble.addr(id).parse::<SocketAddr>().expect("member address");
        for id in ensemble.ids() {
            wait_for("the member to welcome a session", DEADLINE, || welcomes(addr(id))).await;
        }
        // Far ahead of every member's state, as kazoo's own test_with_bad_sessionid uses.
        let unknown = (SessionId(0x13_498b_ea18), SessionSecret([7; 16]));
        for id in ensemble.ids() {
            // "Try another" is allowed while a loaded member is slow to catch up; anything
            // else must be the expiry.
            let answer = wait_for("an answer other than try another", DEADLINE, || async move {
                let mut conn = frame(raw_connect(addr(id)).await);
                send(&mut conn, ClientMessage::Hello(Hello::new(Some(unknown), 10_000, 0))).await;
                match recv(&mut conn).await {
                    Some(ServerMessage::Refused { code: ErrorCode::Unavailable, reason }) => {
                        eprintln!("member {id}: {reason}; asking again");
                        None
                    }
                    other => Some(other),
                }
            })
            .await;
            assert!(
                matches!(answer, Some(ServerMessage::Refused { code: ErrorCode::SessionExpired, .. })),
                "member {id} must call a session it never had expired: {answer:?}"
            );
        }
    })
    .await;
}

/// Whether the member at `addr` welcomes a new session now (it is in contact with a leader).
async fn welcomes(addr: SocketAddr) -> Option<()> {
    let mut conn = frame(raw_connect(addr).await);
    send(&mut conn, ClientMessage::Hello(Hello::new(None, 10_000, 0))).await;
    match recv(&mut conn).await {
        Some(ServerMessage::Welcome(_)) => Some(()),
        _ => None,
    }
}
