//! Lock context and the holders list while the queue changes, and named owners taking their
//! lock back after kill -9 (G12; docs/recipes.md).

use crate::harness::*;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use ward_client::{Client, Contender as Queued, Error, LockGuard};

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_millis() as i64
}

/// Contender `n`'s context: distinct for every contender, with a newline and a non-UTF-8
/// byte, since context is bytes.
fn context(n: usize) -> Vec<u8> {
    let mut data = format!("worker-{n} host-{n}\nreason: nightly job {n}").into_bytes();
    data.push(0xff);
    data
}

/// Who is in a lock's queue, as the test set it up: the contenders' numbers in queue order,
/// their clients, and when the test started (the since-when lower bound).
struct Expected<'a> {
    clients: &'a [Client],
    start_ms: i64,
}

impl Expected<'_> {
    /// Checks `queue` (from `lock_holders`) against contenders `order`, `holder` first.
    fn check(&self, what: &str, queue: &[Queued], order: &[usize], holder: &LockGuard) {
        let numbers: Vec<String> = queue
            .iter()
            .map(|c| match self.clients.iter().position(|cl| Some(cl.session_id()) == c.session) {
                Some(n) => n.to_string(),
                None => format!("{c:?}"),
            })
            .collect();
        assert_eq!(queue.len(), order.len(), "{what}: queue of {numbers:?}, expected {order:?}");
        assert_eq!((queue[0].path.as_str(), queue[0].token), (holder.path(), holder.fencing_token()), "{what}: holder");
        for (c, &n) in queue.iter().zip(order) {
            assert_eq!(
                c.session,
                Some(self.clients[n].session_id()),
                "{what}: queue of {numbers:?}, expected {order:?}"
            );
            assert_eq!(c.data, context(n), "{what}: contender {n}'s context");
            let prefix = format!("/ctx/ward-{:016x}-", self.clients[n].session_id().0);
            assert!(c.path.starts_with(&prefix), "{what}: {} is not contender {n}'s", c.path);
            assert!(c.since_ms >= self.start_ms - 1_000 && c.since_ms <= now_ms() + 1_000, "{what}: since {c:?}");
        }
        for pair in queue.windows(2) {
            assert!(pair[1].token > pair[0].token, "{what}: tokens out of queue order: {queue:?}");
            assert!(pair[1].since_ms >= pair[0].since_ms, "{what}: since-when out of queue order: {queue:?}");
        }
    }
}

/// Contender `n` queues with its context; its guard is sent on `granted` once it holds. The
/// task ends with the error if the attempt fails (its session closed, say).
fn queue_contender(
    c: &Client,
    n: usize,
    granted: &mpsc::UnboundedSender<(usize, LockGuard)>,
) -> JoinHandle<Result<(), Error>> {
    let (c, granted) = (c.clone(), granted.clone());
    tokio::spawn(async move {
        let guard = c.lock_with_data("/ctx", &context(n)).await?;
        let _ = granted.send((n, guard));
        Ok(())
    })
}

