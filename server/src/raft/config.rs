//! openraft's configuration for this server: an ensemble member's, timed by [`Timing`], or a
//! one-member group's, which only elects itself at startup.

use super::error::OpenError;
use super::timing::{self, millis};
use super::RaftOptions;
use openraft::SnapshotPolicy;

/// The configuration of group `name`, validated; `ensemble`: whether it has other members.
pub(crate) fn raft_config(options: &RaftOptions, name: &str, ensemble: bool) -> Result<openraft::Config, OpenError> {
    let policy = options.snapshot_every.map_or(SnapshotPolicy::Never, SnapshotPolicy::LogsSinceLast);
    let config = if ensemble {
        openraft::Config {
            cluster_name: name.into(),
            // openraft times an append out after one heartbeat interval: it must cover a
            // follower's fsync on a loaded machine.
            heartbeat_interval: millis(options.timing.heartbeat),
            // openraft's leader lease (`election_timeout_max`): no voter grants a vote until
            // its leader has been silent this long, so it is most of what a leader kill
            // costs; `silence` stands soon after it.
            election_timeout_min: millis(options.timing.election),
            election_timeout_max: millis(timing::lease(&options.timing)),
            install_snapshot_timeout: 10_000,
            snapshot_max_chunk_size: 1 << 20,
            // Each entry is a batch of up to ~1 MiB.
            max_payload_entries: 16,
            snapshot_policy: policy,
            max_in_snapshot_log_to_keep: options.keep_after_snapshot,
            // A member cut off and back raises no term before it knows it could win: it
            // does not depose a leader the others still follow.
            enable_pre_vote: Some(true),
            // Entries go to the followers as soon as they are handed to the log store, while
            // the leader's own fsync runs: a write waits for one fsync's time, not two.
            broadcast_submitted_on_append: Some(true),
            // A member restarted while it led is elected again before it leads: its commit
            // index is not stored, and a read index from it would miss writes it had
            // acknowledged (G17; `LogStore::forget_leadership` reads its vote back the same way).
            enable_leader_restore: Some(false),
            ..Default::default()
        }
    } else {
        openraft::Config {
            cluster_name: name.into(),
            // One member: ticks and elections matter only at startup; keep them quiet.
            heartbeat_interval: 500,
            election_timeout_min: 1500,
            election_timeout_max: 3000,
            snapshot_policy: policy,
            max_in_snapshot_log_to_keep: options.keep_after_snapshot,
            ..Default::default()
        }
    };
    Ok(config.validate()?)
}
