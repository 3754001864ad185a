//! One node of the tree and its bookkeeping.
//!
//! A node's size is paid for by every znode, inline in the tree's hash table (whose spare
//! capacity multiplies it), so the fields are kept narrow: data as a boxed slice, the owner
//! as a bare id, and children behind a pointer that is null for the leaves most nodes are.
//! The serialized form is unchanged by this (snapshots read the same).

use super::children::Children;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ward_proto::{SessionId, Stat, Zxid};

/// A znode. `data_length` and `num_children` are derived when a [`Stat`] is made, so they
/// can never disagree with the node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Znode {
    pub data: Box<[u8]>,
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
    /// The owning session of an ephemeral node, 0 for a persistent one: session ids are
    /// zxids, never 0, and this is half the size of an `Option<SessionId>`.
    #[serde(serialize_with = "owner_out", deserialize_with = "owner_in")]
    owner: u64,
    /// Children's names, sorted, so that listings come out sorted without a sort.
    pub children: Children,
}

impl Znode {
    pub fn new(data: Vec<u8>, zxid: Zxid, time_ms: i64, owner: Option<SessionId>) -> Self {
        Znode {
            data: data.into_boxed_slice(),
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time_ms,
            mtime: time_ms,
            version: 0,
            cversion: 0,
            child_creates: 0,
            owner: owner.map_or(0, |s| s.0),
            children: Children::default(),
        }
    }

    /// The session owning this node if it is ephemeral.
    pub fn ephemeral_owner(&self) -> Option<SessionId> {
        (self.owner != 0).then_some(SessionId(self.owner))
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
            ephemeral_owner: self.ephemeral_owner(),
            data_length: u32::try_from(self.data.len()).unwrap_or(u32::MAX),
            num_children: u32::try_from(self.children.len()).unwrap_or(u32::MAX),
        }
    }
}

// The owner is written as the `Option<SessionId>` it stands for, as it always was.
fn owner_out<S: Serializer>(owner: &u64, s: S) -> Result<S::Ok, S::Error> {
    (*owner != 0).then_some(SessionId(*owner)).serialize(s)
}

fn owner_in<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<SessionId>::deserialize(d)?.map_or(0, |s| s.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields as they were before the node was slimmed, with the derive they had.
    #[derive(Serialize)]
    struct Before {
        data: Vec<u8>,
        czxid: Zxid,
        mzxid: Zxid,
        pzxid: Zxid,
        ctime: i64,
        mtime: i64,
        version: i32,
        cversion: i32,
        child_creates: i32,
        ephemeral_owner: Option<SessionId>,
        children: std::collections::BTreeSet<String>,
    }

    #[test]
    fn snapshots_encode_a_node_exactly_as_before() {
        for (owner, names) in [(None, vec![]), (Some(SessionId(7)), vec![]), (None, vec!["b", "a"])] {
            let mut node = Znode::new(b"data".to_vec(), 5, 1_000, owner);
            (node.mzxid, node.pzxid, node.mtime, node.version, node.cversion, node.child_creates) =
                (6, 7, 2_000, 1, 2, 3);
            for name in &names {
                node.children.insert(name);
            }
            let before = Before {
                data: b"data".to_vec(),
                czxid: 5,
                mzxid: 6,
                pzxid: 7,
                ctime: 1_000,
                mtime: 2_000,
                version: 1,
                cversion: 2,
                child_creates: 3,
                ephemeral_owner: owner,
                children: names.iter().map(|n| n.to_string()).collect(),
            };
            let old = postcard::to_allocvec(&before).expect("encode");
            assert_eq!(postcard::to_allocvec(&node).expect("encode"), old);
            assert_eq!(postcard::from_bytes::<Znode>(&old).expect("decode"), node);
        }
    }

    #[test]
    fn a_node_stays_small() {
        // Every znode pays this inline in the tree's table; it was 120 bytes.
        assert!(std::mem::size_of::<Znode>() <= 88, "Znode is {} bytes", std::mem::size_of::<Znode>());
    }
}
