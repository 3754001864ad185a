//! One node of the tree as callers see it, and its kind.
//!
//! Nodes are stored as records (`record.rs`) in a slab (`slab.rs`); a [`Znode`] is a view
//! of one, decoded: its fields, its name, its data and its children, borrowed from the
//! tree. The serialized form is the node record snapshots always had (below).
//!
//! Data can be null, which only ZooKeeper's protocol can say (jute's buffer length -1) and
//! which ZooKeeper keeps apart from empty data: a flag in the record. In a snapshot a null
//! node is marked in the owner's tag ([`Owner`]), so nodes with data are written byte for
//! byte as before.

use super::children::Children;
use super::record::{Fields, Record};
use crate::acl::table::AclId;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ward_proto::{CreateMode, SessionId, Stat, Zxid, MAX_TTL_MS};

/// A znode, read from the tree. `data_length` and `num_children` are derived when a
/// [`Stat`] is made, so they can never disagree with the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Znode<'a> {
    name: &'a str,
    /// `None`: null data (see the module's doc). Reads through Ward's own protocol, which
    /// has no null, see it as empty.
    data: Option<&'a [u8]>,
    pub czxid: Zxid,
    pub mzxid: Zxid,
    pub pzxid: Zxid,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    /// Children ever created: the next sequential suffix. ZooKeeper numbers sequential
    /// children by creates alone, while `cversion` counts creates and deletes.
    pub(crate) child_creates: i32,
    /// What the node is ([`NodeKind`]), in ZooKeeper's encoding of `ephemeralOwner`: 0 for
    /// a persistent node, the owning session of an ephemeral one (session ids are zxids,
    /// never 0 and far below the marks), [`CONTAINER`] or [`TTL_MARK`] with the TTL. One
    /// word for all of it.
    owner: u64,
    /// Children's names, sorted, so that listings come out sorted without a sort.
    pub children: Children<'a>,
    /// The node's ACL and `aversion`: a slot of the tree's [`AclTable`](crate::acl::table::AclTable).
    /// Not in the node's snapshot record (nodes are written as before); the snapshot lists
    /// the nodes whose slot is not the open one.
    pub(crate) acl: AclId,
}

/// ZooKeeper's `ephemeralOwner` of a container.
const CONTAINER: u64 = 1 << 63;
/// ZooKeeper's mark of an "extended" node type in `ephemeralOwner`'s top byte; with the 16
/// bits below it zero, the type is TTL and the low 40 bits hold the TTL.
const TTL_MARK: u64 = 0xff << 56;
const EXTENDED_TYPE_BITS: u64 = 0xff_ff << 40;
/// Ward's own extended type 1 (ZooKeeper uses only 0, for TTL): a lock contender kept for
/// its lock-delay, with the delay in the low 40 bits.
const LOCK_DELAY_MARK: u64 = TTL_MARK | (1 << 40);

/// What kind of node a znode is, as far as its lifetime goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Persistent,
    /// Deleted when its session ends.
    Ephemeral(SessionId),
    /// Deleted by the leader's cleanup once its last child is gone.
    Container,
    /// Deleted by the leader's cleanup once childless and unchanged for this many ms.
    Ttl(u64),
    /// A lock holder's contender whose session ended without releasing it (expired, or
    /// ended by the server): it keeps its place at the head of the queue until this many ms
    /// after its `mtime`, the session's end, when the leader's lock-delay task deletes it
    /// (`crate::lock_delay`) and the next contender is granted the lock.
    LockDelay(u64),
}

impl NodeKind {
    /// The kind a create in `mode` by `session` makes.
    pub fn of(mode: CreateMode, session: SessionId) -> NodeKind {
        match mode {
            _ if mode.is_ephemeral() => NodeKind::Ephemeral(session),
            CreateMode::Container => NodeKind::Container,
            // Prep keeps the TTL within 40 bits.
            _ => mode.ttl_ms().map_or(NodeKind::Persistent, |ttl| NodeKind::Ttl(ttl & MAX_TTL_MS)),
        }
    }

    /// True for the kinds the leader's cleanup deletes.
    pub(crate) fn is_swept(self) -> bool {
        matches!(self, NodeKind::Container | NodeKind::Ttl(_))
    }

    /// True for the kind the leader's lock-delay task deletes.
    pub(crate) fn is_delayed(self) -> bool {
        matches!(self, NodeKind::LockDelay(_))
    }

