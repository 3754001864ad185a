//! `ward-server`'s options: from the command line ([`cli`]), the environment ([`env`]) and
//! a config file ([`file`]), layered in that order of precedence over the defaults
//! ([`Settings::over`]), then checked together and resolved into [`Args`].

mod cli;
pub mod env;
mod file;
pub mod settings;
mod tls;
pub mod values;

pub use cli::Cli;

use crate::error::ConfigError;
use settings::Settings;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use values::{HostPort, Listen, LogFormat};
use ward_server::acl::identity::SuperDigest;
use ward_server::admin::console::AdminToken;
use ward_server::raft::{OnLoss, RaftOptions};
use ward_server::tls::{PeerTlsFiles, ServerTlsFiles};
use ward_server::unsafe_break::Break;
use ward_server::Config;

/// What the server runs with, every option decided and every host name resolved.
pub struct Args {
    pub listen: Listener,
    /// `None`: off.
    pub zk_listen: Option<Listener>,
    /// `None`: off.
    pub admin_listen: Option<Listener>,
    /// ZooKeeper's secure client port; `None`: off.
    pub zk_tls_listen: Option<Listener>,
    /// The client listeners' TLS; `None`: plain TCP.
    pub tls: Option<ServerTlsFiles>,
    /// The peer link's mutual TLS; `None`: plain TCP.
    pub peer_tls: Option<PeerTlsFiles>,
    pub raft: RaftOptions,
    /// `None`: in memory only.
    pub data_dir: Option<PathBuf>,
    /// A backup to seed the (empty) data directory from before it opens.
    pub restore: Option<PathBuf>,
    /// Make the data directory's member the one member of a new ensemble before it opens.
    pub force_new_ensemble: bool,
    pub config: Config,
    pub ensemble: Option<Ensemble>,
    /// `--dev-ensemble N`: run N local members as child processes.
    pub dev_ensemble: Option<u16>,
    pub log_format: LogFormat,
    /// `--worker-threads`; `None`: not given (see `main::worker_threads`).
    pub worker_threads: Option<usize>,
    /// The options as given (all sources merged), for the members `--dev-ensemble` starts.
    pub settings: Settings,
    /// A promise broken on purpose (tests only; see `ward_server::unsafe_break`).
    pub unsafe_break: Option<Break>,
}

/// An address to listen on, resolved.
pub struct Listener {
    /// The option that set it, for messages (`zk-listen`).
    pub key: &'static str,
    /// Every address the option's host stands for: the first that binds is used.
    pub addrs: Vec<SocketAddr>,
    /// Set by some source, rather than the default: then it must bind.
    pub explicit: bool,
}

impl Listener {
    /// The address for messages: the first candidate.
    pub fn shown(&self) -> String {
        self.addrs.first().map_or_else(String::new, SocketAddr::to_string)
    }
}

pub struct Ensemble {
    pub id: u64,
    pub name: String,
    pub members: BTreeMap<u64, String>,
    pub peer_listen: Listener,
    pub routes: BTreeMap<u64, String>,
}

/// Reads every source (the command line is parsed already) and decides the options.
pub fn load(cli: Cli) -> Result<Args, ConfigError> {
    cli.settings
        .check_data_choice()
        .map_err(|why| ConfigError::DataChoice { source_name: "command line".into(), why })?;
    let file = match cli.config.map_or_else(env::config_file, |path| Ok(Some(path)))? {
        Some(path) => file::load(&path)?,
        None => Settings::default(),
    };
    let settings = cli.settings.over(env::load()?.over(file));
    let mut args = decide(settings)?;
    if let Some(broken) = cli.unsafe_break {
        if !env::unsafe_break_allowed() {
            return Err(ConfigError::UnsafeBreakRefused(broken));
        }
        if broken == Break::AckBeforeFsync && args.data_dir.is_none() {
            return combination("--unsafe-break ack-before-fsync needs a durable log: leave out --in-memory");
        }
        args.raft.ack_before_fsync = broken == Break::AckBeforeFsync;
        args.unsafe_break = Some(broken);
    }
    Ok(args)
}

