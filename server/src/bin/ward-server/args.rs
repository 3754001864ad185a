//! Command-line arguments of `ward-server`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use ward_server::raft::RaftOptions;
use ward_server::Config;

pub const USAGE: &str = "usage: ward-server [--listen ADDR] [--zk-listen ADDR|off] [--admin-listen ADDR|off] [--data-dir DIR | --in-memory] [--min-session-timeout-ms N] [--max-session-timeout-ms N]
  --listen ADDR                 client address (default 127.0.0.1:7181; port 0 picks a free one)
  --zk-listen ADDR|off          ZooKeeper-protocol address (default 127.0.0.1:2181, skipped
                                and said so on stdout if that is taken; an explicit ADDR
                                must bind)
  --admin-listen ADDR|off       admin HTTP address: /metrics (Prometheus), /healthz, /readyz
                                (default 127.0.0.1:7180, skipped and said so on stdout if
                                that is taken; an explicit ADDR must bind)
  --data-dir DIR                where the log and snapshots live (default ./ward-data)
  --in-memory                   keep nothing on disk: everything is lost when the server stops
  --segment-mb N                size of each preallocated log segment (default 64)
  --snapshot-every N            take a snapshot after N log entries, then purge the log (default 5000)
  --min-session-timeout-ms N    shortest session timeout granted (default 4000)
  --max-session-timeout-ms N    longest session timeout granted (default 40000)
  --ensemble 1=ADDR,2=ADDR,...  run as a member of a replicated ensemble: every member's id
                                and peer address (the same list on every member)
  --id N                        this member's id in --ensemble
  --peer-listen ADDR            where peers connect (default: this member's --ensemble address)
  --join                        a new member, to be added with `ward members add ID=ADDR`:
                                it founds no group and waits for the leader (with --id,
                                --peer-listen, and no --ensemble)
  --ensemble-name NAME          checked when members connect (default ward)
  --dev-ensemble N              run a local ensemble of N members (child processes) on
                                consecutive ports from --listen; data in --data-dir
                                (default ./ward-dev)
  --peer-route ID=ADDR,...      reach these members at ADDR instead of their listed address
                                (NAT, or a test's per-link proxy)
Logs go to stderr; RUST_LOG sets the level (e.g. info, ward_server=debug).";

pub struct Args {
    pub listen: SocketAddr,
    /// `None`: no ZooKeeper listener; `Some((addr, explicit))`.
    pub zk_listen: Option<(SocketAddr, bool)>,
    /// `None`: no admin listener; `Some((addr, explicit))`.
    pub admin_listen: Option<(SocketAddr, bool)>,
    pub raft: RaftOptions,
    /// `None`: in memory only.
    pub data_dir: Option<PathBuf>,
    pub config: Config,
    pub ensemble: Option<Ensemble>,
    /// `--dev-ensemble N`: run N local members as child processes.
    pub dev_ensemble: Option<u16>,
}

pub struct Ensemble {
    pub id: u64,
    pub name: String,
    pub members: BTreeMap<u64, String>,
    pub peer_listen: String,
    pub routes: BTreeMap<u64, String>,
}

pub fn parse_args() -> Result<Args, String> {
    let mut listen = SocketAddr::from(([127, 0, 0, 1], 7181));
    let mut zk_listen = Some((ward_server::zk::DEFAULT_ADDR, false));
    let mut admin_listen = Some((ward_server::admin::DEFAULT_ADDR, false));
    let mut config = Config::default();
    let mut data_dir = Some(PathBuf::from("ward-data"));
    let mut explicit_dir = false;
    let mut raft = RaftOptions::default();
    let (mut members, mut id, mut peer_listen, mut name) = (None, None, None, String::from("ward"));
    let mut routes = BTreeMap::new();
    let mut dev_ensemble = None;
    let mut join = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--listen" => listen = value()?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--zk-listen" => {
                zk_listen = match value()?.as_str() {
                    "off" => None,
                    addr => Some((addr.parse().map_err(|e| format!("--zk-listen: {e}"))?, true)),
                }
            }
            "--admin-listen" => {
                admin_listen = match value()?.as_str() {
                    "off" => None,
                    addr => Some((addr.parse().map_err(|e| format!("--admin-listen: {e}"))?, true)),
                }
            }
            "--data-dir" => {
                data_dir = Some(PathBuf::from(value()?));
                explicit_dir = true;
            }
            "--in-memory" => data_dir = None,
            "--segment-mb" => {
                let mb: u64 = value()?.parse().map_err(|e| format!("--segment-mb: {e}"))?;
                if mb == 0 {
                    return Err("--segment-mb must be at least 1".into());
                }
                raft.segment_bytes = mb << 20;
            }
            "--snapshot-every" => {
                let n: u64 = value()?.parse().map_err(|e| format!("--snapshot-every: {e}"))?;
                if n == 0 {
                    return Err("--snapshot-every must be at least 1".into());
                }
                raft.snapshot_every = n;
                raft.keep_after_snapshot = raft.keep_after_snapshot.min(n);
            }
            "--min-session-timeout-ms" => config.min_session_timeout = millis(&value()?)?,
            "--max-session-timeout-ms" => config.max_session_timeout = millis(&value()?)?,
            "--ensemble" => members = Some(parse_members(&value()?)?),
            "--id" => id = Some(value()?.parse::<u64>().map_err(|e| format!("--id: {e}"))?),
            "--peer-listen" => peer_listen = Some(value()?),
            "--ensemble-name" => name = value()?,
            "--join" => join = true,
            "--peer-route" => {
                routes.extend(parse_members(&value()?).map_err(|e| e.replace("--ensemble", "--peer-route"))?)
            }
            "--dev-ensemble" => {
                let n: u16 = value()?.parse().map_err(|e| format!("--dev-ensemble: {e}"))?;
                if !(1..=9).contains(&n) {
                    return Err("--dev-ensemble takes 1 to 9 members".into());
                }
                dev_ensemble = Some(n);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let ensemble = match (members, id) {
        (None, None) if peer_listen.is_none() && routes.is_empty() && !join => None,
        (None, Some(id)) if join => {
            let Some(peer_listen) = peer_listen else {
                return Err("--join needs --peer-listen (where the ensemble will reach this member)".into());
            };
            if data_dir.is_none() {
                return Err("--in-memory cannot be a member of an ensemble: a member's log must be durable".into());
            }
            Some(Ensemble { id, name, members: BTreeMap::new(), peer_listen, routes })
        }
        (None, _) => return Err("--id and --peer-listen need --ensemble (or --join)".into()),
        (Some(_), _) if join => return Err("--join is for a member added later: leave out --ensemble".into()),
        (Some(_), None) => return Err("--ensemble needs --id (this member's id in the list)".into()),
        (Some(members), Some(id)) => {
            let Some(own) = members.get(&id) else {
                return Err(format!("--id {id} is not in --ensemble ({:?})", members.keys().collect::<Vec<_>>()));
            };
            if data_dir.is_none() {
                return Err("--in-memory cannot be a member of an ensemble: a member's log must be durable".into());
            }
            let peer_listen = peer_listen.unwrap_or_else(|| own.clone());
            Some(Ensemble { id, name, members, peer_listen, routes })
        }
    };
    if dev_ensemble.is_some() && ensemble.is_some() {
        return Err("--dev-ensemble starts its own members: leave out --ensemble, --id and --peer-*".into());
    }
    if dev_ensemble.is_some() && data_dir.is_none() {
        return Err("--dev-ensemble members are durable: leave out --in-memory".into());
    }
    Ok(Args {
        listen,
        zk_listen,
        admin_listen,
        raft,
        data_dir: match dev_ensemble {
            Some(_) if !explicit_dir => Some("ward-dev".into()),
            _ => data_dir,
        },
        config,
        ensemble,
        dev_ensemble,
    })
}

/// `1=host:port,2=host:port,...`: ids are unique and positive.
fn parse_members(list: &str) -> Result<BTreeMap<u64, String>, String> {
    let mut members = BTreeMap::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((id, addr)) = item.split_once('=') else {
            return Err(format!("--ensemble: {item:?} is not ID=ADDR"));
        };
        let id: u64 = id.trim().parse().map_err(|e| format!("--ensemble: member id {id:?}: {e}"))?;
        if id == 0 {
            return Err("--ensemble: member ids start at 1".into());
        }
        if members.insert(id, addr.trim().to_string()).is_some() {
            return Err(format!("--ensemble: member {id} is listed twice"));
        }
    }
    if members.is_empty() {
        return Err("--ensemble: no members".into());
    }
    Ok(members)
}

fn millis(s: &str) -> Result<Duration, String> {
    s.parse().map(Duration::from_millis).map_err(|e| format!("{s:?}: {e}"))
}
