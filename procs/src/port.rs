//! Ports for servers that must come back on the port they had.
//!
//! A port the kernel picked for a bind to port 0 comes from its ephemeral range, the same
//! range it takes the local port of every outgoing connection from. While a server is down
//! between a kill and its restart, any connection on the machine (a peer link between two
//! other members, a reconnecting client) can be given its port and keep it for as long as
//! it lives, and the restart can then never bind it. So the harness picks a server's ports
//! below the ephemeral range, where the kernel never hands out a port by itself: only an
//! explicit bind can take one, and within this process none is handed out twice.

use crate::error::HarnessError;
use crate::rng::{clock_seed, Rng};
use std::collections::HashSet;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Mutex, OnceLock};

/// The lowest port handed out: clear of the well-known and registered services a test
/// machine is likely to run (ZooKeeper's 2181, etcd's 2379, ...).
const FLOOR: u16 = 10_000;

/// Fewer free ports than this below the ephemeral range: fall back to the kernel's choice.
const MIN_SPAN: u16 = 1_000;

/// Candidates probed before giving up on the range below the ephemeral one.
const TRIES: u32 = 200;

struct Handed {
    rng: Rng,
    given: HashSet<u16>,
}

fn handed() -> &'static Mutex<Handed> {
    static HANDED: OnceLock<Mutex<Handed>> = OnceLock::new();
    // Not the test's seed: two processes run with one seed must not probe the same ports.
    HANDED.get_or_init(|| Mutex::new(Handed { rng: Rng::new(clock_seed()), given: HashSet::new() }))
}

/// The first port of the kernel's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_floor() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next().and_then(|low| low.parse().ok()))
        .unwrap_or(32_768)
}

/// A port on 127.0.0.1 that is free now, that the kernel will not give to anyone by itself,
/// and that this process has not handed out before. Where the ephemeral range leaves no room
/// below it, a port the kernel picks (which a restart may then find taken).
pub fn stable() -> Result<SocketAddr, HarnessError> {
    let top = ephemeral_floor();
    if top > FLOOR && top - FLOOR >= MIN_SPAN {
        let mut handed = handed().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for _ in 0..TRIES {
            let port = FLOOR + handed.rng.below(u64::from(top - FLOOR)) as u16;
            if handed.given.contains(&port) {
                continue;
            }
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            if TcpListener::bind(addr).is_ok() {
                handed.given.insert(port);
                return Ok(addr);
            }
        }
    }
    let failed = |e| HarnessError::io("probe for a free port on 127.0.0.1", e);
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_free_and_never_handed_out_twice() {
        let top = ephemeral_floor();
        let mut seen = HashSet::new();
        for _ in 0..100 {
            let addr = stable().expect("a free port");
            assert!(seen.insert(addr.port()), "{addr} handed out twice");
            if top > FLOOR && top - FLOOR >= MIN_SPAN {
                assert!((FLOOR..top).contains(&addr.port()), "{addr} is not below {top}");
            }
            TcpListener::bind(addr).unwrap_or_else(|e| panic!("{addr} is not free: {e}"));
        }
    }
}
