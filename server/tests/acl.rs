//! G24 through Ward's own protocol, on real server processes: digest-protected nodes,
//! credentials (wrong, unknown, shown again after a reconnect), ACLs and their versions,
//! recipe directories, the super user; ACLs surviving kill -9 and a leader change; and no
//! password or digest in the log (docs/security.md).

use ward_client::{digest_id, perms, Acl, Client, CreateMode, Error, LockKind, SessionState};
use ward_testkit::{bounded, connect, connect_as, wait_for, wait_state, Ensemble, ServerProcess, DEADLINE};

const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";
const ALICE: (&str, &str) = ("digest", "alice:secret");
const EVE: (&str, &str) = ("digest", "alice:wrong");

fn alice_all() -> Vec<Acl> {
    vec![Acl::new(perms::ALL, "digest", &digest_id("alice:secret"))]
}

/// `[alice: everything, anyone: read]`.
fn alice_writes_all_read() -> Vec<Acl> {
    let mut acl = alice_all();
    acl.push(Acl::new(perms::READ, "world", "anyone"));
    acl
}

/// The operations G24 guards, on `path` and its child `path/c`, as `client` sees them.
async fn access(client: &Client, path: &str) -> [Result<(), Error>; 4] {
    [
        client.get_data(path).await.map(drop),
        client.set_data(path, b"x", None).await.map(drop),
        client.create(&format!("{path}/new"), b"", CreateMode::Persistent).await.map(drop),
        client.delete(&format!("{path}/c"), None).await,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_node_refuses_reads_and_writes_without_the_right_credentials() {
    let ward = ServerProcess::builder().in_memory().start();
    bounded(async {
        let alice = connect_as(&ward.addr_str(), &[ALICE]).await;
        alice.create_with_acl("/p", b"d", CreateMode::Persistent, &Acl::creator_all()).await.expect("create");
        alice.create("/p/c", b"", CreateMode::Persistent).await.expect("child");
        for stranger in [connect(&ward.addr_str()).await, connect_as(&ward.addr_str(), &[EVE]).await] {
            let refused = access(&stranger, "/p").await;
            assert!(refused.iter().all(|r| *r == Err(Error::NoAuth)), "{refused:?}");
            assert_eq!(stranger.exists("/p").await, Err(Error::NoAuth), "exists on a node it cannot read");
            assert_eq!(stranger.exists("/p/none").await, Ok(None), "a missing node is no secret");
        }
        // The same client, once it shows the password, may do everything.
        let late = connect(&ward.addr_str()).await;
        late.add_auth("digest", "alice:secret").await.expect("add_auth");
        assert_eq!(access(&late, "/p").await, [Ok(()), Ok(()), Ok(()), Ok(())]);
    })
    .await;
}

/// A wrong password is not refused by `add_auth` (the server keeps no passwords, as
/// ZooKeeper keeps none): it is an identity no ACL names. A scheme the server cannot
/// authenticate fails with AuthFailed: at connect, the connect fails; later, the call
/// does and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_scheme_fails_with_auth_failed_and_a_wrong_password_with_no_auth() {
    let ward = ServerProcess::builder().in_memory().start();
    bounded(async {
        let addr = ward.addr_str();
        let alice = connect_as(&addr, &[ALICE]).await;
        alice.create_with_acl("/p", b"d", CreateMode::Persistent, &alice_all()).await.expect("create");
        let eve = connect(&addr).await;
        assert_eq!(eve.add_auth("digest", "alice:wrong").await, Ok(()));
        assert_eq!(eve.get_data("/p").await, Err(Error::NoAuth));
        assert_eq!(eve.add_auth("unknown-scheme", "x").await, Err(Error::AuthFailed));
        assert_eq!(eve.add_auth("x509", "").await, Err(Error::AuthFailed), "no client certificate");
        assert_eq!(eve.state(), SessionState::Connected);
        assert!(eve.exists("/").await.is_ok(), "the session goes on");
        let refused = Client::builder(&addr).auth("unknown-scheme", "x").connect().await;
        assert_eq!(refused.err(), Some(Error::AuthFailed));
    })
    .await;
}

/// getACL and setACL round-trip, with `aversion` counting the changes and checked by
/// setACL; a reader without ADMIN sees digests as `user:x`; `auth` expands to the
/// caller's identities; invalid ACLs are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_round_trip_with_versions() {
    let ward = ServerProcess::builder().in_memory().start();
    bounded(async {
        let alice = connect_as(&ward.addr_str(), &[ALICE]).await;
        let reader = connect(&ward.addr_str()).await;
        alice.create_with_acl("/v", b"", CreateMode::Persistent, &Acl::creator_all()).await.expect("create");
        assert_eq!(
            alice.get_acl("/v").await.expect("get"),
            (alice_all(), alice.exists("/v").await.expect("stat").expect("node"))
        );
        let stat = alice.set_acl("/v", &alice_writes_all_read(), Some(0)).await.expect("set");
        assert_eq!((stat.aversion, stat.version), (1, 0));
        assert_eq!(alice.set_acl("/v", &alice_all(), Some(0)).await, Err(Error::BadVersion));
        let (acl, stat) = reader.get_acl("/v").await.expect("READ suffices for getACL");
        assert_eq!(acl, vec![Acl::new(perms::ALL, "digest", "alice:x"), Acl::new(perms::READ, "world", "anyone")]);
        assert_eq!(stat.aversion, 1);
        assert_eq!(reader.set_acl("/v", &Acl::open(), None).await, Err(Error::NoAuth));
        assert_eq!(alice.set_acl("/v", &[], None).await, Err(Error::InvalidAcl));
        assert_eq!(alice.set_acl("/v", &[Acl::new(perms::ALL, "ip", "300.0.0.1")], None).await, Err(Error::InvalidAcl));
        let created = reader.create_with_acl("/w", b"", CreateMode::Persistent, &Acl::creator_all()).await;
        assert_eq!(created, Err(Error::InvalidAcl), "auth without an authenticated identity");
        assert_eq!(alice.set_acl("/v", &Acl::open(), Some(1)).await.map(|s| s.aversion), Ok(2));
        assert_eq!(reader.get_acl("/v").await.map(|(acl, _)| acl), Ok(Acl::open()));
    })
    .await;
}

