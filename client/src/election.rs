//! Leader election on the lock: the holder of the election's lock is the leader.
//!
//! Candidates [`campaign`](Election::campaign) (queue for the lock with their data in the
//! contender node) and get a [`Leadership`] once they lead; observers read
//! [`leader`](Election::leader) or follow changes with an [`Observer`], which watches only
//! the current leader's node, so a crowd of observers adds no herd to contender churn.

use crate::client::Client;
use crate::error::{Error, Result};
use crate::lock::{holder_of, LockGuard, Validity};
use ward_proto::{Acl, LockKind};

/// An election: a lock directory whose holder leads.
#[derive(Clone, Debug)]
pub struct Election {
    client: Client,
    dir: String,
    /// What the directory gets if a campaign creates it (`None`: open to all).
    acl: Option<Vec<Acl>>,
}

/// The current leader as observers see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leader {
    /// The leader's contender node.
    pub path: String,
    /// What the leader campaigned with.
    pub data: Vec<u8>,
    /// The leader's fencing token.
    pub token: u64,
}

/// Being the leader. Dropping it resigns.
#[must_use = "dropping the leadership resigns"]
#[derive(Debug)]
pub struct Leadership {
    guard: LockGuard,
}

impl Leadership {
    /// Completes when this leadership can no longer be trusted (see [`LockGuard::lost`]).
    pub async fn lost(&self) {
        self.guard.lost().await
    }

    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    pub(crate) fn validity(&self) -> &Validity {
        self.guard.validity()
    }

    pub fn fencing_token(&self) -> u64 {
        self.guard.fencing_token()
    }

    pub fn path(&self) -> &str {
        self.guard.path()
    }

    /// Steps down and waits until the next candidate can take over.
    pub async fn resign(self) -> Result<()> {
        self.guard.unlock().await
    }
}

impl Client {
    /// The election whose candidates queue in `dir`.
    pub fn election(&self, dir: &str) -> Election {
        Election { client: self.clone(), dir: dir.to_string(), acl: None }
    }
}

impl Election {
    /// The ACL the election's directory gets if a campaign creates it: who may campaign
    /// (CREATE), resign (DELETE) and see the leader (READ). An existing directory keeps
    /// its own.
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Election {
        self.acl = Some(acl);
        self
    }

    /// Waits until this candidate leads. `data` is what observers see as the leader's.
    pub async fn campaign(&self, data: &[u8]) -> Result<Leadership> {
        let (dirs, acl) = ([self.dir.as_str()], self.acl.as_deref());
        Ok(Leadership { guard: self.client.acquire_with_acl(&dirs, LockKind::Exclusive, data, acl).await? })
    }

    /// The current leader, if any.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        loop {
            let children = match self.client.get_children(&self.dir).await {
                Ok(children) => children,
                Err(Error::NoNode) => return Ok(None),
                Err(e) => return Err(e),
            };
            let Some(path) = holder_of(&self.dir, &children) else { return Ok(None) };
            match self.client.get_data(&path).await {
                Ok((data, stat)) => return Ok(Some(Leader { path, data, token: stat.mzxid })),
                // It resigned between the two reads: look again.
                Err(Error::NoNode) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Follows leader changes.
    pub fn observe(&self) -> Observer {
        Observer { election: self.clone(), reported: None }
    }
}

/// Reports each change of leader (including "no leader").
#[derive(Debug)]
pub struct Observer {
    election: Election,
    /// The leader path last reported; `None` before the first report.
    reported: Option<Option<String>>,
}

impl Observer {
    /// The first call returns the current leader; later calls wait until it changes.
    pub async fn next(&mut self) -> Result<Option<Leader>> {
        let client = &self.election.client;
        let dir = &self.election.dir;
        loop {
            let leader = self.election.leader().await?;
            let path = leader.as_ref().map(|l| l.path.clone());
            if self.reported.as_ref() != Some(&path) {
                self.reported = Some(path);
                return Ok(leader);
            }
            let watch = match &path {
                Some(path) => match client.exists_watch(path).await? {
                    (Some(_), watch) => watch,
                    (None, _) => continue,
                },
                None => match client.get_children_watch(dir).await {
                    Ok((children, watch)) if holder_of(dir, &children).is_none() => watch,
                    Ok(_) => continue,
                    Err(Error::NoNode) => match client.exists_watch(dir).await? {
                        (None, watch) => watch,
                        (Some(_), _) => continue,
                    },
                    Err(e) => return Err(e),
                },
            };
            watch.await?;
        }
    }
}