    pub(super) fn encode(self) -> u64 {
        match self {
            NodeKind::Persistent => 0,
            NodeKind::Ephemeral(session) => session.0,
            NodeKind::Container => CONTAINER,
            NodeKind::Ttl(ttl) => TTL_MARK | (ttl & MAX_TTL_MS),
            NodeKind::LockDelay(delay) => LOCK_DELAY_MARK | (delay & MAX_TTL_MS),
        }
    }

    pub(super) fn decode(owner: u64) -> NodeKind {
        match owner {
            0 => NodeKind::Persistent,
            CONTAINER => NodeKind::Container,
            _ if owner & (TTL_MARK | EXTENDED_TYPE_BITS) == TTL_MARK => NodeKind::Ttl(owner & MAX_TTL_MS),
            _ if owner & (TTL_MARK | EXTENDED_TYPE_BITS) == LOCK_DELAY_MARK => NodeKind::LockDelay(owner & MAX_TTL_MS),
            _ => NodeKind::Ephemeral(SessionId(owner)),
        }
    }
}

impl<'a> Znode<'a> {
    /// The node `record`, whose children are `children`, in `slab`.
    pub(super) fn view(record: &'a Record, children: Children<'a>) -> Self {
        let f = record.fields();
        Znode {
            name: record.name(),
            data: record.data(),
            czxid: f.czxid,
            mzxid: f.mzxid,
            pzxid: f.pzxid,
            ctime: f.ctime,
            mtime: f.mtime,
            version: f.version,
            cversion: f.cversion,
            child_creates: f.child_creates,
            owner: f.owner,
            children,
            acl: f.acl,
        }
    }

    /// The last component of the node's path ("" for the root).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The node's data; null data reads as empty.
    pub fn data(&self) -> &'a [u8] {
        self.data.unwrap_or_default()
    }

    /// Whether the data is null rather than empty (ZooKeeper's protocol tells them apart).
    pub fn is_null(&self) -> bool {
        self.data.is_none()
    }

    pub fn kind(&self) -> NodeKind {
        NodeKind::decode(self.owner)
    }

    /// The session owning this node if it is ephemeral.
    pub fn ephemeral_owner(&self) -> Option<SessionId> {
        match self.kind() {
            NodeKind::Ephemeral(session) => Some(session),
            _ => None,
        }
    }

    /// The node's stat; its `aversion` is kept with its ACL (see [`crate::acl::table`]).
    pub fn stat(&self, aversion: i32) -> Stat {
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            pzxid: self.pzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cversion,
            aversion,
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

/// The owner word as stored, and whether the data is null. The first two variants are, byte
/// for byte, the `Option<SessionId>` the owner always was written as (postcard writes an
/// `Option`'s tag and a small enum's variant index as the same one byte, 0 or 1; the marks of
/// containers and TTL nodes are written as such an id too, snapshot version 4), so a node
/// with data is written as before. A node with null data has tag 2 or 3 (snapshot version 5),
/// which a server of an older version refuses rather than misreads.
#[derive(Serialize, Deserialize)]
enum Owner {
    Zero,
    Word(u64),
    NullZero,
    NullWord(u64),
}

impl Serialize for Znode<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let owner = match (self.owner, self.is_null()) {
            (0, false) => Owner::Zero,
            (word, false) => Owner::Word(word),
            (0, true) => Owner::NullZero,
            (word, true) => Owner::NullWord(word),
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

/// A node record read from a snapshot, before it has a place in the tree. Its children are
/// counted, not kept: the tree links each node to its parent as it is put in
/// (`nodes.rs`), and the count checks that the two agree.
pub(super) struct Loaded {
    pub fields: Fields,
    pub data: Box<[u8]>,
    pub children: usize,
}

impl Loaded {
    /// Its record, named `name`, under the parent `parent`.
    pub(super) fn record(&self, parent: u32, name: &str) -> Record {
        Record::new(&Fields { parent, ..self.fields }, name, &self.data)
    }
}

/// The number of names in a stored set of children, read without keeping them.
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> Visitor<'de> for Names {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a set of names")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<String>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
        }
        d.deserialize_seq(Names)
    }
}