fn decide(settings: Settings) -> Result<Args, ConfigError> {
    let s = &settings;
    let data_dir = match (s.in_memory, s.data_dir.clone()) {
        (Some(true), _) => None,
        (_, Some(dir)) => Some(dir),
        (_, None) if s.dev_ensemble.is_some() => Some("ward-dev".into()),
        (_, None) => Some("ward-data".into()),
    };
    let mut config = Config::default();
    let ms = |n: Option<values::Bounded<1, { u32::MAX as u64 }>>, default: Duration| {
        n.map_or(default, |n| Duration::from_millis(n.0))
    };
    config.min_session_timeout = ms(s.min_session_timeout_ms, config.min_session_timeout);
    config.max_session_timeout = ms(s.max_session_timeout_ms, config.max_session_timeout);
    if config.min_session_timeout > config.max_session_timeout {
        return Err(ConfigError::Combination(format!(
            "--min-session-timeout-ms ({}) is above --max-session-timeout-ms ({})",
            config.min_session_timeout.as_millis(),
            config.max_session_timeout.as_millis()
        )));
    }
    config.metrics_max_locks = s.metrics_max_locks.unwrap_or(config.metrics_max_locks);
    if let Some(path) = &s.admin_token_file {
        config.admin_token = Some(AdminToken::from_file(path)?);
    }
    if let Some(digest) = &s.super_digest {
        // The message does not repeat the value: a mistyped digest may be a password.
        let digest =
            SuperDigest::new(&digest.0).map_err(|why| ConfigError::Combination(format!("--super-digest: {why}")))?;
        config.super_digest = Some(digest);
    }
    if let Some(bytes) = s.max_outbound_bytes {
        config.max_outbound_bytes = usize::try_from(bytes.0).unwrap_or(usize::MAX);
    }
    if let Some(bytes) = s.watch_history_bytes {
        config.watch_history_bytes = usize::try_from(bytes.0).unwrap_or(usize::MAX);
    }
    if let Some(n) = s.max_in_flight_per_connection {
        config.max_inflight_per_conn = usize::try_from(n.0).unwrap_or(usize::MAX);
    }
    config.max_connections = s.max_connections.unwrap_or(config.max_connections);
    config.max_connections_per_ip = s.max_connections_per_ip.unwrap_or(config.max_connections_per_ip);
    config.container_check_interval = ms(s.container_check_interval_ms, config.container_check_interval);
    if let Some(n) = s.container_max_never_used_ms {
        config.container_max_never_used = Duration::from_millis(n.0);
    }
    let mut raft = RaftOptions::default();
    if let Some(mb) = s.segment_mb {
        raft.segment_bytes = mb.0 << 20;
    }
    if let Some(p) = s.snapshot_log_percent {
        raft.snapshot_log_percent = p.0;
    }
    if let Some(n) = s.snapshot_every {
        raft.snapshot_every = Some(n.0);
        raft.keep_after_snapshot = raft.keep_after_snapshot.min(n.0);
    }
    if s.accept_data_loss == Some(true) {
        raft.on_loss = OnLoss::Accept;
    }
    if let Some(n) = s.heartbeat_ms {
        raft.timing.heartbeat = Duration::from_millis(n.0);
    }
    if let Some(n) = s.election_timeout_ms {
        raft.timing.election = Duration::from_millis(n.0);
    }
    raft.lease_read = s.lease_read == Some(true);
    if raft.timing.election < 2 * raft.timing.heartbeat {
        return combination("--election-timeout-ms must be at least twice --heartbeat-ms: a member would call elections while its leader is well");
    }
    let ensemble = ensemble(s, data_dir.is_some())?;
    let dev_ensemble = s.dev_ensemble.map(|n| n.0 as u16);
    if dev_ensemble.is_some() && ensemble.is_some() {
        return combination("--dev-ensemble starts its own members: leave out --ensemble, --id and --peer-*");
    }
    if dev_ensemble.is_some() && data_dir.is_none() {
        return combination("--dev-ensemble members are durable: leave out --in-memory");
    }
    if s.restore.is_some() {
        if data_dir.is_none() || dev_ensemble.is_some() {
            return combination("--restore seeds a data directory: leave out --in-memory and --dev-ensemble");
        }
        if s.join == Some(true) {
            return combination("--restore founds an ensemble from a backup: leave out --join (a member added later catches up from the others)");
        }
    }
    let force_new_ensemble = s.force_new_ensemble == Some(true);
    if force_new_ensemble {
        let alone = ensemble.as_ref().is_some_and(|e| e.members.len() == 1 && e.members.contains_key(&e.id));
        if !alone || s.restore.is_some() || s.ensemble_name.is_none() {
            return combination(
                "--force-new-ensemble needs --id N, --ensemble N=ADDR naming only this member, and a new --ensemble-name (not with --restore)",
            );
        }
    }
    let (tls, peer_tls) = (tls::server(s)?, tls::peer(s)?);
    if peer_tls.is_some() && ensemble.is_none() && dev_ensemble.is_none() {
        return combination(
            "--peer-tls-cert, --peer-tls-key and --peer-tls-ca are for ensemble members: add --ensemble (or --join)",
        );
    }
    let zk_tls_listen = s.zk_tls_listen.as_ref().map(|addr| listener("zk-tls-listen", addr, true)).transpose()?;
    let default_listen = HostPort::from(SocketAddr::from(([127, 0, 0, 1], 7181)));
    Ok(Args {
        listen: listener("listen", s.listen.as_ref().unwrap_or(&default_listen), s.listen.is_some())?,
        zk_listen: optional("zk-listen", s.zk_listen.as_ref(), ward_server::zk::DEFAULT_ADDR)?,
        admin_listen: optional("admin-listen", s.admin_listen.as_ref(), ward_server::admin::DEFAULT_ADDR)?,
        zk_tls_listen,
        tls,
        peer_tls,
        raft,
        data_dir,
        restore: s.restore.clone(),
        force_new_ensemble,
        config,
        ensemble,
        dev_ensemble,
        log_format: s.log_format.unwrap_or_default(),
        worker_threads: s.worker_threads.map(|n| usize::try_from(n.0).unwrap_or(usize::MAX)),
        settings,
        unsafe_break: None,
    })
}

