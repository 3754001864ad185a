//! Every option of `ward-server`, as one source (the command line, the environment or a
//! config file) gives them: all optional, so that the sources can be layered. The doc
//! comments are the `--help` text; a field's flag, environment variable and TOML key are
//! all derived from its name (`min_session_timeout_ms`: `--min-session-timeout-ms`,
//! `WARD_MIN_SESSION_TIMEOUT_MS`, `min-session-timeout-ms`).

use super::values::{Bounded, ClientAuth, HostPort, Listen, LogFormat, Members, Secret};
use clap::builder::BoolishValueParser;
use clap::{Args, CommandFactory};
use serde::Deserialize;
use std::path::PathBuf;

const MAX: u64 = u64::MAX;
const MAX_MS: u64 = u32::MAX as u64;
const MIN_OUTBOUND: usize = ward_server::config::MIN_OUTBOUND_BYTES;

#[derive(Args, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Settings {
    /// Client address; port 0 picks a free one [default: 127.0.0.1:7181]
    #[arg(long, value_name = "ADDR", help_heading = "Listeners")]
    pub listen: Option<HostPort>,
    /// ZooKeeper-protocol address, or off. The default is skipped (and said so on stdout)
    /// when its port is taken; an address given explicitly must bind [default: 127.0.0.1:2181]
    #[arg(long, value_name = "ADDR|off", help_heading = "Listeners")]
    pub zk_listen: Option<Listen>,
    /// ZooKeeper's secure client port: ZooKeeper's protocol over TLS, with --tls-cert's
    /// certificate (needs --tls-cert and --tls-key) [default: off]
    #[arg(long, value_name = "ADDR", help_heading = "Listeners")]
    pub zk_tls_listen: Option<HostPort>,
    /// Admin HTTP address (/metrics, /healthz, /readyz), or off. The default is skipped (and
    /// said so on stdout) when its port is taken; an address given explicitly must bind
    /// [default: 127.0.0.1:7180]
    #[arg(long, value_name = "ADDR|off", help_heading = "Listeners")]
    pub admin_listen: Option<Listen>,
    /// A file whose first line is the admin token: the web console's actions (expire a
    /// session, delete a node) are allowed to requests that send it as
    /// `Authorization: Bearer TOKEN`. The file must not be readable by other users; at least
    /// 16 characters. Without it, actions are off [default: none]
    #[arg(long, value_name = "FILE", help_heading = "Listeners")]
    pub admin_token_file: Option<PathBuf>,

    /// This server's certificate chain (PEM, leaf first). With --tls-key, the client
    /// listener (--listen) speaks only TLS; read again on SIGHUP
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM); refused if users other than the file's owner and
    /// group may read it
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub tls_key: Option<PathBuf>,
    /// CA certificates (PEM) that client certificates must chain to: with it, clients show
    /// a certificate (see --tls-client-auth), whose subject is their x509 identity
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub tls_client_ca: Option<PathBuf>,
    /// With --tls-client-ca: whether a client must show a certificate or may connect
    /// without one [default: required]
    #[arg(long, value_name = "MODE", help_heading = "TLS")]
    pub tls_client_auth: Option<ClientAuth>,
    /// This member's certificate on the peer link (PEM, leaf first): with --peer-tls-key and
    /// --peer-tls-ca, members talk mutual TLS. It must name the host of this member's peer
    /// address; read again on SIGHUP
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub peer_tls_cert: Option<PathBuf>,
    /// The private key of --peer-tls-cert (PEM); refused if users other than the file's
    /// owner and group may read it
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub peer_tls_key: Option<PathBuf>,
    /// CA certificates (PEM) that every member's peer certificate must chain to
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub peer_tls_ca: Option<PathBuf>,

    /// Where the log and snapshots live [default: ./ward-data; ./ward-dev with --dev-ensemble]
    #[arg(long, value_name = "DIR", help_heading = "Storage")]
    pub data_dir: Option<PathBuf>,
    /// Keep nothing on disk: everything is lost when the server stops
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), help_heading = "Storage")]
    pub in_memory: Option<bool>,
    /// Size of each preallocated log segment, in MiB [default: 64]
    #[arg(long, value_name = "N", help_heading = "Storage")]
    pub segment_mb: Option<Bounded<1, { 1 << 20 }>>,
    /// Take a snapshot once the log written since the last one is P percent of that
    /// snapshot's size (and at least one segment), then purge the log; 0: never by size
    /// [default: 100]
    #[arg(long, value_name = "P", help_heading = "Storage")]
    pub snapshot_log_percent: Option<Bounded<0, 1_000_000>>,
    /// Also take a snapshot after N log entries (batches of commands) [default: none]
    #[arg(long, value_name = "N", help_heading = "Storage")]
    pub snapshot_every: Option<Bounded<1, MAX>>,
    /// Start even if log files are missing or cut short (a partial copy or restore), serving
    /// what remains; without it such a start is refused, naming the file. Say it for one
    /// start, after deciding the loss is acceptable
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), help_heading = "Storage")]
    pub accept_data_loss: Option<bool>,
    /// Seed the data directory, which must be empty, from a backup FILE (`ward backup`),
    /// then start. Every member of a new ensemble restores the same file; with --ensemble, an
    /// --ensemble-name other than the backed-up ensemble's is required
    #[arg(long, value_name = "FILE", help_heading = "Storage")]
    pub restore: Option<PathBuf>,
    /// Disaster recovery: make this member, whose ensemble lost its majority for good, the
    /// one member of a new ensemble, keeping every write its log holds. Needs --id, an
    /// --ensemble naming only this member and a new --ensemble-name; the directory as it was
    /// is kept beside it. For one start (docs/operations.md, "Losing the majority")
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), help_heading = "Storage")]
    pub force_new_ensemble: Option<bool>,

    /// Shortest session timeout granted [default: 4000]
    #[arg(long, value_name = "N", help_heading = "Sessions")]
    pub min_session_timeout_ms: Option<Bounded<1, MAX_MS>>,
    /// Longest session timeout granted [default: 40000]
    #[arg(long, value_name = "N", help_heading = "Sessions")]
    pub max_session_timeout_ms: Option<Bounded<1, MAX_MS>>,

    /// How often the leader deletes unused containers and expired TTL nodes [default: 60000]
    #[arg(long, value_name = "N", help_heading = "Containers and TTL nodes")]
    pub container_check_interval_ms: Option<Bounded<1, MAX_MS>>,
    /// How long a container that never had a child is kept; 0 keeps it for good
    /// [default: 300000]
    #[arg(long, value_name = "N", help_heading = "Containers and TTL nodes")]
    pub container_max_never_used_ms: Option<Bounded<0, MAX>>,

    /// Run as a member of a replicated ensemble: every member's id and peer address (the
    /// same list on every member)
    #[arg(long, value_name = "1=ADDR,2=ADDR,...", help_heading = "Ensemble")]
    pub ensemble: Option<Members>,
    /// This member's id in --ensemble
    #[arg(long, value_name = "N", help_heading = "Ensemble")]
    pub id: Option<Bounded<1, MAX>>,
    /// Where peers connect [default: this member's --ensemble address]
    #[arg(long, value_name = "ADDR", help_heading = "Ensemble")]
    pub peer_listen: Option<HostPort>,
    /// A new member, to be added with `ward members add ID=ADDR`: it founds no group and
    /// waits for the leader (with --id, --peer-listen, and no --ensemble)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), help_heading = "Ensemble")]
    pub join: Option<bool>,
    /// Checked when members connect, so that two ensembles never mix [default: ward]
    #[arg(long, value_name = "NAME", help_heading = "Ensemble")]
    pub ensemble_name: Option<String>,
    /// Reach these members at ADDR instead of their listed address (NAT, or a test's
    /// per-link proxy)
    #[arg(long, value_name = "ID=ADDR,...", help_heading = "Ensemble")]
    pub peer_route: Option<Members>,
    /// How often the leader sends each member a heartbeat; also how long it waits for a
    /// member to answer an append (which includes the member's fsync) [default: 250]
    #[arg(long, value_name = "N", help_heading = "Ensemble")]
    pub heartbeat_ms: Option<Bounded<10, 60_000>>,
    /// The leader's lease is this and --heartbeat-ms more: a member that hears nothing from its
    /// leader for the lease, a heartbeat interval and up to half this calls an election; at
    /// least twice --heartbeat-ms.
    /// Shorter means faster failover and more needless elections on a loaded machine
    /// [default: 500]
    #[arg(long, value_name = "N", help_heading = "Ensemble")]
    pub election_timeout_ms: Option<Bounded<20, 600_000>>,
    /// Let the leader name a read index (sync, fence checks, backups) from its lease, a
    /// quorum acknowledgement within --election-timeout-ms, instead of a heartbeat round:
    /// faster, and safe only while the members' clocks keep time within a third of each
    /// other; the dead-leader fast path is off then (docs/guarantees.md, "Lease reads")
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = BoolishValueParser::new(), help_heading = "Ensemble")]
    pub lease_read: Option<bool>,
    /// Run a local ensemble of N (1 to 9) members as child processes, on consecutive ports
    /// from --listen's; data and logs in --data-dir
    #[arg(long, value_name = "N", help_heading = "Ensemble")]
    pub dev_ensemble: Option<Bounded<1, 9>>,

    /// Bytes one connection may have queued for its client and not yet written (events,
    /// lock grants, read replies). Read replies past it make the server stop reading the
    /// connection; an event past it closes the connection (the session stays)
    /// [default: 16777216, 16 MiB]
    #[arg(long, value_name = "BYTES", help_heading = "Limits")]
    pub max_outbound_bytes: Option<Bounded<{ MIN_OUTBOUND as u64 }, MAX>>,
    /// Memory for recent changes, kept so that a persistent watch armed again after a
    /// reconnect gets what it missed; a client that has seen less than this holds is told it
    /// may have missed events. 0 keeps none [default: 2097152, 2 MiB]
    #[arg(long, value_name = "BYTES", help_heading = "Limits")]
    pub watch_history_bytes: Option<Bounded<0, MAX>>,
    /// Requests one connection may have read and not yet answered; at the limit the server
    /// stops reading that connection until a reply goes out [default: 1024]
    #[arg(long, value_name = "N", help_heading = "Limits")]
    pub max_in_flight_per_connection: Option<Bounded<1, { 1 << 20 }>>,
    /// Threads that run connections, the state machine and Raft (tokio's workers); the log
    /// has an I/O thread of its own besides. Unset: TOKIO_WORKER_THREADS if set, else one
    /// per core but one (at least 1) [default: cores - 1]
    #[arg(long, value_name = "N", help_heading = "Limits")]
    pub worker_threads: Option<Bounded<1, 1024>>,
    /// Client connections open at once, both client listeners together; 0: no limit
    /// [default: 10000]
    #[arg(long, value_name = "N", help_heading = "Limits")]
    pub max_connections: Option<usize>,
    /// Client connections from one IP address, both client listeners together (ZooKeeper's
    /// maxClientCnxns); 0: no limit [default: 60]
    #[arg(long, value_name = "N", help_heading = "Limits")]
    pub max_connections_per_ip: Option<usize>,

    /// The super user's digest, USER:HASH (`ward acl digest USER:PASSWORD` prints it): a
    /// client that authenticates as USER with that password passes every ACL check. Better
    /// in the config file or the environment than on a command line others can list
    #[arg(long, value_name = "USER:HASH", help_heading = "Access control")]
    pub super_digest: Option<Secret>,

    /// Lines written to stderr: text, or one JSON object per line [default: text]
    #[arg(long, value_name = "FORMAT", help_heading = "Logs and metrics")]
    pub log_format: Option<LogFormat>,
    /// How many lock directories /metrics reports (those with the longest queues) [default: 100]
    #[arg(long, value_name = "N", help_heading = "Logs and metrics")]
    pub metrics_max_locks: Option<usize>,
}

