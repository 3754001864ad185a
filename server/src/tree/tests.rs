//! The tree's layout (slab, index, child lists) seen through its operations: lookups, order,
//! undo, copies and the snapshot form.

use super::journal::Journal;
use super::ops::Ctx;
use super::DataTree;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use std::collections::{BTreeSet, HashMap};
use ward_proto::{CreateMode, ErrorCode, SessionId, Zxid};

/// A node record as snapshots wrote it before the tree's layout changed: its fields with
/// the derive they had. The snapshot form must not change (docs/storage.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Before {
    pub data: Vec<u8>,
    pub czxid: Zxid,
    pub mzxid: Zxid,
    pub pzxid: Zxid,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub(crate) child_creates: i32,
    pub ephemeral_owner: Option<SessionId>,
    pub children: BTreeSet<String>,
}

/// A tree and the zxid of its last change.
struct T {
    tree: DataTree,
    zxid: Zxid,
}

impl T {
    fn new() -> T {
        T { tree: DataTree::default(), zxid: 0 }
    }

    fn run<R>(&mut self, journal: &mut Journal, op: impl FnOnce(&mut DataTree, &mut Ctx<'_>) -> R) -> R {
        self.zxid += 1;
        let mut changes = Vec::new();
        let mut ctx = Ctx { zxid: self.zxid, time_ms: self.zxid as i64, changes: &mut changes, journal };
        op(&mut self.tree, &mut ctx)
    }

    fn create(&mut self, path: &str) -> Result<String, ErrorCode> {
        let data = path.as_bytes().to_vec();
        let create = |t: &mut DataTree, c: &mut Ctx<'_>| {
            t.create(c, path, data, CreateMode::Persistent, SessionId(0), crate::acl::table::OPEN)
        };
        self.run(&mut Journal::off(), create).map(|(path, _)| path)
    }

    fn delete(&mut self, path: &str) -> Result<(), ErrorCode> {
        self.run(&mut Journal::off(), |t, c| t.delete(c, path, None))
    }

    fn bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(&self.tree).expect("encode")
    }
}

/// A small deterministic generator: the tests need names in no order, not randomness.
pub(super) fn scrambled(n: usize, seed: u64) -> Vec<String> {
    let mut x = seed;
    (0..n)
        .map(|i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            format!("{:x}-{i}", x >> 40)
        })
        .collect()
}

#[test]
fn paths_are_found_through_every_level() {
    let mut t = T::new();
    for path in ["/a", "/a/b", "/a/b/c", "/a/bc", "/ab", "/b", "/b/c"] {
        t.create(path).expect("create");
    }
    for path in ["/", "/a", "/a/b", "/a/b/c", "/a/bc", "/ab", "/b/c"] {
        let node = t.tree.get(path).expect(path);
        assert_eq!(node.data(), if path == "/" { &b""[..] } else { path.as_bytes() }, "{path}");
    }
    for missing in ["/a/c", "/a/b/c/d", "/c", "", "a", "/a/", "//", "/a//b", "/b/b"] {
        assert!(t.tree.get(missing).is_none(), "{missing:?}");
    }
    assert_eq!(t.tree.get("/a").map(|n| n.children.iter().collect::<Vec<_>>()), Some(vec!["b", "bc"]));
    assert_eq!(t.create("/a/b"), Err(ErrorCode::NodeExists));
    assert_eq!(t.create("/x/y"), Err(ErrorCode::NoNode));
    assert_eq!(t.delete("/a/b"), Err(ErrorCode::NotEmpty));
    assert_eq!(t.tree.len(), 8);
}

#[test]
fn children_stay_in_name_order_through_creates_and_deletes_in_any_order() {
    let mut t = T::new();
    t.create("/d").expect("create");
    let names = scrambled(3_000, 11);
    let mut expected = BTreeSet::new();
    for (i, name) in names.iter().enumerate() {
        t.create(&format!("/d/{name}")).expect("create");
        expected.insert(name.clone());
        if i % 4 == 3 {
            let gone = &names[i / 2];
            if expected.remove(gone) {
                t.delete(&format!("/d/{gone}")).expect("delete");
            }
        }
    }
    let dir = t.tree.get("/d").expect("dir");
    assert!(dir.children.iter().eq(expected.iter().map(String::as_str)));
    assert_eq!((dir.children.len(), dir.stat(0).num_children as usize), (expected.len(), expected.len()));
    let mid = expected.iter().nth(expected.len() / 2).expect("one");
    assert_eq!(dir.children.first_from(mid), Some(mid.as_str()));
    assert!(dir
        .children
        .iter_after(Some(mid))
        .eq(expected.range::<String, _>((std::ops::Bound::Excluded(mid), std::ops::Bound::Unbounded))));
    for name in &expected {
        assert!(t.tree.get(&format!("/d/{name}")).is_some(), "{name}");
    }
}