// G12: the holders list (client API and `ward holders`) shows the holder and then
// the queue in order, each with its own context, token, session and since-when, while
// contenders join, give up, lose their session and are granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_list_follows_the_queue_with_each_contenders_context() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let start_ms = now_ms();
        let observer = connect(&addr).await;
        let mut clients = Vec::new();
        for _ in 0..6 {
            clients.push(connect(&addr).await);
        }
        let expected = Expected { clients: &clients, start_ms };
        let holders = || async { observer.lock_holders("/ctx").await.expect("holders") };
        let queued = |n: usize| {
            let observer = observer.clone();
            move || {
                let observer = observer.clone();
                async move { observer.get_children("/ctx").await.expect("ls").len() == n }
            }
        };

        let first = clients[0].lock_with_data("/ctx", &context(0)).await.expect("lock");
        expected.check("the holder alone", &holders().await, &[0], &first);
        let (granted, mut grants) = mpsc::unbounded_channel();
        let mut waiting = Vec::new();
        for (n, client) in clients.iter().enumerate().take(5).skip(1) {
            waiting.push(queue_contender(client, n, &granted));
            wait_until("the contender is queued", DEADLINE, queued(n + 1)).await;
            let order: Vec<usize> = (0..=n).collect();
            expected.check(&format!("contender {n} joined"), &holders().await, &order, &first);
        }

        // Contender 2 gives up (its lock() future is dropped): it leaves the middle.
        waiting[1].abort();
        wait_until("contender 2 has left", DEADLINE, queued(4)).await;
        expected.check("contender 2 gave up", &holders().await, &[0, 1, 3, 4], &first);

        // The holder leaves: contender 1 holds, the rest keep their order.
        first.unlock().await.expect("unlock");
        let (n, second) = within("the next contender holds", DEADLINE, grants.recv()).await.expect("a grant");
        assert_eq!(n, 1, "granted out of queue order");
        expected.check("the holder left", &holders().await, &[1, 3, 4], &second);

        // A newcomer joins at the back; contender 4's session ends and takes it out.
        waiting.push(queue_contender(&clients[5], 5, &granted));
        wait_until("contender 5 is queued", DEADLINE, queued(4)).await;
        expected.check("contender 5 joined", &holders().await, &[1, 3, 4, 5], &second);
        clients[4].close().await.expect("close contender 4's session");
        let ended = within("contender 4's attempt ends", DEADLINE, waiting.remove(3)).await.expect("task");
        assert!(matches!(ended, Err(Error::Closed | Error::SessionExpired)), "{ended:?}");
        wait_until("contender 4 has left", DEADLINE, queued(3)).await;
        expected.check("contender 4's session ended", &holders().await, &[1, 3, 5], &second);

        // `ward holders` prints the same list: holder or waiter, path, token, queued, session,
        // then the context (escaped: the newline as \n).
        let queue = holders().await;
        let out = run_cli(&addr, &["holders", "/ctx"]).await.success();
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), queue.len(), "{out:?}");
        for (i, (line, c)) in lines.iter().zip(&queue).enumerate() {
            let role = if i == 0 { "holder" } else { "waiter" };
            let head = format!("{role} {} token={} queued=", c.path, c.token);
            assert!(line.starts_with(&head), "{line:?} for {c:?}");
            let data = String::from_utf8_lossy(&c.data).replace('\n', "\\n");
            let tail = format!(" session={} data={data}", c.session.expect("ephemeral"));
            assert!(line.ends_with(&tail), "{line:?} for {c:?}");
        }

        second.unlock().await.expect("unlock");
        let (n, third) = within("contender 3 holds", DEADLINE, grants.recv()).await.expect("a grant");
        assert_eq!(n, 3, "granted out of queue order");
        expected.check("contender 1 left", &holders().await, &[3, 5], &third);
        third.unlock().await.expect("unlock");
        let (n, last) = within("contender 5 holds", DEADLINE, grants.recv()).await.expect("a grant");
        assert_eq!(n, 5);
        expected.check("contender 3 left", &holders().await, &[5], &last);
        last.unlock().await.expect("unlock");
        assert_eq!(holders().await, Vec::new());
        assert!(grants.try_recv().is_err(), "a contender that left was granted");
    })
    .await
}