/// The ensemble options, checked together.
fn ensemble(s: &Settings, durable: bool) -> Result<Option<Ensemble>, ConfigError> {
    let join = s.join.unwrap_or(false);
    let (members, id, peer_listen) = (s.ensemble.clone(), s.id.map(|id| id.0), s.peer_listen.as_ref());
    let name = s.ensemble_name.clone().unwrap_or_else(|| "ward".into());
    let routes = s.peer_route.clone().map(|r| r.0).unwrap_or_default();
    let ensemble = match (members, id) {
        (None, None) if peer_listen.is_none() && routes.is_empty() && !join => return Ok(None),
        (None, Some(id)) if join => {
            let Some(peer_listen) = peer_listen else {
                return combination("--join needs --peer-listen (where the ensemble will reach this member)");
            };
            let peer_listen = listener("peer-listen", peer_listen, true)?;
            Ensemble { id, name, members: BTreeMap::new(), peer_listen, routes }
        }
        (None, _) => return combination("--id and --peer-listen need --ensemble (or --join)"),
        (Some(_), _) if join => return combination("--join is for a member added later: leave out --ensemble"),
        (Some(_), None) => return combination("--ensemble needs --id (this member's id in the list)"),
        (Some(members), Some(id)) => {
            let Some(own) = members.0.get(&id) else {
                let ids: Vec<_> = members.0.keys().collect();
                return combination(&format!("--id {id} is not in --ensemble ({ids:?})"));
            };
            let own: HostPort = own.parse().map_err(ConfigError::Combination)?;
            let peer_listen = listener("peer-listen", peer_listen.unwrap_or(&own), true)?;
            Ensemble { id, name, members: members.0, peer_listen, routes }
        }
    };
    match durable {
        true => Ok(Some(ensemble)),
        false => combination("--in-memory cannot be a member of an ensemble: a member's log must be durable"),
    }
}

fn combination<T>(why: &str) -> Result<T, ConfigError> {
    Err(ConfigError::Combination(why.to_string()))
}

fn listener(key: &'static str, addr: &HostPort, explicit: bool) -> Result<Listener, ConfigError> {
    let addrs = addr.resolve().map_err(|source| ConfigError::Resolve { key, value: addr.to_string(), source })?;
    if addrs.is_empty() {
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no addresses");
        return Err(ConfigError::Resolve { key, value: addr.to_string(), source });
    }
    Ok(Listener { key, addrs, explicit })
}

/// A listener with a default address, which may be switched off.
fn optional(key: &'static str, given: Option<&Listen>, default: SocketAddr) -> Result<Option<Listener>, ConfigError> {
    match given {
        Some(Listen::Off) => Ok(None),
        Some(Listen::At(addr)) => listener(key, addr, true).map(Some),
        None => Ok(Some(Listener { key, addrs: vec![default], explicit: false })),
    }
}
