//! g1m: a million znodes, in ten equal steps, so that flatness shows: the create rate of each
//! step, the last (900k to 1M) against the first (an empty tree to 100k), and the memory per
//! znode at 100k and at 1M. The others of the scale set are f (10,000 sessions), h (100,000
//! watches) and e1000 (1,000 lock waiters) in `workloads.rs`.

use crate::stats::Figures;
use crate::sys::{Result, Session, System};
use crate::workloads::{close_all, connect_many, memory, per_item, pipelined, DATA, OUTSTANDING, SESSIONS};
use std::sync::Arc;
use std::time::Duration;

const STEPS: usize = 10;

/// g1m. Creates `total` persistent nodes of 100 bytes under `dir` (64 outstanding over 4
/// sessions), step by step, then deletes them the same way.
pub async fn million<Y: System>(sys: &Y, dir: &str, total: usize) -> Result<Figures> {
    let sessions = connect_many(sys, SESSIONS).await?;
    let per_task = total / STEPS / OUTSTANDING;
    let step = per_task * OUTSTANDING;
    let d = Arc::new(dir.to_string());
    let before = memory(sys);
    let mut rates = Vec::with_capacity(STEPS);
    let mut at_first_step = (None, None);
    let mut created = Duration::ZERO;
    for s in 0..STEPS {
        let dc = d.clone();
        let create = move |session: Y::S, t: usize, k: usize| {
            let d = dc.clone();
            async move { session.create(&format!("{d}/s{s}-{t:02}-{k:06}"), &DATA, false).await }
        };
        let (took, _) = pipelined(&sessions, OUTSTANDING, per_task, create).await?;
        created += took;
        rates.push(step as f64 / took.as_secs_f64().max(1e-9));
        if s == 0 {
            at_first_step = memory(sys);
        }
    }
    let after = memory(sys);
    let mut deleted = Duration::ZERO;
    for s in 0..STEPS {
        let dc = d.clone();
        let delete = move |session: Y::S, t: usize, k: usize| {
            let d = dc.clone();
            async move { session.delete(&format!("{d}/s{s}-{t:02}-{k:06}")).await }
        };
        deleted += pipelined(&sessions, OUTSTANDING, per_task, delete).await?.0;
    }
    close_all(sessions).await;
    let n = step * STEPS;
    let (first, last) = (rates[0], rates[STEPS - 1]);
    // Thousands, rounded: a step is a whole number of creates per task, a little under a tenth.
    let k = |n: usize| format!("{}k", (n as f64 / 1000.0).round());
    let mut f = Figures::default();
    f.rate("create/s", n, created);
    for (s, rate) in rates.iter().enumerate() {
        f.add(format!("create/s, {} to {} znodes", k(s * step), k((s + 1) * step)), *rate);
    }
    f.add("create rate, last step / first step", last / first);
    f.rate("delete/s", n, deleted);
    per_item(&mut f, &format!("znode at {}", k(step)), before, at_first_step, step);
    per_item(&mut f, &format!("znode at {}", k(n)), before, after, n);
    Ok(f)
}