// G12 (reentrant handles): after a local handoff the holders list still names the
// holder's context, session and current fencing token (the one `check_fence` accepts).
//
// Fails today: `Client::lock_holders` (client/src/queue.rs) reports each contender's czxid as
// its token, but a local handoff rewrites the contender, so the holder's token is the node's
// mzxid, which is what the server's check_fence compares (server/src/state.rs). The list
// (and `ward holders`) then shows a token that check_fence refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_list_shows_the_token_of_a_local_handoff() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let (c, observer) = (connect(&addr).await, connect(&addr).await);
        let (first, second) = (c.mutex_with_data("/ctx-m", b"service-a"), c.mutex_with_data("/ctx-m", b"service-a"));
        let held = first.lock().await.expect("lock");
        let queue = observer.lock_holders("/ctx-m").await.expect("holders");
        assert_eq!(queue.len(), 1);
        assert_eq!((queue[0].token, queue[0].data.as_slice()), (held.fencing_token(), &b"service-a"[..]));
        let waiting = tokio::spawn(async move { second.lock().await.expect("second handle") });
        held.unlock().await.expect("unlock");
        let next = within("the local handoff", DEADLINE, waiting).await.expect("task");
        let fence = next.fence().expect("held remotely");
        observer.check_fence(&fence.path, fence.token).await.expect("the new holder's fence");
        let queue = observer.lock_holders("/ctx-m").await.expect("holders");
        assert_eq!(queue.len(), 1);
        assert_eq!((queue[0].path.as_str(), queue[0].session), (fence.path.as_str(), Some(c.session_id())));
        assert_eq!(queue[0].data, b"service-a");
        assert_eq!(
            observer.check_fence(&queue[0].path, queue[0].token).await,
            Ok(()),
            "the holders list gives token {} for the holder, which holds with {}",
            queue[0].token,
            fence.token
        );
        assert_eq!(queue[0].token, fence.token);
        next.unlock().await.expect("unlock");
    })
    .await
}

/// The session timeout of the owner's sessions, and the bound on its restart taking the
/// lock back: well before the old session could have expired.
const OWNER_SESSION_TIMEOUT_MS: &str = "30000";
const TAKEN_BACK_WITHIN: Duration = Duration::from_secs(15);

/// `held <token> <path>` from a `hold` contender.
fn parse_held(line: &str) -> (u64, String) {
    match line.split_whitespace().collect::<Vec<_>>()[..] {
        ["held", token, path] => (token.parse().expect("token"), path.to_string()),
        _ => panic!("unexpected holder output {line:?}"),
    }
}

// G12: a holder process killed with SIGKILL (a 30 s session) and restarted under the
// same owner name holds its lock again well within 15 s, without waiting out the old
// session; the old incarnation's contender and token are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_owner_takes_its_lock_back_without_waiting_for_the_old_session() {
    bounded(async {
        let server = ServerProcess::start();
        let addr = server.addr_str();
        let observer = connect(&addr).await;
        let hold = |data: &str| {
            Contender::spawn(&[
                "hold",
                "--server",
                &addr,
                "--dir",
                "/owned",
                "--owner",
                "billing-worker-3",
                "--session-timeout-ms",
                OWNER_SESSION_TIMEOUT_MS,
                "--data",
                data,
            ])
        };
        let mut first = hold("incarnation 1");
        let (old_token, old_path) = parse_held(&first.next_line().await.text);
        let queue = observer.lock_holders("/owned").await.expect("holders");
        assert_eq!(queue.len(), 1);
        let old_session = queue[0].session.expect("ephemeral");

        first.kill9();
        let killed_at = Instant::now();
        // The dead process's session lives on: without the owner name, the lock would wait
        // for its 30 s timeout.
        observer.check_fence(&old_path, old_token).await.expect("the killed holder's session still holds");

        let mut second = hold("incarnation 2");
        let (token, path) = parse_held(&second.next_line_within(TAKEN_BACK_WITHIN).await.text);
        let taken_back = killed_at.elapsed();
        println!(
            "kill -9 and restart under the same owner: lock held again after {taken_back:?} (session timeout 30 s)"
        );
        assert!(taken_back < TAKEN_BACK_WITHIN, "{taken_back:?}");
        assert!(token > old_token);
        assert_ne!(path, old_path);
        let queue = observer.lock_holders("/owned").await.expect("holders");
        assert_eq!(queue.len(), 1, "the old incarnation's contender is gone: {queue:?}");
        assert_eq!((queue[0].path.as_str(), queue[0].token), (path.as_str(), token));
        assert_eq!(queue[0].data, b"incarnation 2");
        assert_ne!(queue[0].session, Some(old_session), "held by the new session");
        assert_eq!(observer.check_fence(&old_path, old_token).await, Err(Error::StaleFence));
        observer.check_fence(&path, token).await.expect("the new incarnation's fence");
        second.kill9();
    })
    .await
}