impl Settings {
    /// These settings, with what they leave unset taken from `lower` (a source of lower
    /// precedence). Where the data lives is one choice made with two options: the source that
    /// says anything about it (`data-dir` or `in-memory`) decides alone.
    pub fn over(self, mut lower: Settings) -> Settings {
        if self.data_dir.is_some() || self.in_memory.is_some() {
            (lower.data_dir, lower.in_memory) = (None, None);
        }
        self.and(lower)
    }

    /// Options of one source, option by option: these, then `lower`'s.
    pub fn and(self, lower: Settings) -> Settings {
        Settings {
            listen: self.listen.or(lower.listen),
            zk_listen: self.zk_listen.or(lower.zk_listen),
            zk_tls_listen: self.zk_tls_listen.or(lower.zk_tls_listen),
            tls_cert: self.tls_cert.or(lower.tls_cert),
            tls_key: self.tls_key.or(lower.tls_key),
            tls_client_ca: self.tls_client_ca.or(lower.tls_client_ca),
            tls_client_auth: self.tls_client_auth.or(lower.tls_client_auth),
            peer_tls_cert: self.peer_tls_cert.or(lower.peer_tls_cert),
            peer_tls_key: self.peer_tls_key.or(lower.peer_tls_key),
            peer_tls_ca: self.peer_tls_ca.or(lower.peer_tls_ca),
            admin_listen: self.admin_listen.or(lower.admin_listen),
            admin_token_file: self.admin_token_file.or(lower.admin_token_file),
            data_dir: self.data_dir.or(lower.data_dir),
            in_memory: self.in_memory.or(lower.in_memory),
            segment_mb: self.segment_mb.or(lower.segment_mb),
            snapshot_log_percent: self.snapshot_log_percent.or(lower.snapshot_log_percent),
            snapshot_every: self.snapshot_every.or(lower.snapshot_every),
            accept_data_loss: self.accept_data_loss.or(lower.accept_data_loss),
            restore: self.restore.or(lower.restore),
            force_new_ensemble: self.force_new_ensemble.or(lower.force_new_ensemble),
            min_session_timeout_ms: self.min_session_timeout_ms.or(lower.min_session_timeout_ms),
            max_session_timeout_ms: self.max_session_timeout_ms.or(lower.max_session_timeout_ms),
            container_check_interval_ms: self.container_check_interval_ms.or(lower.container_check_interval_ms),
            container_max_never_used_ms: self.container_max_never_used_ms.or(lower.container_max_never_used_ms),
            ensemble: self.ensemble.or(lower.ensemble),
            id: self.id.or(lower.id),
            peer_listen: self.peer_listen.or(lower.peer_listen),
            join: self.join.or(lower.join),
            ensemble_name: self.ensemble_name.or(lower.ensemble_name),
            peer_route: self.peer_route.or(lower.peer_route),
            heartbeat_ms: self.heartbeat_ms.or(lower.heartbeat_ms),
            election_timeout_ms: self.election_timeout_ms.or(lower.election_timeout_ms),
            lease_read: self.lease_read.or(lower.lease_read),
            dev_ensemble: self.dev_ensemble.or(lower.dev_ensemble),
            max_outbound_bytes: self.max_outbound_bytes.or(lower.max_outbound_bytes),
            watch_history_bytes: self.watch_history_bytes.or(lower.watch_history_bytes),
            max_in_flight_per_connection: self.max_in_flight_per_connection.or(lower.max_in_flight_per_connection),
            max_connections: self.max_connections.or(lower.max_connections),
            max_connections_per_ip: self.max_connections_per_ip.or(lower.max_connections_per_ip),
            worker_threads: self.worker_threads.or(lower.worker_threads),
            super_digest: self.super_digest.or(lower.super_digest),
            log_format: self.log_format.or(lower.log_format),
            metrics_max_locks: self.metrics_max_locks.or(lower.metrics_max_locks),
        }
    }

