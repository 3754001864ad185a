//! One node of the tree and its bookkeeping.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use ward_proto::{SessionId, Stat, Zxid};

/// A znode. `data_length` and `num_children` are derived when a [`Stat`] is made, so they
/// can never disagree with the node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Znode {
    pub data: Vec<u8>,
    pub czxid: Zxid,
    pub mzxid: Zxid,
    pub pzxid: Zxid,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    /// Children ever created: the next sequential suffix. ZooKeeper numbers sequential
    /// children by creates alone, while `cversion` counts creates and deletes.
    pub child_creates: i32,
    pub ephemeral_owner: Option<SessionId>,
    /// Children's names. A `BTreeSet` so that listings come out sorted without a sort.
    pub children: BTreeSet<String>,
}

impl Znode {
    pub fn new(data: Vec<u8>, zxid: Zxid, time_ms: i64, owner: Option<SessionId>) -> Self {
        Znode {
            data,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time_ms,
            mtime: time_ms,
            version: 0,
            cversion: 0,
            child_creates: 0,
            ephemeral_owner: owner,
            children: BTreeSet::new(),
        }
    }

    pub fn stat(&self) -> Stat {
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            pzxid: self.pzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cversion,
            aversion: 0,
            ephemeral_owner: self.ephemeral_owner,
            data_length: u32::try_from(self.data.len()).unwrap_or(u32::MAX),
            num_children: u32::try_from(self.children.len()).unwrap_or(u32::MAX),
        }
    }
}
