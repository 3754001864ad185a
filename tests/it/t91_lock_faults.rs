//! Locks under faults (G12): a killed holder process, a holder cut off past its session
//! timeout, and acquires that are cancelled, time out or lose their reply.

use crate::harness::*;
use std::time::{Duration, Instant};
use ward_client::{Client, CreateMode, Error, Fence, SessionState};
use ward_proto::lock::parse_contender;

const SHORT_FLAGS: [&str; 2] = ["--min-session-timeout-ms", "500"];

/// The contender names in `dir` that belong to `client`'s session.
async fn contenders_of(observer: &Client, dir: &str, client: &Client) -> Vec<String> {
    let children = observer.get_children(dir).await.expect("ls");
    children.into_iter().filter(|name| parse_contender(name).map(|(s, _)| s) == Some(client.session_id())).collect()
}

// G12: a holder process killed with SIGKILL is replaced within session timeout + 1 s
// (measured, bounded generously), by a higher token; the stale token is then refused by a
// fenced write and by check_fence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_holder_process_is_replaced_and_its_token_refused() {
    bounded(async {
        let server = ServerProcess::start_with(&SHORT_FLAGS);
        let addr = server.addr_str();
        let mut holder = Contender::spawn(&["hold", "--server", &addr, "--dir", "/k9", "--session-timeout-ms", "1000"]);
        let held = holder.next_line().await.text;
        let (stale_token, stale_path) = match held.split_whitespace().collect::<Vec<_>>()[..] {
            ["held", token, path] => (token.parse::<u64>().expect("token"), path.to_string()),
            _ => panic!("unexpected holder output {held:?}"),
        };
        let waiter = connect(&addr).await;
        waiter.create("/guarded", b"", CreateMode::Persistent).await.expect("create /guarded");
        let waiting = {
            let waiter = waiter.clone();
            tokio::spawn(async move {
                let guard = waiter.lock("/k9").await.expect("waiter lock");
                (guard, Instant::now())
            })
        };
        wait_until("the waiter is queued", DEADLINE, || async {
            waiter.get_children("/k9").await.expect("ls").len() == 2
        })
        .await;
        let killed_at = Instant::now();
        holder.kill9();
        let (guard, granted_at) = within("the waiter takes over", DEADLINE, waiting).await.expect("waiter task");
        println!("kill -9 of the holder: next holder after {:?} (session timeout 1 s)", granted_at - killed_at);
        assert!(guard.fencing_token() > stale_token);

        let stale = Fence { path: stale_path, token: stale_token };
        let refused = waiter.set_data_fenced(&stale, "/guarded", b"stale", None).await;
        assert_eq!(refused, Err(Error::StaleFence));
        assert_eq!(waiter.check_fence(&stale.path, stale.token).await, Err(Error::StaleFence));
        assert_eq!(waiter.check_fence(guard.path(), stale.token).await, Err(Error::StaleFence));
        waiter.set_data_fenced(&guard.fence(), "/guarded", b"fresh", None).await.expect("the holder's write");
        waiter.check_fence(guard.path(), guard.fencing_token()).await.expect("the holder's fence");
        assert_eq!(waiter.get_data("/guarded").await.expect("get").0, b"fresh");
    })
    .await
}

/// How a test cuts the holder off.
#[derive(Clone, Copy, Debug)]
enum Cut {
    /// Connections closed, reconnects refused: the client sees the close at once.
    Closed,
    /// Connections stay up but carry nothing: the client must notice the silence.
    Silent,
}

/// A holder through a proxy with a 4 s session, cut off past its timeout while another
/// contender waits; returns when lost() completed and when the other was granted. The two
/// instants are taken by two tasks of this process: the session is long enough that the
/// margin between them (a fifth of it) outlasts a stall of a loaded machine.
async fn lost_versus_next_grant(cut: Cut) {
    let server = ServerProcess::start_with(&SHORT_FLAGS);
    let proxy = Proxy::start(server.addr()).await;
    let holder = connect_with(&proxy.addr_str(), Duration::from_millis(4000)).await;
    let guard = holder.lock("/cut").await.expect("holder lock");
    let old_token = guard.fencing_token();
    let other = connect(&server.addr_str()).await;
    let granted = {
        let other = other.clone();
        tokio::spawn(async move {
            let guard = other.lock("/cut").await.expect("other lock");
            (Instant::now(), guard)
        })
    };
    wait_until("the other contender is queued", DEADLINE, || async {
        other.get_children("/cut").await.expect("ls").len() == 2
    })
    .await;
    let lost = tokio::spawn(async move {
        guard.lost().await;
        (Instant::now(), guard)
    });
    assert!(!lost.is_finished());
    let cut_at = Instant::now();
    match cut {
        Cut::Closed => proxy.isolate(),
        Cut::Silent => proxy.partition(),
    }
    let (granted_at, next) = within("the other contender is granted", DEADLINE, granted).await.expect("task");
    let (lost_at, old) = within("lost() completes", DEADLINE, lost).await.expect("task");
    println!(
        "{cut:?} cut (session timeout 4 s): lost() after {:?}, the next holder granted after {:?}",
        lost_at - cut_at,
        granted_at - cut_at
    );
    assert!(lost_at < granted_at, "lost() completed {:?} after the next grant", lost_at - granted_at);
    assert!(old.is_lost());
    assert!(next.fencing_token() > old_token);
}

// G12: a holder whose connection is cut (closed) beyond the session timeout sees
// lost() complete before anyone else is granted the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_off_holder_sees_lost_before_anyone_else_is_granted() {
    bounded(lost_versus_next_grant(Cut::Closed)).await
}