/// A multi that fails puts the tree back as it was, byte for byte.
#[test]
fn a_failed_multi_is_undone_exactly() {
    let mut t = T::new();
    for path in ["/a", "/a/b", "/a/c", "/q"] {
        t.create(path).expect("create");
    }
    let before = t.bytes();
    let mut journal = Journal::on();
    let acl = t.tree.intern_acl(&[]);
    t.run(&mut journal, |tree, c| {
        tree.create(c, "/a/new", b"x".to_vec(), CreateMode::PersistentSequential, SessionId(0), acl).expect("create");
        tree.set_data(c, "/a", b"changed".to_vec(), None).expect("set");
        tree.null_data("/a");
        tree.delete(c, "/a/c", None).expect("delete");
        tree.delete(c, "/q", None).expect("delete");
        tree.create(c, "/q", Vec::new(), CreateMode::Ephemeral, SessionId(9), acl).expect("create again");
        tree.set_acl(c, "/a/b", &[], None).expect("set acl");
        tree.set_data(c, "/a/b", b"again".to_vec(), Some(0)).expect("set");
    });
    assert_ne!(t.bytes(), before);
    journal.rollback(&mut t.tree);
    t.tree.collect_acls();
    assert_eq!(t.bytes(), before);
    assert!(t.tree.acl_assignments().is_empty() && t.tree.ephemerals(SessionId(9)).next().is_none());
    assert_eq!(t.tree.get("/a").map(|n| (n.cversion, n.child_creates)), Some((2, 2)));
}

/// A copy is a snapshot: later writes to the tree do not reach it, and they copy only the
/// pieces (slab chunks, index shards) they change.
#[test]
fn a_copy_keeps_the_state_it_was_taken_at() {
    let mut t = T::new();
    t.create("/d").expect("create");
    for i in 0..5_000 {
        t.create(&format!("/d/n{i}")).expect("create");
    }
    let (copy, before) = (t.tree.clone(), t.bytes());
    let pieces = copy.shared_shards(&t.tree);
    assert_eq!(pieces, t.tree.shared_shards(&t.tree));
    t.run(&mut Journal::off(), |tree, c| tree.set_data(c, "/d/n7", b"new".to_vec(), None)).expect("set");
    t.delete("/d/n8").expect("delete");
    t.create("/d/after").expect("create");
    assert_eq!(postcard::to_allocvec(&copy).expect("encode"), before);
    assert_eq!(copy.get("/d/n7").map(|n| n.data()), Some(&b"/d/n7"[..]));
    assert!(copy.get("/d/n8").is_some() && copy.get("/d/after").is_none());
    let shared = t.tree.shared_shards(&copy);
    assert!(shared < pieces && shared + 10 >= pieces, "{shared} of {pieces} still shared");
}

/// The old snapshot form, a map of paths to node records, from `tree` (in its walk order).
fn old_form(tree: &DataTree) -> Vec<(String, Before)> {
    let mut out = Vec::new();
    tree.nodes.each(|path, n| {
        out.push((
            path.to_string(),
            Before {
                data: n.data().to_vec(),
                czxid: n.czxid,
                mzxid: n.mzxid,
                pzxid: n.pzxid,
                ctime: n.ctime,
                mtime: n.mtime,
                version: n.version,
                cversion: n.cversion,
                child_creates: n.child_creates,
                ephemeral_owner: n.ephemeral_owner(),
                children: n.children.iter().map(String::from).collect(),
            },
        ));
    });
    out
}

/// Entries written as a map, in their order, as the old tree's `HashMap` wrote them.
struct AsMap<'a>(&'a [(String, Before)]);

impl Serialize for AsMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (path, node) in self.0 {
            map.serialize_entry(path, node)?;
        }
        map.end()
    }
}

