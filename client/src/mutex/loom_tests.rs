//! Loom model of the local lock queue (model 2): the real [`Queue`] and its driver loop
//! ([`Queue::hold`]), with the remote lock played by a value that counts its releases, as a
//! `LockGuard` releases on drop. Run with
//! `RUSTFLAGS="--cfg ward_loom" cargo test --release -p ward-client --lib loom_tests`.

use super::local::Exit;
use super::queue::Queue;
use loom::future::block_on;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

/// The remote lock as the queue holds it: released once, when dropped.
struct Remote {
    released: Arc<AtomicUsize>,
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.released.fetch_add(1, Ordering::SeqCst);
    }
}

struct World {
    queue: Queue<Remote>,
    /// Handles holding the lock right now.
    holders: AtomicUsize,
    /// Remote locks taken, and released.
    acquired: AtomicUsize,
    released: Arc<AtomicUsize>,
    /// The server's fencing tokens: each remote grant and each hand-off gets a larger one.
    next_token: AtomicU64,
}

impl World {
    /// Takes the lock for `handle` through the queue, as `Mutex::lock` does.
    async fn lock(&self, handle: u64) -> u64 {
        let acquire = || async {
            self.acquired.fetch_add(1, Ordering::SeqCst);
            let token = self.next_token.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>((Remote { released: self.released.clone() }, token))
        };
        let token = self.queue.hold(handle, acquire).await.expect("the remote lock is granted");
        assert_eq!(self.holders.fetch_add(1, Ordering::SeqCst), 0, "two handles hold the lock");
        token
    }

    /// Leaves it, as `mutex::leave` does when the server side of a hand-off succeeds.
    fn unlock(&self, handle: u64) {
        self.holders.fetch_sub(1, Ordering::SeqCst);
        match self.queue.exit(handle) {
            Exit::Nested => {}
            Exit::Release(remote) => drop(remote),
            Exit::HandOff => {
                let token = self.next_token.fetch_add(1, Ordering::SeqCst);
                drop(self.queue.handed_off(token));
            }
        }
    }
}

/// Polls `fut` once, as a task would before it is woken (or before it gives up on it).
fn poll<F: Future>(fut: Pin<&mut F>) {
    let _ = fut.poll(&mut Context::from_waker(Waker::noop()));
}

/// Model 2 (locks: the local queue): handle 1 holds; handle 3 has joined the queue; handle 2
/// joins it and waits while handle 1 leaves and handle 3 gives up. At most one handle holds at any time,
/// handle 2 always gets the lock (no wake-up is lost when the holder leaves while it is
/// registering), with a fencing token newer than handle 1's, and every remote lock taken is
/// released exactly once.
#[test]
fn one_holder_no_lost_wakeup_fresh_tokens() {
    loom::model(|| {
        let world = Arc::new(World {
            queue: Queue::default(),
            holders: AtomicUsize::new(0),
            acquired: AtomicUsize::new(0),
            released: Arc::new(AtomicUsize::new(0)),
            next_token: AtomicU64::new(10),
        });
        let first = block_on(world.lock(1));

        let waiter = {
            let world = world.clone();
            thread::spawn(move || {
                let token = block_on(world.lock(2));
                assert!(token > first, "handle 2 holds with token {token}, not newer than {first}");
                world.unlock(2);
            })
        };
        // Handle 3 joins the queue now, and gives up (its future dropped) during the race.
        let mut third = {
            let world = world.clone();
            Box::pin(async move {
                world.lock(3).await;
                world.unlock(3);
            })
        };
        poll(third.as_mut());
        let quitter = thread::spawn(move || {
            poll(third.as_mut());
            drop(third);
        });
        world.unlock(1);

        waiter.join().expect("waiter");
        quitter.join().expect("quitter");
        assert_eq!(world.holders.load(Ordering::SeqCst), 0);
        let (acquired, released) = (world.acquired.load(Ordering::SeqCst), world.released.load(Ordering::SeqCst));
        assert_eq!(acquired, released, "every remote lock taken is released once");
    });
}