// G12, silent variant: the connection stays open but carries nothing (a network
// partition); the holder must notice the silence itself, still before the next grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silently_partitioned_holder_sees_lost_before_anyone_else_is_granted() {
    bounded(lost_versus_next_grant(Cut::Silent)).await
}

/// Completes after `n` turns of the scheduler: cancels a `lock()` at a different point of
/// its way through the client each time.
async fn yields(n: usize) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

// G12 (cancelled, timed out): given-up acquires leave no nodes behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_and_timed_out_lock_calls_leave_no_nodes() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let holder = connect(&addr).await;
        let held = holder.lock("/cancel").await.expect("holder lock");
        let c = connect(&addr).await;
        for _ in 0..3 {
            assert!(c.try_lock("/cancel", Duration::from_millis(100)).await.expect("try_lock").is_none());
        }
        for n in 0..20 {
            tokio::select! {
                biased;
                _ = c.lock("/cancel") => panic!("granted while held"),
                () = yields(n) => {}
            }
        }
        let gone = || async { contenders_of(&holder, "/cancel", &c).await.is_empty() };
        wait_until("every given-up attempt has left the queue", DEADLINE, gone).await;
        // Cancelled once its contender is queued (the only one of c's now).
        tokio::select! {
            biased;
            _ = c.lock("/cancel") => panic!("granted while held"),
            () = wait_until("the attempt is queued", DEADLINE, || async {
                contenders_of(&holder, "/cancel", &c).await.len() == 1
            }) => {}
        }
        wait_until("the queued attempt has left the queue", DEADLINE, gone).await;
        assert_eq!(holder.get_children("/cancel").await.expect("ls").len(), 1, "only the holder is left");
        held.unlock().await.expect("unlock");
        // Nothing of c's is ahead of a new attempt.
        let guard = within("c's new attempt", DEADLINE, c.try_lock("/cancel", DEADLINE))
            .await
            .expect("try_lock")
            .expect("nothing ahead in the queue");
        assert_eq!(contenders_of(&holder, "/cancel", &c).await.len(), 1);
        guard.unlock().await.expect("unlock");
        assert_eq!(holder.get_children("/cancel").await.expect("ls"), Vec::<String>::new());
    })
    .await
}

/// Starts `c.lock(dir)` with the proxy dropping every reply, waits until the acquire is
/// applied, cuts the connection and waits until the retry (after the reconnect) is applied
/// too. Returns the attempt and the name of the contender the first acquire created.
async fn acquire_with_lost_reply(
    proxy: &Proxy,
    c: &Client,
    observer: &Client,
    dir: &'static str,
) -> (tokio::task::JoinHandle<ward_client::LockGuard>, String) {
    proxy.mute_replies();
    let attempt = {
        let c = c.clone();
        tokio::spawn(async move { c.lock_with_data(dir, b"c").await.expect("c's lock") })
    };
    let created = wait_for("c's acquire is applied (its reply dropped)", DEADLINE, || async {
        contenders_of(observer, dir, c).await.pop()
    })
    .await;
    let applied_zxid = observer.server_stats().await.expect("stats").last_zxid;
    let accepted = proxy.accepted();
    proxy.cut();
    wait_until("c reconnects", DEADLINE, || async { proxy.accepted() > accepted }).await;
    wait_until("c is connected again", DEADLINE, || async { c.state() == SessionState::Connected }).await;
    // Nothing else writes meanwhile: the next zxid is the retried acquire's.
    wait_until("the retried acquire is applied", DEADLINE, || async {
        observer.server_stats().await.expect("stats").last_zxid > applied_zxid
    })
    .await;
    (attempt, created)
}

// G12 (lost reply): the acquire is applied, its reply lost and the connection cut;
// the retry under the same tag finds the contender it created: one node, no orphan. Once
// while another holds (the lost reply said "wait"), once on a free lock ("you hold it").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_acquire_reply_leaves_exactly_one_contender() {
    bounded(async {
        let server = ServerProcess::start();
        let proxy = Proxy::start(server.addr()).await;
        let holder = connect(&server.addr_str()).await;
        let held = holder.lock("/lost-reply").await.expect("holder lock");
        let c = connect_with(&proxy.addr_str(), Duration::from_secs(30)).await;

        let (attempt, created) = acquire_with_lost_reply(&proxy, &c, &holder, "/lost-reply").await;
        let mine = contenders_of(&holder, "/lost-reply", &c).await;
        assert_eq!(mine, std::slice::from_ref(&created), "one contender of c's while it waits");
        assert!(!attempt.is_finished(), "granted while held");
        held.unlock().await.expect("holder unlock");
        let guard = within("c is granted", DEADLINE, attempt).await.expect("attempt task");
        assert_eq!(guard.path(), format!("/lost-reply/{created}"), "the retry found its own contender");
        assert_eq!(holder.get_children("/lost-reply").await.expect("ls"), [created]);
        guard.unlock().await.expect("unlock");
        assert_eq!(holder.get_children("/lost-reply").await.expect("ls"), Vec::<String>::new());

        let (attempt, created) = acquire_with_lost_reply(&proxy, &c, &holder, "/lost-reply").await;
        let guard = within("c holds", DEADLINE, attempt).await.expect("attempt task");
        assert_eq!(guard.path(), format!("/lost-reply/{created}"), "the retry found its own contender");
        assert_eq!(holder.get_children("/lost-reply").await.expect("ls"), [created]);
        guard.unlock().await.expect("unlock");
        assert_eq!(holder.get_children("/lost-reply").await.expect("ls"), Vec::<String>::new());
    })
    .await
}