impl<'de> Deserialize<'de> for Loaded {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = Stored::<Box<[u8]>, Count>::deserialize(d)?;
        let (owner, null) = match n.owner {
            Owner::Zero => (0, false),
            Owner::Word(word) => (word, false),
            Owner::NullZero => (0, true),
            Owner::NullWord(word) => (word, true),
        };
        let fields = Fields {
            mzxid: n.mzxid,
            pzxid: n.pzxid,
            mtime: n.mtime,
            version: n.version,
            cversion: n.cversion,
            child_creates: n.child_creates,
            owner,
            null,
            ..Fields::new(0, n.czxid, n.ctime)
        };
        let data = if null { Box::default() } else { n.data };
        Ok(Loaded { fields, data, children: n.children.0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::nodes::{Nodes, ROOT};

    use crate::tree::tests::Before;

    /// A tree holding `/n` with `fields` and `data`, and children named `names`.
    fn tree(fields: Fields, data: &[u8], names: &[&str]) -> Nodes {
        let mut nodes = Nodes::default();
        let id = nodes.insert(ROOT, Record::new(&fields, "n", data));
        for name in names {
            nodes.insert(id, Record::new(&Fields::new(id, 1, 1), name, b""));
        }
        nodes
    }

    fn encoded(nodes: &Nodes) -> Vec<u8> {
        postcard::to_allocvec(&nodes.get("/n").expect("node")).expect("encode")
    }

    #[test]
    fn snapshots_encode_a_node_exactly_as_before() {
        for (owner, names) in [(None, vec![]), (Some(SessionId(7)), vec![]), (None, vec!["b", "a"])] {
            let kind = owner.map_or(NodeKind::Persistent, NodeKind::Ephemeral);
            let fields = Fields {
                mzxid: 6,
                pzxid: 7,
                mtime: 2_000,
                version: 1,
                cversion: 2,
                child_creates: 3,
                owner: kind.encode(),
                ..Fields::new(ROOT, 5, 1_000)
            };
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
            assert_eq!(encoded(&tree(fields, b"data", &names)), old);
            let back = postcard::from_bytes::<Loaded>(&old).expect("decode");
            assert_eq!((back.fields, &*back.data, back.children), (fields, &b"data"[..], names.len()));
        }
    }

    /// Containers and TTL nodes carry ZooKeeper's marks in the owner word, and nothing
    /// else is mistaken for them.
    #[test]
    fn node_kinds_round_trip_through_the_owner_word() {
        let kinds = [
            NodeKind::Persistent,
            NodeKind::Ephemeral(SessionId(1)),
            NodeKind::Ephemeral(SessionId(u64::from(u32::MAX) << 16)),
            NodeKind::Container,
            NodeKind::Ttl(1),
            NodeKind::Ttl(MAX_TTL_MS),
            NodeKind::LockDelay(0),
            NodeKind::LockDelay(MAX_TTL_MS),
        ];
        for kind in kinds {
            let nodes = tree(Fields { owner: kind.encode(), ..Fields::new(ROOT, 1, 1) }, b"", &[]);
            let node = nodes.get("/n").expect("node");
            assert_eq!(node.kind(), kind);
            let back = postcard::from_bytes::<Loaded>(&encoded(&nodes)).expect("decode");
            assert_eq!(NodeKind::decode(back.fields.owner), kind);
            assert_eq!(node.ephemeral_owner().is_some(), matches!(kind, NodeKind::Ephemeral(_)));
        }
        assert_eq!(NodeKind::Container.encode(), 0x8000_0000_0000_0000, "ZooKeeper's container mark");
        assert_eq!(NodeKind::Ttl(100).encode(), 0xff00_0000_0000_0064, "ZooKeeper's TTL encoding");
        assert_eq!(NodeKind::LockDelay(100).encode(), 0xff00_0100_0000_0064, "an extended type of Ward's own");
    }

    #[test]
    fn null_data_round_trips_and_older_servers_refuse_it() {
        for kind in [NodeKind::Persistent, NodeKind::Ephemeral(SessionId(7)), NodeKind::Container, NodeKind::Ttl(9)] {
            let fields = Fields { owner: kind.encode(), null: true, ..Fields::new(ROOT, 5, 1_000) };
            let nodes = tree(fields, b"", &[]);
            let node = nodes.get("/n").expect("node");
            assert!(node.is_null() && node.data().is_empty());
            let bytes = encoded(&nodes);
            let back = postcard::from_bytes::<Loaded>(&bytes).expect("decode");
            assert_eq!(back.fields, fields);
            // A server from before null data reads the owner as an `Option`: tag 2 or 3 is an
            // error there, not a node with empty data.
            assert!(postcard::from_bytes::<Before>(&bytes).is_err());
        }
        let empty = tree(Fields::new(ROOT, 5, 1_000), b"", &[]);
        assert!(!postcard::from_bytes::<Loaded>(&encoded(&empty)).expect("decode").fields.null);
    }
}
