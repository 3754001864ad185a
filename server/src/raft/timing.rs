//! How fast an ensemble notices a lost leader, and the leases that keep that safe.
//!
//! openraft gives a voter that has heard from its leader a lease of
//! `election_timeout_max`: it refuses every vote until the lease has passed in silence, and
//! only then, after a random `election_timeout_min..max` more, calls an election itself
//! (`silence` stands sooner: after the lease, a heartbeat interval and a jitter). So
//! a leader kill costs at least the lease, unless its followers find its peer port serving
//! nothing and waive it (`gone_leader`). Ward's own lease for touches (G16: a leader
//! acknowledges a session's touch round only if a quorum accepted appends it sent within
//! this, `quorum`) is the election timeout. G16 needs the grace a new leader gives every
//! session to carry it past the last touch an old leader could acknowledge; a new leader is
//! elected after that touch less the touch lease (quorum intersection), so the grace must be
//! at least the touch lease. Ward keeps openraft's lease and the grace one heartbeat interval
//! above it; no more, because every millisecond of the lease is a millisecond of every
//! failover that waits it out.
//! A leadership transfer elects the new leader without the voters' leases: the old leader
//! gives its touch lease up before it begins one (`transfer::HandingOver`, `contact::lease_fresh`).

use std::time::Duration;

/// An ensemble's heartbeat and election timeout (`--heartbeat-ms`, `--election-timeout-ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How often the leader sends heartbeats; openraft also times each append out after one
    /// interval, so it must cover a follower's fsync.
    pub heartbeat: Duration,
    /// `election_timeout_min`; `election_timeout_max`, openraft's leader lease, is [`lease`].
    pub election: Duration,
}

/// openraft's leader lease (`election_timeout_max`) for `timing`: the election timeout (Ward's
/// touch lease) and one heartbeat interval more.
pub(crate) fn lease(timing: &Timing) -> Duration {
    timing.election + timing.heartbeat
}

impl Default for Timing {
    fn default() -> Self {
        Timing { heartbeat: Duration::from_millis(250), election: Duration::from_millis(500) }
    }
}

/// A whole number of milliseconds, as openraft's config takes them.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Ward's lease for touches under openraft's `config`: a leader that has not heard from a
/// quorum for this long acknowledges no touch round (G16).
pub(crate) fn touch_lease(config: &openraft::Config) -> Duration {
    Duration::from_millis(config.election_timeout_min)
}

/// The grace a new leader adds to every session's timeout (G15, G16): a deposed leader may
/// have acknowledged touches until openraft's lease ran out.
pub(crate) fn grace(config: &openraft::Config) -> Duration {
    Duration::from_millis(config.election_timeout_max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G16 rests on the touch lease being no longer than the lease during which voters refuse
    /// a new leader, and on the grace covering that lease.
    #[test]
    fn the_touch_lease_fits_inside_openrafts_lease_for_any_timing() {
        for (heartbeat, election) in [(250, 500), (10, 20), (50, 150), (1000, 600_000)] {
            let timing =
                Timing { heartbeat: Duration::from_millis(heartbeat), election: Duration::from_millis(election) };
            let config = openraft::Config {
                heartbeat_interval: heartbeat,
                election_timeout_min: election,
                election_timeout_max: millis(lease(&timing)),
                ..Default::default()
            }
            .validate()
            .expect("valid");
            assert!(touch_lease(&config) < Duration::from_millis(config.election_timeout_max));
            assert!(grace(&config) >= Duration::from_millis(config.election_timeout_max));
        }
    }
}