/// Recipes: a lock directory made with an ACL guards the lock (joining its queue needs
/// CREATE on it), and creating a lock's missing ancestors through a node that refuses
/// CREATE fails with NoAuth, as kazoo's `makepath` through incompatible ACLs does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recipe_directories_take_an_acl_and_makepath_through_a_closed_node_gives_no_auth() {
    let ward = ServerProcess::builder().in_memory().start();
    bounded(async {
        let alice = connect_as(&ward.addr_str(), &[ALICE]).await;
        let bob = connect(&ward.addr_str()).await;
        let acl = alice_writes_all_read();
        let guard = alice.acquire_with_acl(&["/locks/job"], LockKind::Exclusive, b"", Some(&acl)).await.expect("lock");
        assert_eq!(alice.get_acl("/locks/job").await.map(|(acl, _)| acl), Ok(acl.clone()));
        assert_eq!(alice.get_acl("/locks").await.map(|(acl, _)| acl), Ok(acl), "ancestors made get it too");
        assert_eq!(bob.lock("/locks/job").await.err(), Some(Error::NoAuth));
        assert_eq!(bob.lock_holders("/locks/job").await.map(|h| h.len()), Ok(1), "READ lets bob see the queue");
        guard.unlock().await.expect("unlock");

        alice.create_with_acl("/closed", b"", CreateMode::Persistent, &alice_all()).await.expect("create");
        assert_eq!(bob.lock("/closed/a/b").await.err(), Some(Error::NoAuth));
        let leader = bob.election("/closed/e").with_acl(Acl::open()).campaign(b"bob").await;
        assert_eq!(leader.err(), Some(Error::NoAuth));
    })
    .await;
}

