//! `--tables`: the session table that every request frame touches. The server keeps it as a
//! std `Mutex<HashMap>` (`SessionTracker`); this measures that, as the server runs it (touches
//! from connection threads, the expiry sweep every 100 ms scanning every session, the touched
//! list drained every 300 ms), against the same work on a sharded `DashMap`.
//!
//! Each figure is touches per second summed over the touching threads, for 10,000 sessions,
//! each thread touching its own sessions in turn.

use crate::report::{Results, WARD};
use crate::stats::Figures;
use dashmap::DashMap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use ward_proto::SessionId;
use ward_server::session::SessionTracker;

const SESSIONS: u64 = 10_000;
const TIMEOUT: Duration = Duration::from_secs(3600);
const SWEEP_EVERY: Duration = Duration::from_millis(100);
const DRAIN_EVERY: Duration = Duration::from_millis(300);

/// The tracker's operations that run all the time, as one trait for both tables.
trait Table: Send + Sync + 'static {
    fn touch(&self, id: SessionId) -> bool;
    fn sweep(&self, now: tokio::time::Instant) -> usize;
    fn drain(&self) -> usize;
}

impl Table for SessionTracker {
    fn touch(&self, id: SessionId) -> bool {
        SessionTracker::touch(self, id)
    }
    fn sweep(&self, now: tokio::time::Instant) -> usize {
        self.take_due(now).len()
    }
    fn drain(&self) -> usize {
        self.take_touched().len()
    }
}

/// One session's entry as the tracker keeps it, less the connection.
struct Entry {
    timeout: Duration,
    deadline: tokio::time::Instant,
    expiring: bool,
    touched: bool,
}

/// The same table on a `DashMap`: the touched list stays a mutex-guarded `Vec`, pushed to
/// only when a session's flag goes up.
struct Sharded {
    map: DashMap<SessionId, Entry>,
    touched: Mutex<Vec<SessionId>>,
}

impl Table for Sharded {
    fn touch(&self, id: SessionId) -> bool {
        match self.map.get_mut(&id) {
            Some(mut e) if !e.expiring => {
                e.deadline = tokio::time::Instant::now() + e.timeout;
                if !std::mem::replace(&mut e.touched, true) {
                    self.touched.lock().unwrap_or_else(PoisonError::into_inner).push(id);
                }
                true
            }
            _ => false,
        }
    }
    fn sweep(&self, now: tokio::time::Instant) -> usize {
        let mut due = 0;
        for mut e in self.map.iter_mut() {
            if !e.expiring && e.deadline <= now {
                e.expiring = true;
                due += 1;
            }
        }
        due
    }
    fn drain(&self) -> usize {
        let touched = std::mem::take(&mut *self.touched.lock().unwrap_or_else(PoisonError::into_inner));
        for id in &touched {
            if let Some(mut e) = self.map.get_mut(id) {
                e.touched = false;
            }
        }
        touched.len()
    }
}

/// Touches per second over `threads` threads for `run`, with the sweep and the drain going.
fn measure(table: Arc<dyn Table>, threads: u64, run: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let touches = Arc::new(AtomicU64::new(0));
    let background = {
        let (table, stop) = (table.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut swept, mut drained) = (Instant::now(), Instant::now());
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
                if swept.elapsed() >= SWEEP_EVERY {
                    table.sweep(tokio::time::Instant::now());
                    swept = Instant::now();
                }
                if drained.elapsed() >= DRAIN_EVERY {
                    table.drain();
                    drained = Instant::now();
                }
            }
        })
    };
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (table, stop, touches) = (table.clone(), stop.clone(), touches.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                let mut id = 1 + t;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..256 {
                        table.touch(SessionId(id));
                        id += threads;
                        if id > SESSIONS {
                            id = 1 + t;
                        }
                    }
                    n += 256;
                }
                touches.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = background.join();
    touches.load(Ordering::Relaxed) as f64 / elapsed
}

fn std_table() -> Arc<dyn Table> {
    let tracker = SessionTracker::default();
    for id in 1..=SESSIONS {
        tracker.register(SessionId(id), TIMEOUT);
    }
    Arc::new(tracker)
}

fn sharded_table() -> Arc<dyn Table> {
    let now = tokio::time::Instant::now();
    let map: HashMap<SessionId, Entry> = (1..=SESSIONS)
        .map(|id| (SessionId(id), Entry { timeout: TIMEOUT, deadline: now + TIMEOUT, expiring: false, touched: false }))
        .collect();
    Arc::new(Sharded { map: map.into_iter().collect(), touched: Mutex::default() })
}

/// Runs both tables at 1, 2, 4 and 8 touching threads.
pub fn run(results: &mut Results, quick: bool) {
    let run = if quick { Duration::from_millis(200) } else { Duration::from_secs(2) };
    for threads in [1u64, 2, 4, 8] {
        let workload = format!("t. session table, {threads} touching threads");
        let mut figures = Figures::default();
        figures.add("touches/s, std Mutex<HashMap> (the server's)", measure(std_table(), threads, run));
        figures.add("touches/s, DashMap", measure(sharded_table(), threads, run));
        results.record(&workload, WARD, &figures);
    }
}