    /// Refuses a source that says both where to keep the data and to keep none.
    pub fn check_data_choice(&self) -> Result<(), &'static str> {
        match (&self.data_dir, self.in_memory) {
            (Some(_), Some(true)) => Err("both data-dir and in-memory: choose one"),
            _ => Ok(()),
        }
    }
}

/// The option names (the flags without `--`, which are also the TOML keys).
pub fn keys() -> Vec<String> {
    super::cli::Cli::command()
        .get_arguments()
        .filter(|arg| !matches!(arg.get_id().as_str(), "config" | "unsafe_break" | "help" | "version"))
        .filter_map(|arg| arg.get_long().map(str::to_string))
        .collect()
}

/// The environment variable of an option: `WARD_` and the name in capitals, `-` as `_`.
pub fn env_var(key: &str) -> String {
    format!("WARD_{}", key.to_ascii_uppercase().replace('-', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag is a TOML key and the other way round: a file's keys are checked against
    /// `keys()` before serde sees them.
    #[test]
    fn every_flag_is_a_toml_key() {
        for key in keys() {
            let value = match key.as_str() {
                "in-memory" | "join" | "accept-data-loss" | "force-new-ensemble" | "lease-read" => {
                    toml::Value::Boolean(false)
                }
                "segment-mb"
                | "snapshot-every"
                | "snapshot-log-percent"
                | "min-session-timeout-ms"
                | "max-session-timeout-ms"
                | "container-check-interval-ms"
                | "container-max-never-used-ms"
                | "id"
                | "dev-ensemble"
                | "metrics-max-locks"
                | "max-connections"
                | "max-connections-per-ip"
                | "max-in-flight-per-connection"
                | "worker-threads" => toml::Value::Integer(1),
                "max-outbound-bytes" | "watch-history-bytes" => toml::Value::Integer(1 << 20),
                "heartbeat-ms" | "election-timeout-ms" => toml::Value::Integer(100),
                "ensemble" | "peer-route" => toml::Value::String("1=a:1".into()),
                "log-format" => toml::Value::String("json".into()),
                "tls-client-auth" => toml::Value::String("optional".into()),
                "super-digest" => toml::Value::String("super:D/InIHSb7yEEbrWz8b9l71RjZJU=".into()),
                _ => toml::Value::String("localhost:1".into()),
            };
            let table = toml::Table::from_iter([(key.clone(), value)]);
            let parsed: Result<Settings, _> = toml::Value::Table(table).try_into();
            let parsed = parsed.unwrap_or_else(|e| panic!("key {key}: {e}"));
            assert_ne!(parsed, Settings::default(), "key {key} set nothing");
        }
        assert_eq!(keys().len(), 43, "a new option: add it to docs/operations.md and here");
    }

    #[test]
    fn higher_source_wins_and_data_choice_goes_together() {
        let file = Settings { data_dir: Some("d".into()), listen: "a:1".parse().ok(), ..Settings::default() };
        let cli = Settings { in_memory: Some(true), ..Settings::default() };
        let merged = cli.over(file);
        assert_eq!((merged.data_dir, merged.in_memory), (None, Some(true)));
        assert_eq!(merged.listen, "a:1".parse().ok());
    }
}
