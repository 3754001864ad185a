//! `--sync-reads N`: what a linearizable point costs on a three-member ensemble, by read
//! index (a heartbeat round to a quorum per `sync`, the default) and by the leader's lease
//! (`--lease-read`): N `sync`s one after another through a client of the leader and through
//! a client of a follower, on one ensemble started each way, the two ensembles one after
//! the other. What a `sync` through a follower adds is its forward to the leader and its
//! wait to apply that index, the same both ways.

use crate::ensemble::{Links, LocalEnsemble};
use crate::server;
use crate::stats::Samples;
use crate::sys::Result;
use std::path::Path;
use std::time::{Duration, Instant};
use ward_client::Client;

const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the measurement and prints one line per ensemble and member kind.
pub async fn run(tmp: &Path, n: usize) -> Result<()> {
    let bin = tmp.join("ward-server");
    std::fs::copy(server::binary()?, &bin)?;
    println!("{:<12} {:<9} {:>8} {:>9} {:>9} {:>9}", "reads", "through", "syncs", "p50 ms", "p99 ms", "max ms");
    for (name, flags) in [("read index", &[][..]), ("lease", &["--lease-read"][..])] {
        let ens = LocalEnsemble::start_with(3, &bin, &tmp.join(name.replace(' ', "-")), Links::Direct, flags).await?;
        let leader = ens.leader(&ens.ids()).await?;
        let follower = ens.ids().into_iter().find(|id| *id != leader).unwrap_or(leader);
        for (kind, id) in [("leader", leader), ("follower", follower)] {
            let client = Client::builder(&ens.connect_string(&[id])).session_timeout(SESSION_TIMEOUT).connect().await?;
            // Warm the connections and the leader's forward path first.
            for _ in 0..20 {
                client.sync("/").await?;
            }
            let mut samples = Samples::with_capacity(n);
            for _ in 0..n {
                let began = Instant::now();
                client.sync("/").await?;
                samples.push(began.elapsed());
            }
            let (p50, p99, max) = (samples.quantile_ms(0.5), samples.quantile_ms(0.99), samples.quantile_ms(1.0));
            println!("{name:<12} {kind:<9} {n:>8} {p50:>9.3} {p99:>9.3} {max:>9.3}");
            let _ = client.close().await;
        }
    }
    Ok(())
}