/// The super user (`--super-digest`) passes every check, even on a node that grants nobody
/// anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_super_user_passes_every_check() {
    let ward = ServerProcess::builder().in_memory().flags(&["--super-digest", SUPER_DIGEST]).start();
    bounded(async {
        let alice = connect_as(&ward.addr_str(), &[ALICE]).await;
        alice
            .create_with_acl("/sealed", b"d", CreateMode::Persistent, &[Acl::new(0, "auth", "")])
            .await
            .expect("create");
        assert_eq!(alice.get_data("/sealed").await, Err(Error::NoAuth), "not even its creator");
        let admin = connect_as(&ward.addr_str(), &[("digest", "super:test")]).await;
        admin.create("/sealed/c", b"", CreateMode::Persistent).await.expect("super creates");
        assert_eq!(access(&admin, "/sealed").await, [Ok(()), Ok(()), Ok(()), Ok(())]);
        assert_eq!(admin.get_acl("/sealed").await.map(|(acl, _)| acl[0].id.id.clone()), Ok(digest_id("alice:secret")));
        let guess = connect_as(&ward.addr_str(), &[("digest", "super:guess")]).await;
        assert_eq!(guess.get_data("/sealed").await, Err(Error::NoAuth));
    })
    .await;
}

/// G24 with G11: ACLs and their versions are in the log and the snapshot, so they come back
/// after kill -9 (replayed from the log, and loaded from a snapshot), and the client shows
/// its credentials again on the new connection before anything else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_survive_kill_9_and_credentials_are_shown_again_after_the_reconnect() {
    let mut ward = ServerProcess::start_with(&["--snapshot-every", "20"]);
    bounded(async {
        let addr = ward.addr_str();
        let alice = connect_as(&addr, &[ALICE]).await;
        alice.create_with_acl("/keep", b"d", CreateMode::Persistent, &alice_all()).await.expect("create");
        alice.set_acl("/keep", &alice_writes_all_read(), Some(0)).await.expect("set acl");
        for i in 0..30 {
            // Past a snapshot: some ACLs come back from it, the later ones from the log.
            let acl = if i % 2 == 0 { alice_all() } else { Acl::read_only() };
            alice.create_with_acl(&format!("/n{i}"), b"", CreateMode::Persistent, &acl).await.expect("create");
        }
        alice.create_with_acl("/late", b"", CreateMode::Persistent, &alice_all()).await.expect("create");
        wait_for("a snapshot", DEADLINE, || async { ward.data_dir().join("snapshot").exists().then_some(()) }).await;
        ward.kill9_now();
        ward.restart_now();
        wait_state(&alice, SessionState::Connected, DEADLINE).await;
        let (acl, stat) = alice.get_acl("/keep").await.expect("get acl after the restart");
        assert_eq!((acl, stat.aversion), (alice_writes_all_read(), 1));
        // The resumed connection carries alice's identity again: she may still write.
        alice.set_data("/late", b"mine", None).await.expect("alice writes after the reconnect");
        let stranger = connect(&addr).await;
        assert_eq!(stranger.set_data("/keep", b"x", None).await, Err(Error::NoAuth));
        assert_eq!(stranger.get_data("/n0").await, Err(Error::NoAuth));
        assert!(stranger.get_data("/n1").await.is_ok());
        assert_eq!(stranger.get_data("/late").await, Err(Error::NoAuth));
    })
    .await;
}

/// The member serving the one Ward connection open in `ensemble` (its `/metrics`).
fn member_serving_the_only_client(ensemble: &Ensemble) -> Option<u64> {
    ensemble.ids().into_iter().find(|id| {
        let (_, metrics) = ward_testkit::http::get(ensemble.admin_addr(*id), "/metrics");
        metrics.lines().any(|l| l.starts_with("ward_connections{listener=\"ward\"} 1"))
    })
}

