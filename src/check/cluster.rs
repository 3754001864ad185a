//! The servers of a run: a local ensemble `ward check` started (and may fault), or servers
//! someone else runs.

use super::shared::SETTLE;
use super::{CheckError, Config, Target};
use std::net::SocketAddr;
use ward_procs::{Ensemble, EnsembleOptions};

/// The environment variable that lets a server break a promise on purpose
/// (`ward_server::unsafe_break`): passed on to the members when `ward check` has it, since
/// the harness passes none of its own `WARD_*` variables on.
const ALLOW_UNSAFE_BREAK: &str = "WARD_ALLOW_UNSAFE_BREAK";

pub enum Cluster {
    Local(Box<Ensemble>),
    /// Client addresses, and the admin listeners when given (for the convergence checker).
    Remote {
        addrs: String,
        admin: Vec<SocketAddr>,
    },
}

impl Cluster {
    pub async fn start(config: &Config) -> Result<Cluster, CheckError> {
        match &config.target {
            Target::Servers { addrs, admin } => Ok(Cluster::Remote { addrs: addrs.clone(), admin: admin.clone() }),
            Target::Ensemble { members, server_binary } => {
                let envs = std::env::var(ALLOW_UNSAFE_BREAK)
                    .map(|value| vec![(ALLOW_UNSAFE_BREAK.to_owned(), value)])
                    .unwrap_or_default();
                let options = EnsembleOptions {
                    members: *members,
                    flags: config.server_args.clone(),
                    seed: config.seed,
                    binary: Some(server_binary.clone()),
                    envs,
                    log_dir: Some(config.out.clone()),
                };
                let ensemble = Ensemble::launch(&options).await?;
                ensemble.try_leader(&[], SETTLE).await?;
                Ok(Cluster::Local(Box::new(ensemble)))
            }
        }
    }

    pub fn connect_string(&self) -> String {
        match self {
            Cluster::Local(ensemble) => ensemble.connect_string(),
            Cluster::Remote { addrs, .. } => addrs.clone(),
        }
    }

    /// Each member's client address.
    pub fn member_addrs(&self) -> Vec<String> {
        match self {
            Cluster::Local(ensemble) => ensemble.ids().into_iter().map(|id| ensemble.addr(id)).collect(),
            Cluster::Remote { addrs, .. } => {
                addrs.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect()
            }
        }
    }

    /// Each member's admin listener, named by its client address; empty when not known.
    pub fn admin_addrs(&self) -> Vec<(String, SocketAddr)> {
        match self {
            Cluster::Local(ensemble) => {
                ensemble.ids().into_iter().map(|id| (ensemble.addr(id), ensemble.admin_addr(id))).collect()
            }
            Cluster::Remote { admin, .. } => admin.iter().map(|a| (a.to_string(), *a)).collect(),
        }
    }
}
