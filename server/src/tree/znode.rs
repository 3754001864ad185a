//! One node of the tree and its bookkeeping.
//!
//! A node's size is paid for by every znode, inline in the tree's hash table (whose spare
//! capacity multiplies it), so the fields are kept narrow: data as a boxed slice, the owner
//! as a bare id, and children behind a pointer that is null for the leaves most nodes are.
//! The serialized form is unchanged by this (snapshots read the same).
//!
//! Data can be null, which only ZooKeeper's protocol can say (jute's buffer length -1) and
//! which ZooKeeper keeps apart from empty data. That costs no byte either: `None` is the
//! boxed slice's null pointer. In a snapshot a null node is marked in the owner's tag
//! ([`Owner`]), so nodes with data are written byte for byte as before.

use super::children::Children;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ward_proto::{SessionId, Stat, Zxid};

/// A znode. `data_length` and `num_children` are derived when a [`Stat`] is made, so they
/// can never disagree with the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Znode {
    /// `None`: null data (see the module's doc). Reads through Ward's own protocol, which
    /// has no null, see it as empty.
    pub(super) data: Option<Box<[u8]>>,
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
    owner: u64,
    /// Children's names, sorted, so that listings come out sorted without a sort.
    pub children: Children,
}

impl Znode {
    pub fn new(data: Vec<u8>, zxid: Zxid, time_ms: i64, owner: Option<SessionId>) -> Self {
        Znode {
            data: Some(data.into_boxed_slice()),
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

    /// The node's data; null data reads as empty.
    pub fn data(&self) -> &[u8] {
        self.data.as_deref().unwrap_or_default()
    }

    /// Whether the data is null rather than empty (ZooKeeper's protocol tells them apart).
    pub fn is_null(&self) -> bool {
        self.data.is_none()
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
            data_length: u32::try_from(self.data().len()).unwrap_or(u32::MAX),
            num_children: u32::try_from(self.children.len()).unwrap_or(u32::MAX),
        }
    }
}

/// A node as a snapshot stores it: its fields in their order, `D` and `C` being the data
/// and the children owned (read) or borrowed (written).
#[derive(Serialize, Deserialize)]
struct Stored<D, C> {
    data: D,
    czxid: Zxid,
    mzxid: Zxid,
    pzxid: Zxid,
    ctime: i64,
    mtime: i64,
    version: i32,
    cversion: i32,
    child_creates: i32,
    owner: Owner,
    children: C,
}

/// The owner as stored, and whether the data is null. The first two variants are, byte for
/// byte, the `Option<SessionId>` the owner always was (postcard writes an `Option`'s tag and
/// a small enum's variant index as the same one byte, 0 or 1), so a snapshot without null
/// data is unchanged; one with null data has tags an older server refuses to read rather
/// than misreads.
#[derive(Serialize, Deserialize)]
enum Owner {
    Persistent,
    Ephemeral(SessionId),
    PersistentNull,
    EphemeralNull(SessionId),
}

impl Serialize for Znode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let owner = match (self.ephemeral_owner(), self.is_null()) {
            (None, false) => Owner::Persistent,
            (Some(id), false) => Owner::Ephemeral(id),
            (None, true) => Owner::PersistentNull,
            (Some(id), true) => Owner::EphemeralNull(id),
        };
        Stored {
            data: self.data(),
            czxid: self.czxid,
            mzxid: self.mzxid,
            pzxid: self.pzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cversion,
            child_creates: self.child_creates,
            owner,
            children: &self.children,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Znode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = Stored::<Box<[u8]>, Children>::deserialize(d)?;
        let (owner, null) = match n.owner {
            Owner::Persistent => (0, false),
            Owner::Ephemeral(id) => (id.0, false),
            Owner::PersistentNull => (0, true),
            Owner::EphemeralNull(id) => (id.0, true),
        };
        Ok(Znode {
            data: (!null).then_some(n.data),
            czxid: n.czxid,
            mzxid: n.mzxid,
            pzxid: n.pzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            version: n.version,
            cversion: n.cversion,
            child_creates: n.child_creates,
            owner,
            children: n.children,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields as they were before the node was slimmed, with the derive they had.
    #[derive(Serialize, Deserialize)]
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
    fn null_data_round_trips_and_older_servers_refuse_it() {
        for owner in [None, Some(SessionId(7))] {
            let mut node = Znode::new(Vec::new(), 5, 1_000, owner);
            node.data = None;
            let bytes = postcard::to_allocvec(&node).expect("encode");
            let back = postcard::from_bytes::<Znode>(&bytes).expect("decode");
            assert!(back.is_null() && back.data().is_empty());
            assert_eq!(back, node);
            // A server from before null data reads the owner as an `Option`: tag 2 or 3 is an
            // error there, not a node with empty data.
            assert!(postcard::from_bytes::<Before>(&bytes).is_err());
        }
        let empty = Znode::new(Vec::new(), 5, 1_000, None);
        assert!(!postcard::from_bytes::<Znode>(&postcard::to_allocvec(&empty).expect("encode"))
            .expect("decode")
            .is_null());
    }

    #[test]
    fn a_node_stays_small() {
        // Every znode pays this inline in the tree's table; it was 120 bytes.
        assert!(std::mem::size_of::<Znode>() <= 88, "Znode is {} bytes", std::mem::size_of::<Znode>());
    }
}