/// G24 with G14 and G15: a write's permission is decided in apply, from the identities it
/// carries, so every member decides alike. A client whose member is killed moves to another
/// and shows its credentials again there; after the leader is killed, the new leader and
/// the member that comes back keep every ACL, and refuse and allow the same writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_and_their_checks_survive_failover_and_a_leader_change() {
    let _serial = ward_testkit::serial().await;
    bounded(async {
        let mut ensemble = Ensemble::start(3, &[]).await;
        let alice = connect_as(&ensemble.connect_string(), &[ALICE]).await;
        alice.create_with_acl("/e", b"d", CreateMode::Persistent, &alice_all()).await.expect("create");
        alice.set_acl("/e", &alice_writes_all_read(), Some(0)).await.expect("set acl");

        // Alice's member goes: she resumes elsewhere, authenticated again before her write.
        let hers = member_serving_the_only_client(&ensemble).expect("the member serving alice");
        ensemble.member(hers).kill9_now();
        wait_for("alice writes through another member", DEADLINE, || async {
            alice.set_data("/e", b"after failover", None).await.ok()
        })
        .await;
        assert_ne!(alice.state(), SessionState::Expired);
        ensemble.member(hers).restart_now();
        let back = connect_as(&ensemble.addr(hers), &[ALICE]).await;
        wait_for("the restarted member catches up", DEADLINE, || async {
            back.sync("/e").await.ok()?;
            (back.get_data("/e").await.ok()?.0 == b"after failover").then_some(())
        })
        .await;
        drop(back);

        let leader = ensemble.leader(&[]).await;
        ensemble.member(leader).kill9_now();
        let others: Vec<u64> = ensemble.ids().into_iter().filter(|id| *id != leader).collect();
        ensemble.leader(&others).await;
        for id in &others {
            let at = ensemble.addr(*id);
            let mine = connect_as(&at, &[ALICE]).await;
            mine.sync("/e").await.expect("sync");
            assert_eq!(mine.get_acl("/e").await.map(|(acl, s)| (acl, s.aversion)), Ok((alice_writes_all_read(), 1)));
            mine.set_data("/e", format!("from {id}").as_bytes(), None).await.expect("alice writes");
            let eve = connect_as(&at, &[EVE]).await;
            assert_eq!(eve.set_data("/e", b"x", None).await, Err(Error::NoAuth), "member {id}");
            assert_eq!(eve.create("/e/c", b"", CreateMode::Persistent).await, Err(Error::NoAuth));
        }
        ensemble.member(leader).restart_now();
        let back = connect_as(&ensemble.addr(leader), &[ALICE]).await;
        wait_for("the member that was the leader catches up", DEADLINE, || async {
            back.sync("/e").await.ok()?;
            let (acl, stat) = back.get_acl("/e").await.ok()?;
            (acl == alice_writes_all_read() && stat.aversion == 1).then_some(())
        })
        .await;
        let eve = connect_as(&ensemble.addr(leader), &[EVE]).await;
        assert_eq!(eve.set_data("/e", b"x", None).await, Err(Error::NoAuth));
    })
    .await;
}

/// No password, digest hash or super digest reaches the log, even at trace level (where
/// every applied command and its outcome are logged). openraft's own narration is kept at
/// info so that the whole log fits in what the harness keeps of it; what it could print of a
/// command is the same redacted `Debug` (the unit tests of `Id`, `Acl`, `Credentials` and
/// `AuthId` check that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_the_log() {
    // Durable: the commands go through the Raft log, whose own tracing sees them too.
    let ward = ServerProcess::builder()
        .envs(&[("RUST_LOG", "trace,openraft=info")])
        .flags(&["--super-digest", SUPER_DIGEST])
        .start();
    bounded(async {
        let alice = connect_as(&ward.addr_str(), &[ALICE]).await;
        alice.create_with_acl("/s", b"", CreateMode::Persistent, &alice_all()).await.expect("create");
        alice.get_acl("/s").await.expect("get acl");
        let admin = connect_as(&ward.addr_str(), &[("digest", "super:test")]).await;
        admin.set_acl("/s", &alice_writes_all_read(), None).await.expect("set acl");
        assert!(connect(&ward.addr_str()).await.add_auth("nope", "hunter2").await.is_err());
    })
    .await;
    let log = ward.log_tail();
    assert!(log.contains("applied") && log.contains("authenticated"), "a trace-level log:\n{log}");
    let lines = log.lines().count();
    assert!(lines < ward_testkit::server::LOG_TAIL, "{lines} lines: the whole log must be looked at");
    let alice_hash = digest_id("alice:secret");
    let secrets = ["alice:secret", "secret", "super:test", "hunter2", &alice_hash[6..], &SUPER_DIGEST[6..]];
    for secret in secrets {
        assert!(!log.contains(secret), "{secret:?} in the log:\n{log}");
    }
}