/// The tree's part of a snapshot, as the old tree wrote it: its node map and ephemerals.
#[derive(Serialize, Deserialize)]
struct OldTree<N> {
    nodes: N,
    ephemerals: HashMap<SessionId, BTreeSet<String>>,
}

#[test]
fn snapshots_are_the_old_map_of_paths_byte_for_byte() {
    let mut t = T::new();
    for path in ["/a", "/a/b", "/a-b", "/a/b/c", "/z", "/a/a"] {
        t.create(path).expect("create");
    }
    for name in scrambled(200, 3) {
        t.create(&format!("/z/{name}")).expect("create");
    }
    t.run(&mut Journal::off(), |tree, c| tree.set_data(c, "/a/b", b"set".to_vec(), None)).expect("set");
    let ours = t.bytes();
    let entries = old_form(&t.tree);
    let old = OldTree { nodes: AsMap(&entries), ephemerals: HashMap::new() };
    assert_eq!(ours, postcard::to_allocvec(&old).expect("encode"), "the same bytes in the same order");

    // An old snapshot lists nodes in any order (a hash map's): children before parents.
    let plain: HashMap<String, Before> = entries.iter().cloned().collect();
    let read: DataTree = postcard::from_bytes(
        &postcard::to_allocvec(&OldTree { nodes: &plain, ephemerals: HashMap::new() }).expect("encode"),
    )
    .expect("decode");
    assert_eq!(postcard::to_allocvec(&read).expect("encode"), ours);
    let back: OldTree<HashMap<String, Before>> = postcard::from_bytes(&ours).expect("an older server reads it");
    assert_eq!(back.nodes, plain);
}

#[test]
fn a_snapshot_with_a_node_but_not_its_parent_or_a_path_twice_is_refused() {
    let mut t = T::new();
    t.create("/x").expect("create");
    let mut entries = old_form(&t.tree);
    entries.push(entries[1].clone());
    let twice = OldTree { nodes: AsMap(&entries), ephemerals: HashMap::new() };
    assert!(postcard::from_bytes::<DataTree>(&postcard::to_allocvec(&twice).expect("encode")).is_err());
    entries[1].0 = "/x/y".into();
    entries.truncate(2);
    let orphan = OldTree { nodes: AsMap(&entries), ephemerals: HashMap::new() };
    assert!(postcard::from_bytes::<DataTree>(&postcard::to_allocvec(&orphan).expect("encode")).is_err());
}

/// `mntr`'s `zk_approximate_data_size` (docs/zookeeper-compat.md, "Four-letter words"): each
/// node's path and data lengths, as ZooKeeper sums them, kept through creates, sets,
/// deletes and a rolled-back multi, and the same for a tree read back from its snapshot.
#[test]
fn the_approximate_data_size_is_every_paths_and_datas_length() {
    let mut t = T::new();
    assert_eq!(t.tree.approximate_data_size(), 0, "an empty root");
    // `T::create` writes the path as the node's data: each node counts its path twice.
    t.create("/a").expect("create");
    t.create("/a/bb").expect("create");
    assert_eq!(t.tree.approximate_data_size(), 2 * 2 + 2 * 5);
    t.run(&mut Journal::off(), |tree, c| tree.set_data(c, "/a", b"12345678".to_vec(), None)).expect("set");
    assert_eq!(t.tree.approximate_data_size(), (2 + 8) + 2 * 5);
    let before = t.tree.approximate_data_size();
    let mut journal = Journal::on();
    let acl = t.tree.intern_acl(&[]);
    t.run(&mut journal, |tree, c| {
        tree.create(c, "/c", b"xyz".to_vec(), CreateMode::Persistent, SessionId(0), acl).expect("create");
        tree.set_data(c, "/a/bb", Vec::new(), None).expect("set");
        tree.delete(c, "/a/bb", None).expect("delete");
    });
    assert_eq!(t.tree.approximate_data_size(), (2 + 8) + (2 + 3));
    journal.rollback(&mut t.tree);
    assert_eq!(t.tree.approximate_data_size(), before, "after the rollback");
    let read: DataTree = postcard::from_bytes(&t.bytes()).expect("decode");
    assert_eq!(read.approximate_data_size(), before, "read back from its snapshot form");
    t.delete("/a/bb").expect("delete");
    t.delete("/a").expect("delete");
    assert_eq!(t.tree.approximate_data_size(), 0);
}
